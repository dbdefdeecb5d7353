"""scripts/bench_env.py --backend mujoco mjwarp on a tiny setting: the MuJoCo Warp row and the CPU
backend's row are written side by side with the same keys, each naming its backend, each beside
its physics ceiling."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_env.py"

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("mjwarp")]


def test_warp_rows_beside_the_cpu_backend(tmp_path: Path) -> None:
    out, full = tmp_path / "env.json", tmp_path / "all.json"
    argv = ["--backend", "mujoco", "mjwarp", "--warp-device", "cpu", "--num-envs", "4"]
    argv += ["--threads", "1", "--ceiling", "--steps", "5", "--warmup", "2", "--repeats", "1"]
    argv += ["--results", str(out), "--json", str(full)]
    run = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = json.loads(out.read_text())
    kinds = [(r["backend"], r["mode"]) for r in rows]
    assert kinds == [("mjwarp", "device"), ("mujoco", "threads")]
    assert rows[0].keys() == rows[1].keys()
    for r in rows:
        assert r["num_envs"] == 4 and r["env_steps_per_s"] > 0 and r["ceiling_env_steps_per_s"] > 0
    warp = json.loads(full.read_text())["rows"][0]
    assert warp["device"] == "cpu" and warp["step_mode"] == "warp_graph"
