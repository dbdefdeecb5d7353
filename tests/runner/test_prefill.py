"""run.prefill_during_cold_start: a fresh run's random-action iterations, stepped on a thread
while the learner compiles, compute the same run as stepping them in the loop; the thread ends
on every failure (CPU, eager)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import torch
from runner_fakes import FakeEnv
from runner_helpers import read_summary, timing_free, tiny_config
from test_runner_resume import _assert_same_state, _env_state_equal

from flashsac_bench.envs import make_env
from flashsac_bench.hydra_app import train
from flashsac_bench.learner.learner import FlashSACLearner
from flashsac_bench.learner.rng import CounterRNG
from flashsac_bench.runner.checkpoint import load_checkpoint, resolve_resume_path
from flashsac_bench.runner.collector import CollectorError
from flashsac_bench.runner.prefill import random_iterations

N = 7  # learning starts at iteration 4: max(4 x 8 envs, batch 32) rows


def _factory(built: list[FakeEnv] | None = None, **env_kw):
    """A fake-env factory; `built` collects every env it makes."""

    def make(task, backend, num_envs, seed):
        env = FakeEnv(num_envs, seed, **env_kw)
        if built is not None:
            built.append(env)
        return env

    return make


def _run(run_dir: Path, factory=None, **cfg) -> dict:
    train(tiny_config(**cfg), run_dir=run_dir, env_factory=factory or _factory())
    return read_summary(run_dir)


def _same_run(tmp: Path, a: dict, b: dict) -> None:
    final_a = load_checkpoint(resolve_resume_path(tmp / "a"))
    final_b = load_checkpoint(resolve_resume_path(tmp / "b"))
    _assert_same_state(final_a, final_b)  # learner (RNG counter included), ring, staging
    assert _env_state_equal(final_a["env"], final_b["env"])
    assert [timing_free(r) for r in a["rows_all"]] == [timing_free(r) for r in b["rows_all"]]
    assert a["rows_all"][-1]["critic_loss"] is not None  # the comparison covers updates


def test_random_iterations_are_those_before_the_threshold():
    assert random_iterations(32, 8, 12) == 4
    assert random_iterations(33, 8, 12) == 5  # the 5th iteration's start still holds 32 rows
    assert random_iterations(32, 8, 3) == 3  # a run shorter than its warm-up
    assert random_iterations(0, 8, 12) == 0


def test_the_host_twin_draws_what_the_generator_draws_next():
    rng = CounterRNG(7, "cpu")
    rng.uniform(3, (5,))  # a counter that is not zero
    twin = rng.host_twin()
    ahead = [twin.uniform(2, (4, 3)) for _ in range(3)]
    assert int(rng.counter) == 1 and int(twin.counter) == 4  # the original did not move
    for drawn in ahead:
        assert torch.equal(drawn, rng.uniform(2, (4, 3)))


@pytest.mark.parametrize("path", ["eager", "compile"])
def test_prefill_computes_the_same_run(tmp_path, path):
    # compile: Dynamo traces on the main thread while the prefill thread runs torch ops
    a = _run(tmp_path / "a", iterations=N + 1, path=path)
    b = _run(tmp_path / "b", iterations=N + 1, path=path, prefill_during_cold_start=True)
    assert a["training_config"]["prefill_iterations"] == 0
    assert b["training_config"]["prefill_iterations"] == 4
    assert b["first_learning_iteration"] == a["first_learning_iteration"] == 4
    assert {"prefill_wait_s"} <= set(b["startup"]) and "prefill_wait_s" not in a["startup"]
    _same_run(tmp_path, a, b)
    # the clock starts with the first prefilled iteration: its rows are in time order from 0
    times = [r["time_s"] for r in b["rows_all"]]
    assert 0 < times[0] and times == sorted(times)


def test_prefill_with_the_real_g1_env_in_worker_processes(tmp_path, monkeypatch):
    """The G1 env splits its step across worker processes; the prefill thread drives it."""
    monkeypatch.chdir(tmp_path)  # MuJoCo writes MUJOCO_LOG.TXT into the cwd on warnings
    common = dict(num_envs=4, batch_size=16, replay_buffer_n=8, learning_starts=4, iterations=6)
    backend = {"mode": "processes", "workers": 2}
    a = _run(tmp_path / "a", factory=make_env, backend=backend, **common)
    b = _run(
        tmp_path / "b", factory=make_env, backend=backend, prefill_during_cold_start=True, **common
    )
    assert b["training_config"]["env_workers"] == 2
    assert b["training_config"]["prefill_iterations"] == 4
    _same_run(tmp_path, a, b)


def test_prefill_is_ignored_when_resuming(tmp_path):
    _run(tmp_path / "a", iterations=N)
    c = _run(
        tmp_path / "c",
        iterations=N + 1,
        resume=str(tmp_path / "a"),
        prefill_during_cold_start=True,
    )
    assert c["complete"] and c["resume_iteration"] == N
    assert c["training_config"]["prefill_iterations"] == 0


def _prefill_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """Prefill threads started since `before` that still run."""
    return [t for t in set(threading.enumerate()) - before if t.name == "flashsac-prefill"]


def test_an_env_step_that_raises_during_the_prefill_fails_the_run_clearly(tmp_path):
    envs: list[FakeEnv] = []
    factory = _factory(envs, fail_at=2)

    before = set(threading.enumerate())
    cfg = tiny_config(iterations=12, prefill_during_cold_start=True)
    with pytest.raises(CollectorError, match=r"failed at iteration 2 \(prefill\): RuntimeError"):
        train(cfg, run_dir=tmp_path, env_factory=factory)
    s = read_summary(tmp_path)
    assert s["status"] == "failed" and "fake env exploded at tick 2" in s["incomplete_reason"]
    assert not _prefill_threads(before) and envs[0].closed


def test_a_failed_cold_start_stops_the_prefill_and_closes_the_env(tmp_path, monkeypatch):
    envs: list[FakeEnv] = []
    factory = _factory(envs, step_sleep_s=0.05)

    def failing_warmup(self):
        time.sleep(0.1)  # the prefill thread is mid-way
        raise RuntimeError("compile failed")

    monkeypatch.setattr(FlashSACLearner, "warmup", failing_warmup)
    before = set(threading.enumerate())
    cfg = tiny_config(iterations=40, learning_starts=16, prefill_during_cold_start=True)
    with pytest.raises(RuntimeError, match="compile failed"):
        train(cfg, run_dir=tmp_path, env_factory=factory)
    assert not _prefill_threads(before)
    # stopped after its tick in flight, not run to the end of its 16 iterations
    assert 0 < envs[0].ticks < 16 and envs[0].closed
    assert read_summary(tmp_path)["status"] == "failed"


def test_a_hung_env_step_during_the_prefill_fails_the_run(tmp_path):
    envs: list[FakeEnv] = []
    factory = _factory(envs, hang_at=1)

    before = set(threading.enumerate())
    start = time.perf_counter()
    cfg = tiny_config(iterations=12, prefill_during_cold_start=True)
    with pytest.raises(CollectorError, match="prefill made no progress for 2 s at iteration 1"):
        train(cfg, run_dir=tmp_path, env_factory=factory, collector_timeout_s=2.0)
    assert time.perf_counter() - start < 15
    assert read_summary(tmp_path)["status"] == "failed"
    # the hung thread is an abandoned daemon (it cannot keep the process alive), and the env it
    # is inside is left to the process's exit
    assert all(t.daemon for t in set(threading.enumerate()) - before)
    assert not envs[0].closed
