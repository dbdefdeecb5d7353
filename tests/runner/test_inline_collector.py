"""run.collector_thread=false: with an env that splits its step across worker processes the main
thread runs the tick (runner.collector.InlineCollector) and trains exactly as the collector
thread does; other envs keep the thread; a failing step fails the run in one line."""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest
import torch
from runner_fakes import FakeEnv
from runner_helpers import read_summary, timing_free, tiny_config

from flashsac_bench.hydra_app import train
from flashsac_bench.runner.checkpoint import checkpoint_path, load_checkpoint
from flashsac_bench.runner.collector import (
    CollectorError,
    InlineCollector,
    splits_its_step,
)

ITERATIONS = 9


class SplitFakeEnv(FakeEnv):
    """FakeEnv with the split step of the G1 env in worker processes."""

    workers = 1

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self._pending: np.ndarray | None = None
        self.split_steps = 0

    def step_begin(self, actions: np.ndarray) -> None:
        assert self._pending is None, "step_begin twice without step_end"
        self._pending = np.array(actions, copy=True)

    def step_end(self, on_rows=None):
        actions, self._pending = self._pending, None
        assert actions is not None, "step_end without step_begin"
        self.split_steps += 1
        out = self.step(actions)
        if on_rows is not None:  # two "workers", the second one done first
            half = self.num_envs // 2
            on_rows(out, half, self.num_envs)
            on_rows(out, 0, half)
        return out


def _run(tmp_path, name, factory, **run):
    cfg = tiny_config(iterations=ITERATIONS, **run)
    train(cfg, run_dir=tmp_path / name, env_factory=factory)
    return read_summary(tmp_path / name), load_checkpoint(
        checkpoint_path(tmp_path / name, ITERATIONS)
    )


def test_the_inline_tick_trains_exactly_like_the_thread(tmp_path):
    envs: list[SplitFakeEnv] = []

    def split(task, backend, n, seed):
        envs.append(SplitFakeEnv(n, seed))
        return envs[-1]

    threads_before = threading.active_count()
    s_thread, c_thread = _run(tmp_path, "thread", lambda t, b, n, s: FakeEnv(n, s))
    s_inline, c_inline = _run(tmp_path, "inline", split, collector_thread=False)
    # The thread also splits such an env's step, packing each "worker's" rows as they come.
    s_split, c_split = _run(tmp_path, "thread_split", split)
    assert s_thread["training_config"]["collector"] == "thread"
    assert s_split["training_config"]["collector"] == "thread"
    assert s_inline["training_config"]["collector"] == "inline"
    # every tick went through step_begin / step_end
    assert [e.split_steps for e in envs] == [ITERATIONS, ITERATIONS]
    for summary, ckpt in ((s_inline, c_inline), (s_split, c_split)):
        assert [timing_free(r) for r in summary["rows_all"]] == [
            timing_free(r) for r in s_thread["rows_all"]
        ]
        for key, t in c_thread["learner"]["tensors"].items():
            assert torch.equal(t, ckpt["learner"]["tensors"][key]), key
        assert torch.equal(c_thread["replay"]["storage"], ckpt["replay"]["storage"])
    assert all(r["collector_start_ms"] == 0.0 for r in s_inline["rows_all"])
    assert threading.active_count() <= threads_before  # no collector thread was left


def test_an_env_without_a_split_step_keeps_the_thread(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="flashsac_bench.runner"):
        summary, _ = _run(
            tmp_path, "plain", lambda t, b, n, s: FakeEnv(n, s), collector_thread=False
        )
    assert summary["training_config"]["collector"] == "thread"
    assert any(
        "run.collector_thread=false needs worker processes" in r.message for r in caplog.records
    )
    assert not splits_its_step(FakeEnv(2, 0))
    in_process = SplitFakeEnv(2, 0)
    in_process.workers = 0  # a split step that runs at once (threads mode) would not overlap
    assert not splits_its_step(in_process) and splits_its_step(SplitFakeEnv(2, 0))


def test_a_failing_step_fails_the_run_naming_the_iteration(tmp_path):
    def failing(task, backend, n, seed):
        return SplitFakeEnv(n, seed, fail_at=5)

    run = tmp_path / "run"
    with pytest.raises(CollectorError, match="env step failed at iteration 5: RuntimeError: fake"):
        train(
            tiny_config(iterations=ITERATIONS, collector_thread=False),
            run_dir=run,
            env_factory=failing,
        )
    assert read_summary(run)["status"] == "failed"


def test_a_step_in_flight_is_completed_before_the_env_closes():
    env = SplitFakeEnv(4, 0)
    from flashsac_bench.learner.replay import RowLayout
    from flashsac_bench.runner.collector import Staging

    staging = Staging(RowLayout(env.obs_dim, env.critic_obs_dim, env.action_dim), 4, pin=False)
    obs, critic = env.reset()
    staging.set_current(obs, critic, np.zeros(4, np.float32))
    collector = InlineCollector(env, staging)
    collector.submit(0, want_metrics=False)
    assert not collector.idle
    collector.close()  # e.g. the update raised between submit and wait
    assert collector.idle and env._pending is None and env.split_steps == 1
