"""Training with backend=mjwarp on Warp's CPU device: the smoke command writes its summary, and
a resumed run continues bit for bit (learner, replay and env state)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from flashsac_bench.cli.train import train
from flashsac_bench.runner.checkpoint import checkpoint_path, load_checkpoint, resolve_resume_path
from tests.fakes.runs import REPO, read_summary, tiny_config

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("mjwarp")]

N = 7  # learning starts at iteration 4 (4 x 8 envs rows), so iterations 4.. update
WARP = {"name": "mjwarp", "warp": {"device": "cpu"}}


def test_the_smoke_command_trains_and_writes_its_summary(tmp_path: Path) -> None:
    run_dir = tmp_path / "smoke"
    cmd = [sys.executable, "-m", "flashsac_bench", "backend=mjwarp", "hardware=cpu"]
    cmd += ["+experiment=smoke", "run.progress=plain", f"hydra.run.dir={run_dir}"]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    s = read_summary(run_dir)
    assert s["complete"] and s["iterations_done"] == 100
    tc = s["training_config"]
    assert tc["backend"] == "mjwarp" and tc["env_mode"] == "device"
    assert tc["env_step"].startswith("warp_graph") and tc["env_overlap"] == "thread"
    # the Warp build ran on its thread beside the learner's build: its wall time is recorded,
    # and what was left of it is the wait at the first reset
    assert s["setup_beside"]["env_build_s"] > s["startup"]["env_ready_s"] >= 0
    learned = [r for r in s["rows_all"] if r["critic_loss"] is not None]
    assert learned and all(np.isfinite(r["critic_loss"]) for r in learned)
    assert sum(r["episodes_done"] for r in s["rows_all"]) > 0
    # the one-line warning that Warp's CPU device is for testing
    assert "for testing only" in out.stdout + out.stderr


def _run(run_dir: Path, **cfg) -> dict:
    train(tiny_config(backend=WARP, **cfg), run_dir=run_dir)
    return read_summary(run_dir)


def test_a_resumed_mjwarp_run_continues_bit_for_bit(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", iterations=N + 1)
    _run(tmp_path / "b", iterations=N + 3, checkpoint_every=N)
    c = _run(tmp_path / "c", iterations=N + 1, resume=str(checkpoint_path(tmp_path / "b", N)))
    final_a = load_checkpoint(resolve_resume_path(tmp_path / "a"))
    final_c = load_checkpoint(resolve_resume_path(tmp_path / "c"))
    at_n = load_checkpoint(checkpoint_path(tmp_path / "b", N))
    for key, value in final_a["learner"]["tensors"].items():
        assert torch.equal(value, final_c["learner"]["tensors"][key]), key
    assert torch.equal(final_a["replay"]["storage"], final_c["replay"]["storage"])
    _assert_equal(final_a["env"], final_c["env"])
    _assert_equal(final_a["staging"], final_c["staging"])
    # iteration N changed the learner and the physics (so the comparison can fail)
    assert not torch.equal(
        at_n["learner"]["tensors"]["critic.params"], final_a["learner"]["tensors"]["critic.params"]
    )
    assert not np.array_equal(at_n["env"]["physics"]["qpos"], final_a["env"]["physics"]["qpos"])
    keys = ("critic_loss", "actor_loss", "reward_mean", "episode_return_mean")
    assert {k: c["rows_all"][N][k] for k in keys} == {k: a["rows_all"][N][k] for k in keys}
    assert c["resume_iteration"] == N


def _assert_equal(a: object, b: object, where: str = "env") -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            _assert_equal(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
    else:
        assert a == b, where


def test_a_warp_policy_is_evaluated_in_cpu_mujoco(tmp_path: Path) -> None:
    """evaluate rebuilds the env of the checkpoint's task in the reference physics: a policy
    trained on MuJoCo Warp runs its episodes in CPU MuJoCo."""
    _run(tmp_path / "run", iterations=5)
    cmd = [sys.executable, "-m", "flashsac_bench.evaluate", f"checkpoint={tmp_path / 'run'}"]
    cmd += ["episodes=2", "num_envs=2", "render=false"]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert len(report["episodes"]) == 2
    assert "Warp" not in out.stdout + out.stderr  # no Warp env was built
