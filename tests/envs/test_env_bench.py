"""scripts/bench_env.py end to end on a tiny setting: every layout gets a row beside its
ceiling, rows append to the results list, and the ceiling really is physics only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from flashsac_bench.envs.g1.cpu.shards import InlineShards
from lab.bench import env_bench as eb

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_env.py"


def _bench_env(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True)


@pytest.mark.slow
def test_rows_with_ceilings_are_written_and_appended(tmp_path: Path) -> None:
    out = tmp_path / "env.json"
    argv = ["--num-envs", "4", "--threads", "2", "--workers", "2", "--ceiling"]
    argv += ["--steps", "5", "--warmup", "2", "--repeats", "1", "--results", str(out)]
    first = _bench_env(argv)
    assert first.returncode == 0, first.stderr
    rows = json.loads(out.read_text())
    assert [(r["mode"], r["workers"], r["threads"]) for r in rows] == [
        ("threads", 0, 2),
        ("processes", 2, 1),
    ]
    for r in rows:
        assert r["num_envs"] == 4 and r["env_steps_per_s"] > 0 and r["ceiling_env_steps_per_s"] > 0
        assert r["command"].startswith("python scripts/bench_env.py --num-envs 4")
        assert r["date"] and "commit" in r
        # the wait for the slowest worker, from the workers' own clocks (none in-process)
        for key in ("straggler_ms_median", "ceiling_straggler_ms_median"):
            assert (r[key] is None) == (r["mode"] == "threads") and (r[key] or 0) >= 0
    second = _bench_env(argv)
    assert second.returncode == 0  # appends
    assert len(json.loads(out.read_text())) == 4
    assert "of ceil" in first.stdout + second.stdout


def test_the_ceiling_steps_the_physics_and_restarts_it_periodically() -> None:
    shards = InlineShards(eb.CeilingFactory(eb.TaskConfig(), 1), eb.CEILING_SPEC, 2)
    try:
        shard = shards.shard
        start = shard.physics.get_state().copy()
        shards.arrays["actions"][:] = 0.5
        shards.call("step")
        moved = shard.physics.get_state()
        assert not np.array_equal(moved, start)  # it simulates
        for _ in range(eb.CEILING_PERIOD - 1):
            shards.call("step")
        shards.call("step")  # the step after a period starts from the start pose again
        time_after_restart = shard.physics.datas[0].time
        assert np.isclose(time_after_restart, 3 * shard.physics.model.opt.timestep)
    finally:
        shards.close()
