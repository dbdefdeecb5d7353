"""runner.stopping on its own: it reads a logged window's typed fields and returns why the loop
stops (a Stop: its rule, its message, whether the run ends complete or failed), raising nothing."""

from __future__ import annotations

import time

import pytest

from flashsac_bench.config import run as run_config
from flashsac_bench.runner.faults import NotLearningError
from flashsac_bench.runner.records import UpdateSkips, Window
from flashsac_bench.runner.signals import Signals
from flashsac_bench.runner.stopping import Stopping, StopRule
from tests.fakes.runs import tiny_config


def _window(*, length=None, tracking=None, dead=0, skips=(), first=8, last=11) -> Window:
    return Window(
        first_iteration=first,
        last_iteration=last,
        ticks=last - first + 1,
        dead_ticks=dead,
        episode_length_mean=length,
        reward_means={} if tracking is None else {"tracking_lin_vel": tracking},
        skips=tuple(skips),
    )


def _stopping(signals=None, **run) -> Stopping:
    return Stopping(tiny_config(**run), time.perf_counter(), signals or Signals())


def test_nothing_to_stop_for_is_none():
    stopping = _stopping()
    stopping.judge(None)
    stopping.judge(_window(length=3.0, tracking=0.0))
    assert stopping.check(5) is None
    assert stopping.check_last(None) is None


def test_a_walking_window_ends_the_run_complete_naming_its_iteration():
    stopping = _stopping(stop_at_walk=True)
    top = stopping.tracking_top
    stopping.judge(_window(length=run_config.WALK_EPISODE_LENGTH, tracking=0.79 * top))
    assert stopping.check(12) is None  # tracking below its threshold
    stopping.judge(_window(length=run_config.WALK_EPISODE_LENGTH, tracking=0.8 * top, last=15))
    stop = stopping.check(16)
    assert stop is not None and stop.rule is StopRule.WALKED and stop.complete
    assert stop.message == "run.stop_at_walk: walking thresholds met at iteration 15"
    assert _stopping().check(16) is None  # without run.stop_at_walk: judged, never stopped


def test_the_time_limit_ends_the_run_complete():
    stop = Stopping(tiny_config(time_limit_s=1.0), time.perf_counter() - 2.0, Signals()).check(7)
    assert stop is not None and stop.rule is StopRule.TIME_LIMIT and stop.complete
    assert stop.message == "run.time_limit_s=1 reached after 7 iterations"


def test_a_signal_stops_the_loop_interrupted_and_leaves_the_last_window_unjudged():
    signals = Signals()
    stopping = _stopping(signals)
    signals.requested = "SIGTERM"
    stop = stopping.check(3)
    assert stop is not None and stop.rule is StopRule.SIGNAL
    assert not stop.complete and not stop.failed
    dead = _window(dead=4)
    assert stopping.check_last(dead) is None  # judged when the run is continued


@pytest.mark.parametrize(
    ("window", "said"),
    [
        (_window(dead=4), "every env's every step in iterations 8-11 was a broken row"),
        (
            _window(skips=[UpdateSkips(iteration=k, critic=2.0, actor=0.0) for k in (9, 10, 11)]),
            "every critic update of iterations 9-11 was skipped",
        ),
        (
            _window(skips=[UpdateSkips(iteration=k, critic=0.0, actor=1.0) for k in (10, 11)]),
            "every actor update of iterations 10-11 was skipped",
        ),
    ],
)
def test_a_window_that_learned_nothing_fails_the_run(window, said):
    stopping = _stopping()
    assert (stopping.critic_updates, stopping.actor_updates) == (2, 1)  # u2's, per iteration
    stopping.judge(window)
    stop = stopping.check(12)
    assert stop is not None and stop.rule is StopRule.NOT_LEARNING and stop.failed
    assert said in stop.message and not stop.complete
    assert isinstance(stop.error(), NotLearningError) and str(stop.error()) == stop.message
    last = _stopping().check_last(window)  # the last window is judged as the loop ends
    assert last is not None and last.message == stop.message


def test_a_window_with_some_learning_or_none_to_judge_goes_on():
    stopping = _stopping()
    partly = [UpdateSkips(iteration=9, critic=2.0, actor=1.0)]
    partly.append(UpdateSkips(iteration=10, critic=0.0, actor=0.0))
    stopping.judge(_window(skips=partly, dead=3))  # one live tick, one iteration that learned
    stopping.judge(_window(skips=()))  # before the start of learning: nothing to judge
    assert stopping.check(12) is None and stopping.check_last(None) is None
