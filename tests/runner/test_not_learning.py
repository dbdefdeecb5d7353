"""A run that learns nothing ends failed with one line saying which and why (runner.stopping),
never "complete": every update of a log window skipped, or every reward zeroed as a broken
row. A run that learns is never stopped by the rule."""

from __future__ import annotations

import functools

import pytest

from flashsac_bench.cli.train import train
from flashsac_bench.runner.faults import NotLearningError
from tests.fakes.broken_env import make_dead_env, make_nan_critic_obs_env, make_nan_reward_env
from tests.fakes.fake_env import make_env
from tests.fakes.runs import cli_overrides, fake_env_environ, read_summary, run_cli, tiny_config


def test_every_update_skipped_stops_the_run_naming_it(tmp_path):
    run_dir = tmp_path / "run"
    # learning starts at iteration 4: its first window (4-7) is judged, the run ends after it
    with pytest.raises(NotLearningError, match="every critic update of iterations 4-7 was skip"):
        train(tiny_config(iterations=40), run_dir=run_dir, env_factory=make_nan_reward_env)
    s = read_summary(run_dir)
    assert s["status"] == "failed" and not s["complete"]
    assert "NotLearningError" in s["incomplete_reason"] and s["iterations_done"] == 9


def test_every_row_broken_stops_the_run_naming_it(tmp_path):
    run_dir = tmp_path / "run"
    with pytest.raises(NotLearningError, match="every env's every step in iterations 0-3"):
        train(tiny_config(iterations=40), run_dir=run_dir, env_factory=make_dead_env)
    s = read_summary(run_dir)
    assert s["status"] == "failed" and s["iterations_done"] == 5


def test_a_learning_run_is_not_stopped(tmp_path):
    run_dir = tmp_path / "run"
    train(tiny_config(iterations=20), run_dir=run_dir, env_factory=make_env)
    s = read_summary(run_dir)
    assert s["status"] == "complete" and s["iterations_done"] == 20


def test_the_cli_says_it_in_one_line(tmp_path):
    run_dir = tmp_path / "run"
    env = fake_env_environ(FLASHSAC_BENCH_ENV_FACTORY="tests.fakes.broken_env:make_dead_env")
    proc = run_cli([*cli_overrides(8, 40), f"hydra.run.dir={run_dir}"], env=env, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("flashsac_bench: ")]
    assert len(lines) == 1 and lines[0].startswith("flashsac_bench: not learning: every env's")
    assert read_summary(run_dir)["status"] == "failed"


def test_a_short_run_whose_every_step_broke_is_not_complete(tmp_path):
    """Its only window is the last one, written as the loop ends: judged like any other."""
    run_dir = tmp_path / "run"
    with pytest.raises(NotLearningError, match="every env's every step in iterations 0-9"):
        train(tiny_config(iterations=10, log_every=10), run_dir=run_dir, env_factory=make_dead_env)
    s = read_summary(run_dir)
    assert s["status"] == "failed" and not s["complete"] and s["iterations_done"] == 10


def test_a_run_that_ends_in_a_window_of_skipped_updates_is_not_complete(tmp_path):
    """Learning starts at iteration 4 of this 10-iteration run; its last (and only) window has
    rows before that start, and every update after it was skipped."""
    with pytest.raises(NotLearningError, match="every critic update of iterations 4-9 was skip"):
        train(
            tiny_config(iterations=10, log_every=10),
            run_dir=tmp_path / "run",
            env_factory=make_nan_reward_env,
        )


def test_a_resume_whose_every_update_is_skipped_is_not_complete(tmp_path):
    """The first run learns (its last window takes updates), but its last ten ticks' critic
    observations are NaN; the resumed run's every update samples such rows and is skipped: its
    last window (the only one it writes) says so."""
    run_dir = tmp_path / "run"
    late_nan = functools.partial(make_nan_critic_obs_env, start=20)
    train(tiny_config(iterations=30, log_every=10), run_dir=run_dir, env_factory=late_nan)
    assert read_summary(run_dir)["status"] == "complete"
    resumed = tiny_config(iterations=40, log_every=10, resume=str(run_dir))
    with pytest.raises(NotLearningError, match="every critic update of iterations 30-39 was"):
        train(resumed, run_dir=run_dir, env_factory=make_nan_critic_obs_env)
    s = read_summary(run_dir)
    assert s["status"] == "failed" and s["iterations_done"] == 40
