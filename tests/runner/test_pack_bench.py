"""bench.pack_bench / scripts/bench_pack.py: the packing it times is the real pack_tick's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from flashsac_bench.bench import pack_bench
from flashsac_bench.learner.replay import RowLayout
from flashsac_bench.runner.collector import Staging, pack_tick

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_pack.py"


def test_the_fixed_env_is_packed_like_any_env():
    env = pack_bench._FixedEnv(16, pack_bench.G1_DIMS)
    staging = Staging(RowLayout(*pack_bench.G1_DIMS[:3]), 16, pin=False)
    tick = pack_tick(env, staging, want_metrics=False)
    assert np.array_equal(staging.cols["next_obs"], env.out.final_obs)
    assert set(tick.reward_terms) == {f"term{i}" for i in range(9)}


def test_the_script_times_each_env_count():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--num-envs", "8", "32", "--ticks", "20"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["8", "32"]
    assert all("pack_tick median" in line for line in lines)
    r = pack_bench.time_pack(8, ticks=10, warmup=1)
    assert 0 < r["median_us"] <= r["p90_us"]
