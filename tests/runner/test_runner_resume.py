"""Checkpoint / resume: a resumed run reproduces the uninterrupted run's next update bit for bit
(CPU, eager), with the fake env and with the real G1 env; late metrics land on their own row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from flashsac_bench.cli.train import train
from flashsac_bench.learner.learner import Dims, FlashSACLearner
from flashsac_bench.runner.checkpoint import (
    checkpoint_path,
    load_checkpoint,
    resolve_resume_path,
)
from flashsac_bench.runner.resume import ResumeError
from tests.fakes.fake_env import FakeEnv
from tests.fakes.runs import read_summary, tiny_config

N = 7  # learning starts at iteration 4 (max(4 x 8 envs, batch 32) rows), so N-1 updated


def _fake(num_envs: int, seed: int, **kw) -> FakeEnv:
    return FakeEnv(num_envs, seed)


def _factory(task, backend, num_envs, seed):
    return _fake(num_envs, seed)


def _run(run_dir: Path, factory=_factory, **cfg) -> dict:
    train(tiny_config(**cfg), run_dir=run_dir, env_factory=factory)
    return read_summary(run_dir)


def _assert_same_state(a: dict, b: dict) -> None:
    ta, tb = a["learner"]["tensors"], b["learner"]["tensors"]
    assert set(ta) == set(tb)
    for key in ta:
        assert torch.equal(ta[key], tb[key]), key
    assert a["replay"]["cursor"] == b["replay"]["cursor"]
    assert a["replay"]["count"] == b["replay"]["count"]
    assert torch.equal(a["replay"]["storage"], b["replay"]["storage"])
    for key in ("obs", "critic_obs", "dones"):
        assert np.array_equal(a["staging"][key], b["staging"][key]), key
    assert a["iteration"] == b["iteration"]


def _env_state_equal(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_env_state_equal(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


@pytest.fixture(scope="module")
def fake_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("resume")
    a = _run(tmp / "a", iterations=N + 1)  # uninterrupted
    # b checkpoints every N iterations and keeps going; c resumes from b's iteration-N file.
    b = _run(tmp / "b", iterations=N + 3, checkpoint_every=N)
    ckpt_n = checkpoint_path(tmp / "b", N)
    c = _run(tmp / "c", iterations=N + 1, resume=str(ckpt_n))
    return tmp, a, b, c, ckpt_n


def test_resume_reproduces_the_next_update_bit_for_bit(fake_runs):
    tmp, _, _, c, ckpt_n = fake_runs
    final_a = load_checkpoint(resolve_resume_path(tmp / "a"))
    final_c = load_checkpoint(resolve_resume_path(tmp / "c"))
    at_n = load_checkpoint(ckpt_n)
    _assert_same_state(final_a, final_c)
    assert _env_state_equal(final_a["env"], final_c["env"])
    # ... and iteration N really changed the learner (so the comparison can fail)
    changed = [
        k
        for k, v in at_n["learner"]["tensors"].items()
        if not torch.equal(v, final_a["learner"]["tensors"][k])
    ]
    assert {"critic.params", "actor.params", "critic.adam.exp_avg", "rng.counter"} <= set(changed)
    assert c["complete"] and c["resumed_from"] == str(ckpt_n) and c["resume_iteration"] == N


def test_resumed_rows_continue_the_checkpointed_ones(fake_runs):
    _, a, b, c, _ = fake_runs
    assert [r["iteration"] for r in c["rows_all"]] == list(range(N + 1))
    assert c["rows_all"][:N] == b["rows_all"][:N]
    # the resumed iteration computes exactly the losses of the uninterrupted one
    keys = ("critic_loss", "actor_loss", "entropy", "temperature", "reward_scale", "reward_mean")
    assert {k: c["rows_all"][N][k] for k in keys} == {k: a["rows_all"][N][k] for k in keys}
    # the loop clock runs on from the checkpoint's (a walk in several segments reads one clock):
    # the resumed row is later than the last checkpointed one by its own iteration (and the few
    # statements between the loop's start and that iteration's), not restarted near zero (gap
    # -before) nor counting the earlier segment twice (gap +before). Wall times of a loaded
    # machine cancel: both sides of the gap come from the resumed process's one clock.
    before, after = c["rows_all"][N - 1]["time_s"], c["rows_all"][N]["time_s"]
    gap = (after - before) - c["rows_all"][N]["iter_ms"] / 1e3
    assert -1e-6 <= gap < before / 2


def test_late_metrics_land_on_their_own_iteration(fake_runs):
    """Each row's losses are those of its own update (read one iteration late, not shifted):
    the metric buffer saved with the checkpoint after iteration k is row k's."""
    tmp, a, b, _, ckpt_n = fake_runs
    cfg = tiny_config()
    learner = FlashSACLearner(
        cfg.learner,
        cfg.update,
        Dims(FakeEnv.obs_dim, FakeEnv.critic_obs_dim, FakeEnv.action_dim),
        num_envs=8,
        batch_size=32,
        replay_capacity=cfg.replay_capacity,
    )
    for ckpt, row in (
        (load_checkpoint(ckpt_n), b["rows_all"][N - 1]),
        (load_checkpoint(resolve_resume_path(tmp / "a")), a["rows_all"][N]),
    ):
        m = learner.metrics_from(ckpt["learner"]["tensors"]["metrics"])
        for key in ("critic_loss", "actor_loss", "entropy", "temperature"):
            assert row[key] == pytest.approx(m[key], rel=1e-6), key
    assert a["rows_all"][N - 1]["critic_loss"] != a["rows_all"][N]["critic_loss"]


def test_resume_refuses_an_incompatible_run_before_building_an_env(fake_runs):
    tmp, _, _, _, ckpt_n = fake_runs
    built = []

    def factory(*args, **kw):
        built.append(args)
        return _factory(*args, **kw)

    with pytest.raises(ResumeError, match=r"run\.num_envs \(checkpoint 8, now 16\)"):
        _run(
            tmp / "d",
            factory=factory,
            num_envs=16,
            iterations=N + 1,
            resume=str(ckpt_n),
        )
    assert built == []
    assert not (tmp / "d").exists()  # refused before the run dir was made


THREADS = {"mode": "threads", "num_threads": 2}


def _workers(k: int) -> dict:
    return {"mode": "processes", "workers": k}


@pytest.mark.parametrize(
    ("first", "then"),
    [(THREADS, THREADS), (_workers(2), _workers(3)), (_workers(3), THREADS)],
    ids=["threads", "2-then-3-workers", "3-workers-then-threads"],
)
def test_resume_with_the_real_g1_env(tmp_path, monkeypatch, first, then):
    """The uninterrupted run steps its envs on the thread pool; the interrupted one and its
    continuation may use any split into worker processes: the runs agree bit for bit."""
    from flashsac_bench.envs import make_env

    monkeypatch.chdir(tmp_path)  # MuJoCo writes MUJOCO_LOG.TXT into the cwd on warnings

    common = dict(num_envs=4, batch_size=16, replay_buffer_n=8, learning_starts=4)
    n = 6  # learning starts at iteration 4
    a = _run(tmp_path / "a", factory=make_env, iterations=n + 1, backend=THREADS, **common)
    b = _run(tmp_path / "b", factory=make_env, iterations=n, backend=first, **common)
    c = _run(
        tmp_path / "c",
        factory=make_env,
        iterations=n + 1,
        resume=str(tmp_path / "b"),
        backend=then,
        **common,
    )
    assert b["training_config"]["env_workers"] == first.get("workers", 0)
    assert c["training_config"]["env_workers"] == then.get("workers", 0)
    final_a = load_checkpoint(resolve_resume_path(tmp_path / "a"))
    final_c = load_checkpoint(resolve_resume_path(tmp_path / "c"))
    _assert_same_state(final_a, final_c)
    assert _env_state_equal(final_a["env"], final_c["env"])
    assert c["rows_all"][n]["critic_loss"] == a["rows_all"][n]["critic_loss"]
    assert a["training_config"]["obs_dim"] == 98 and a["training_config"]["action_dim"] == 29
