"""task=gymnasium through the product: a run on a MuJoCo env of Gymnasium's suite resumes bit
for bit (also with the other vectorization: the envs compute the same numbers either way), is
evaluated (a GIF the env renders itself) and exported (the policy, its actions' mapping onto the
env's bounds); a run on an env whose state a checkpoint cannot hold is evaluated, and a resume
from it refused in one line; the command line runs the task, and refuses a backend with it."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import numpy as np
import pytest
import torch

from flashsac_bench.cli.train import train
from flashsac_bench.config import to_config
from flashsac_bench.config.hardware import HardwareConfig
from flashsac_bench.config.path import PathConfig
from flashsac_bench.runner.checkpoint import checkpoint_path, load_checkpoint, resolve_resume_path
from flashsac_bench.runner.resume import ResumeError
from tests.evaluation.test_evaluate import _evaluate, _gl_backend
from tests.fakes.runs import REPO, TINY_LEARNER, read_summary, run_cli, with_repo_on_path
from tests.runner.test_runner_resume import _assert_same_state

pytestmark = pytest.mark.usefixtures("gymnasium_extra")

N = 7  # learning starts at iteration 4 (max(4 x 4 envs, batch 16) rows)
ENV_ID = "InvertedPendulum-v5"


def gym_config(env_id: str = ENV_ID, vectorization: str = "sync", path: str = "eager", **run: Any):
    return to_config(
        {
            "path": {"name": path},
            "hardware": {"name": "cpu", "device": "cpu", "dtype": "float32", "torch_threads": 1},
            "task": {"name": "gymnasium", "env_id": env_id, "vectorization": vectorization},
            "learner": {**TINY_LEARNER, "gamma": 0.99},
            "replay": {"batch_size": 16, "replay_buffer_n": 16, "learning_starts": 4},
            "run": {"num_envs": 4, "iterations": N + 1, "progress": "plain", **run},
            "logger": {"name": "none"},
        }
    )


def _same(a: Any, b: Any) -> bool:
    """Plain values (an env state) equal, numpy arrays bit for bit."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return bool(a == b)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gym")
    train(gym_config(), run_dir=tmp / "a")  # uninterrupted
    train(gym_config(iterations=N + 2, checkpoint_every=N), run_dir=tmp / "b")
    ckpt_n = checkpoint_path(tmp / "b", N)
    # continued from b's iteration-N checkpoint, its envs in worker processes this time
    train(gym_config(vectorization="async", resume=str(ckpt_n)), run_dir=tmp / "c")
    return tmp, ckpt_n


def test_a_resumed_gymnasium_run_continues_bit_for_bit(runs):
    tmp, ckpt_n = runs
    final_a = load_checkpoint(resolve_resume_path(tmp / "a"))
    final_c = load_checkpoint(resolve_resume_path(tmp / "c"))
    _assert_same_state(final_a, final_c)
    assert _same(final_a["env"], final_c["env"])
    at_n = load_checkpoint(ckpt_n)  # iteration N changed the learner: the comparison can fail
    assert not torch.equal(
        at_n["learner"]["tensors"]["critic.params"], final_a["learner"]["tensors"]["critic.params"]
    )
    summary = read_summary(tmp / "c")
    assert summary["complete"] and summary["resume_iteration"] == N
    tc = summary["training_config"]
    assert (tc["task"], tc["env_id"], tc["backend"], tc["env_mode"]) == (
        "gymnasium",
        ENV_ID,
        None,
        "async",
    )
    assert (tc["obs_dim"], tc["critic_obs_dim"], tc["action_dim"]) == (4, 4, 1)
    assert final_a["model"]["env_id"] == ENV_ID and final_a["model"]["action_low"] == [-3.0]


def test_a_gymnasium_checkpoint_is_evaluated_with_a_gif_and_exported(runs):
    from flashsac_bench.cli.export import export_checkpoint, load_torchscript
    from flashsac_bench.evaluation.trained import load_trained_learner

    tmp, _ = runs
    gl = _gl_backend()
    args = [
        f"checkpoint={tmp / 'a'}",
        "episodes=2",
        "num_envs=2",
        f"out_dir={tmp / 'eval'}",
        "render_seconds=0.4",
        "width=48",
        "height=32",
        f"render={gl is not None}",
    ]
    proc = _evaluate(args, env=with_repo_on_path({**os.environ, "MUJOCO_GL": gl or "egl"}))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2 episodes: return" in proc.stdout and "lin-vel" not in proc.stdout
    report = json.loads((tmp / "eval" / "eval.json").read_text())
    assert report["goals"] is None and report["task"]["env_id"] == ENV_ID
    assert all(e["return"] == e["summed_reward"] for e in report["episodes"])
    if gl is not None:  # InvertedPendulum: 25 steps a second, 0.4 s of it, then the first state
        from PIL import Image

        rendered = report["render"]
        gif = Image.open(rendered["gif"])
        assert gif.size == (48, 32) and gif.n_frames == rendered["frames"] == 11
        assert np.asarray(gif.convert("RGB")).std() > 5  # a rendered scene, not a blank frame

    out = export_checkpoint(tmp / "a", tmp / "export", onnx="false")
    module, meta = load_torchscript(out["torchscript"])
    assert (meta["env_id"], meta["action_low"], meta["action_high"]) == (ENV_ID, [-3.0], [3.0])
    assert "ctrl_dt" not in meta and "joint_names" not in meta
    obs = torch.randn(5, 4)
    learner = load_trained_learner(tmp / "a").learner
    torch.testing.assert_close(module(obs), learner.act_deterministic(obs), rtol=0, atol=1e-6)


def test_a_run_on_an_env_a_checkpoint_cannot_hold_is_evaluated_but_not_resumed(tmp_path):
    from flashsac_bench.evaluation.config import EvalConfig
    from flashsac_bench.evaluation.evaluate import evaluate

    train(gym_config("Pendulum-v1", iterations=6), run_dir=tmp_path / "a")
    ckpt = resolve_resume_path(tmp_path / "a")
    with pytest.raises(
        ResumeError, match=r"cannot be continued: task\.env_id=Pendulum-v1: .*no MuJoCo env"
    ):
        train(gym_config("Pendulum-v1", iterations=8, resume=str(ckpt)), run_dir=tmp_path / "b")
    assert not (tmp_path / "b").exists()
    ec = EvalConfig(checkpoint=str(ckpt), episodes=1, num_envs=1, render=False, wandb=False)
    report = evaluate(ec)
    assert report["episodes"][0]["length"] == 200  # Pendulum's time limit


@pytest.mark.slow
def test_the_command_line_runs_the_task_and_refuses_a_backend_with_it(tmp_path):
    env = with_repo_on_path(dict(os.environ))
    args = [
        "task=gymnasium",
        f"task.env_id={ENV_ID}",
        "hardware=cpu",
        "hardware.torch_threads=1",
        "learner=tiny",
        "run.num_envs=2",
        "run.iterations=12",
        "replay.batch_size=16",
        "replay.learning_starts=8",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    proc = run_cli(args, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert read_summary(tmp_path / "run")["complete"]
    bad = run_cli(
        [*args[:-1], "backend=mujoco", f"hydra.run.dir={tmp_path / 'bad'}"], env=env, cwd=REPO
    )
    assert bad.returncode != 0 and not (tmp_path / "bad").exists()
    line = bad.stderr.strip().splitlines()[-1]
    assert "backend=mujoco with task=gymnasium" in line and "drop backend=mujoco" in line
    assert np.isfinite(read_summary(tmp_path / "run")["rows_all"][-1]["critic_loss"])


def test_gymnasium_runs_compare_like_the_g1s(runs, tmp_path):
    """A sweep's comparison (the Hydra callback's write_comparison) over Gymnasium runs: one row
    per run, its task the env, its last return; runs of one env and setup share a baseline."""
    from flashsac_bench.analysis.compare import comparison_frame, find_run_dirs, write_comparison

    tmp, _ = runs
    files = write_comparison([tmp / "a", tmp / "b"], tmp_path)
    assert files is not None and all(p.exists() for p in files.values())
    df = comparison_frame(find_run_dirs([tmp / "a", tmp / "b"]))
    assert list(df["task"]) == [ENV_ID, ENV_ID]
    summary = read_summary(tmp / "a")
    assert (
        df.loc[df["run"] == "a", "return"].item() == summary["rows_all"][-1]["episode_return_mean"]
    )
    assert f"| a | {ENV_ID} |" in files["comparison.md"].read_text()


def test_the_memory_check_sizes_a_gymnasium_run_by_its_env():
    from flashsac_bench.cli.runtime_checks import memory_needs
    from flashsac_bench.envs.tasks import task_of

    config = gym_config("Humanoid-v5")
    dims = task_of(config.task).probe(config.task)
    assert dims == (348, 348, 17)  # Humanoid-v5's observation, as the policy and the critic's
    width = 4 * 348 + 17 + 3  # obs, critic obs and their next, action, reward, two flags
    ring = memory_needs(config, None, dims)["host"]["replay ring checkpoint copy"]
    assert ring == config.replay_capacity * width * 4


@pytest.mark.slow
def test_the_compiled_path_runs_a_gymnasium_task_as_eager_does(runs, tmp_path):
    """path=compile on a 1-d action (InvertedPendulum): the same run as eager's, its losses to
    compiled fp32 arithmetic's precision."""
    tmp, _ = runs
    train(gym_config(path="compile"), run_dir=tmp_path / "compile")
    eager, compiled = read_summary(tmp / "a"), read_summary(tmp_path / "compile")
    assert compiled["complete"] and compiled["training_config"]["executor"] == "compile"
    learned = [r for r in eager["rows_all"] if r["learning"]]
    assert len(learned) >= 4
    for e, c in zip(learned, compiled["rows_all"][-len(learned) :], strict=True):
        for key in ("critic_loss", "actor_loss", "q_mean"):
            assert c[key] == pytest.approx(e[key], rel=1e-3, abs=1e-5), (e["iteration"], key)


@pytest.mark.gpu
def test_the_captured_path_runs_a_gymnasium_task_on_a_gpu(tmp_path):
    config = dataclasses.replace(gym_config(iterations=40), hardware=HardwareConfig("cuda", "cuda"))
    config = dataclasses.replace(config, path=PathConfig(name="cudagraph"))
    train(config, run_dir=tmp_path / "run")
    summary = read_summary(tmp_path / "run")
    assert summary["complete"] and summary["training_config"]["executor"] == "cudagraph"
    assert all(np.isfinite(r["critic_loss"]) for r in summary["rows_all"] if r["learning"])
