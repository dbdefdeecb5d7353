"""Failure handling: interrupts leave a checkpoint and a partial summary, a dead or hung
collector fails the run clearly within 30 s, bad configs fail before any env is built."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from flashsac_bench.cli.train import train
from flashsac_bench.learner.learner import FlashSACLearner
from flashsac_bench.runner.checkpoint import load_checkpoint, resolve_resume_path
from flashsac_bench.runner.collector import DEFAULT_TIMEOUT_S, CollectorError
from flashsac_bench.runner.device_steps import DeviceSteps
from tests.fakes.fake_env import FakeEnv
from tests.fakes.runs import cli_overrides, fake_env_environ, read_summary, run_cli, tiny_config


def _factory(**env_kw):
    def make(task, backend, num_envs, seed):
        return FakeEnv(num_envs, seed, **env_kw)

    return make


class _SignalTwice(FakeEnv):
    """Sends SIGINT at tick 5, and again while the main thread is still waiting for the tick."""

    def step(self, actions):
        if self.ticks == 5:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
        return super().step(actions)


def test_sigterm_stops_after_the_iteration_with_checkpoint_and_partial_summary(tmp_path):
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        train(
            tiny_config(iterations=40),
            run_dir=run_dir,
            env_factory=_factory(signal_at=(12, signal.SIGTERM)),
        )
    assert exc.value.code == 128 + signal.SIGTERM
    s = read_summary(run_dir)
    assert s["complete"] is False and s["status"] == "interrupted"
    assert "SIGTERM" in s["incomplete_reason"]
    # the iteration that saw the signal (tick 12) finishes, then the loop stops
    assert s["iterations_done"] == 13 and len(s["rows_all"]) == 13
    assert s["rows"] and s["learner_train_ms"]["count"] == len(s["rows"])
    ckpt = load_checkpoint(resolve_resume_path(run_dir))
    assert ckpt["iteration"] == 13
    # the handlers are restored afterwards
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_second_signal_aborts_at_once_without_checkpoint(tmp_path):
    run_dir = tmp_path / "run"

    def make(task, backend, num_envs, seed):
        return _SignalTwice(num_envs, seed)

    with pytest.raises(KeyboardInterrupt):
        train(tiny_config(iterations=40), run_dir=run_dir, env_factory=make)
    s = read_summary(run_dir)
    assert s["complete"] is False and s["status"] == "interrupted"
    assert (
        "KeyboardInterrupt" in s["incomplete_reason"] and "no checkpoint" in s["incomplete_reason"]
    )
    assert len(s["rows_all"]) == 5
    assert not (run_dir / "checkpoints").exists()


def test_ctrl_c_on_the_cli(tmp_path):
    run_dir = tmp_path / "run"
    args = [*cli_overrides(8, 200), f"hydra.run.dir={run_dir}"]
    proc = run_cli(args, env=fake_env_environ(FAKE_ENV_SIGNAL_AT="9:SIGINT"), cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGINT, proc.stderr[-2000:]
    s = read_summary(run_dir)
    assert s["status"] == "interrupted" and "SIGINT" in s["incomplete_reason"]
    assert s["iterations_done"] == 10
    assert (run_dir / "checkpoints" / "iter_0000010.pt").is_file()


def test_env_step_that_raises_fails_the_run_clearly(tmp_path):
    run_dir = tmp_path / "run"
    start = time.perf_counter()
    with pytest.raises(CollectorError, match="failed at iteration 7: RuntimeError: fake env explo"):
        train(tiny_config(iterations=40), run_dir=run_dir, env_factory=_factory(fail_at=7))
    assert time.perf_counter() - start < 30
    s = read_summary(run_dir)
    assert s["status"] == "failed" and s["complete"] is False
    assert "fake env exploded at tick 7" in s["incomplete_reason"]
    assert len(s["rows_all"]) == 7


@pytest.mark.slow
def test_hung_env_step_fails_the_run_within_30_s(tmp_path):
    assert DEFAULT_TIMEOUT_S < 30
    run_dir = tmp_path / "run"
    before = set(threading.enumerate())
    start = time.perf_counter()
    with pytest.raises(CollectorError, match="no progress for 15 s at iteration 5"):
        train(tiny_config(iterations=40), run_dir=run_dir, env_factory=_factory(hang_at=5))
    elapsed = time.perf_counter() - start
    assert DEFAULT_TIMEOUT_S <= elapsed < 30
    s = read_summary(run_dir)
    assert s["status"] == "failed" and "hung" in s["incomplete_reason"]
    # the hung collector is an abandoned daemon thread: it cannot keep the process alive
    assert all(t.daemon for t in set(threading.enumerate()) - before)


@pytest.mark.parametrize(
    "bad",
    [
        ["path=cudagraph", "hardware=cpu"],  # needs CUDA
        ["replay.batch_size=100000"],  # larger than the replay capacity
        ["update.updates_per_step=0"],
    ],
)
def test_bad_config_fails_before_any_env_is_built(tmp_path, bad):
    marker = tmp_path / "env_built.txt"
    run_dir = tmp_path / "run"
    args = [*cli_overrides(8, 10), *bad, f"hydra.run.dir={run_dir}"]
    proc = run_cli(args, env=fake_env_environ(FAKE_ENV_MARKER=str(marker)), cwd=tmp_path)
    assert proc.returncode == 2
    assert "invalid configuration" in proc.stderr
    assert not marker.exists()
    assert not (run_dir / "summary.json").exists()


@pytest.mark.slow  # CLI runs that take 6-10 s on 2 cores
def test_time_limit_ends_the_run_as_complete_with_the_reason(tmp_path):
    # The limit counts from the start of the run, setup (~2 s of first-call costs here) included.
    cfg = tiny_config(iterations=1_000_000, time_limit_s=6.0)
    t0 = time.perf_counter()
    train(cfg, run_dir=tmp_path, env_factory=_factory())
    elapsed = time.perf_counter() - t0
    s = read_summary(tmp_path)
    assert s["complete"] and s["status"] == "complete" and s["incomplete_reason"] is None
    assert 0 < s["iterations_done"] < 1_000_000
    assert s["stopped_by"].startswith("run.time_limit_s=6 reached after")
    assert s["time_limit_s"] == 6.0
    assert 6.0 <= elapsed < 6.0 + 5.0  # one iteration takes milliseconds here
    assert load_checkpoint(resolve_resume_path(tmp_path))["iteration"] == s["iterations_done"]


def _release_calls(monkeypatch) -> list[str]:
    """Which CUDA-graph owners the runner released, in order (learner/graphs.py says why)."""
    calls: list[str] = []
    release_graphs, release = FlashSACLearner.release_graphs, DeviceSteps.release

    def learner_release(self):
        calls.append("learner")
        release_graphs(self)

    def steps_release(self):
        calls.append("steps")
        release(self)

    monkeypatch.setattr(FlashSACLearner, "release_graphs", learner_release)
    monkeypatch.setattr(DeviceSteps, "release", steps_release)
    return calls


def test_the_runner_releases_the_graphs_at_the_end_of_a_run(tmp_path, monkeypatch):
    calls = _release_calls(monkeypatch)
    train(
        tiny_config(iterations=12),
        run_dir=tmp_path,
        env_factory=_factory(),
    )
    assert calls == ["steps", "learner"]  # once each; the steps' graphs first


def test_the_runner_releases_the_graphs_when_the_run_fails(tmp_path, monkeypatch):
    calls = _release_calls(monkeypatch)
    with pytest.raises(CollectorError, match="fake env exploded"):
        train(
            tiny_config(iterations=40),
            run_dir=tmp_path,
            env_factory=_factory(fail_at=7),
        )
    assert calls == ["steps", "learner"]
