"""An env in worker processes (VecEnv.workers > 0) is stepped by the collector thread in two
halves (step_begin / step_end), each worker's rows packed as that worker finishes: the training
is exactly that of the plain step; a failing split step fails the run naming the iteration."""

from __future__ import annotations

import pytest
import torch

from flashsac_bench.cli.train import train
from flashsac_bench.runner.checkpoint import checkpoint_path, load_checkpoint
from flashsac_bench.runner.collector import CollectorError
from tests.fakes.fake_env import FakeEnv, SplitFakeEnv
from tests.fakes.runs import read_summary, timing_free, tiny_config

ITERATIONS = 9


def _run(tmp_path, name, factory):
    train(tiny_config(iterations=ITERATIONS), run_dir=tmp_path / name, env_factory=factory)
    ckpt = load_checkpoint(checkpoint_path(tmp_path / name, ITERATIONS))
    return read_summary(tmp_path / name), ckpt


def test_the_split_tick_trains_exactly_like_the_plain_step(tmp_path):
    envs: list[SplitFakeEnv] = []

    def split(task, backend, n, seed):
        envs.append(SplitFakeEnv(n, seed))
        return envs[-1]

    s_plain, c_plain = _run(tmp_path, "plain", lambda t, b, n, s: FakeEnv(n, s))
    s_split, c_split = _run(tmp_path, "split", split)
    (env,) = envs
    assert env.split_steps == ITERATIONS  # every tick went through step_begin / step_end
    assert s_split["training_config"]["env_workers"] == 2
    assert [timing_free(r) for r in s_split["rows_all"]] == [
        timing_free(r) for r in s_plain["rows_all"]
    ]
    for key, t in c_plain["learner"]["tensors"].items():
        assert torch.equal(t, c_split["learner"]["tensors"][key]), key
    assert torch.equal(c_plain["replay"]["storage"], c_split["replay"]["storage"])
    # the workers' finish times give each row its straggler time (none in-process)
    assert all(r["straggler_ms"] is not None for r in s_split["rows_all"])
    assert all(r["straggler_ms"] is None for r in s_plain["rows_all"])


def test_a_failing_split_step_fails_the_run_naming_the_iteration(tmp_path):
    def failing(task, backend, n, seed):
        return SplitFakeEnv(n, seed, fail_at=5)

    run = tmp_path / "run"
    with pytest.raises(
        CollectorError, match="collector thread failed at iteration 5: RuntimeError: fake"
    ):
        train(tiny_config(iterations=ITERATIONS), run_dir=run, env_factory=failing)
    assert read_summary(run)["status"] == "failed"
