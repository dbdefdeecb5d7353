"""When a run ends before run.iterations: the loop asks `Stopping.check` before each iteration
and gets a reason to stop (a `Stop`) or None; the loop then ends the run as the reason says.

A signal (Ctrl-C, SIGTERM) ends it interrupted (runner.signals; a Stopping is made when the
setup is done, and from then on a first signal ends the current iteration). Two rules end it
complete, with the rule as its `stopped_by`:
- run.time_limit_s: the seconds since the runner started (setup included) have run out;
- run.stop_at_walk: a logged window met the walking thresholds, judged as the learning analysis
  judges them (the mean length of the last 100 episodes at the window's end, and the window's
  mean tracking_lin_vel reward as a fraction of its maximum, weight * ctrl_dt).
A window is judged when it is logged (during the next iteration, while the envs step), so the
run ends before the iteration after that.

A run that is not learning is not complete: a logged window in which every critic (or every
actor) update was skipped (non-finite losses or gradients: the learner's finite guard keeps the
weights) or every env's every step was a broken row (records.dead_tick) ends the run failed
(`Stop.error`: a NotLearningError that says which and why), before its next iteration. The last
window (partial, written when the loop ends; also the last window of a resumed run) is judged
too (`check_last`): a short run that learned nothing does not end complete. Only the
iterations that learned are judged for skipped updates (those before the start of learning have
no updates to skip).
"""

from __future__ import annotations

import enum
import logging
import time
from dataclasses import dataclass

from flashsac_bench.config import run as run_config
from flashsac_bench.config.root import Config
from flashsac_bench.runner.faults import NotLearningError
from flashsac_bench.runner.records import Window
from flashsac_bench.runner.signals import Signals

log = logging.getLogger("flashsac_bench.runner")


class StopRule(enum.Enum):
    SIGNAL = "signal"  # interrupted: continued by a resume
    TIME_LIMIT = "run.time_limit_s"  # complete
    WALKED = "run.stop_at_walk"  # complete
    NOT_LEARNING = "not learning"  # failed


@dataclass(frozen=True)
class Stop:
    """Why the loop ends before run.iterations."""

    rule: StopRule
    message: str

    @property
    def complete(self) -> bool:
        """The run ends complete (a rule it was given), its summary's `stopped_by` the message."""
        return self.rule in (StopRule.TIME_LIMIT, StopRule.WALKED)

    @property
    def failed(self) -> bool:
        return self.rule is StopRule.NOT_LEARNING

    def error(self) -> NotLearningError:
        """What ends a failed run (one line through the CLI)."""
        return NotLearningError(self.message)


class Stopping:
    """Asked by the loop before each iteration (`check`); shown each logged window (`judge`)."""

    def __init__(self, config: Config, run_t0: float, signals: Signals) -> None:
        self.time_limit_s = config.run.time_limit_s
        self.stop_at_walk = config.run.stop_at_walk
        # The lin-vel tracking maximum the walking thresholds are judged against; 0: a task
        # without walking thresholds (Config refuses run.stop_at_walk for it).
        top = config.task.walk_tracking_top()
        self.tracking_top = 0.0 if top is None else top
        self.run_t0 = run_t0
        self.signals = signals
        signals.loop_started()  # the setup is done: a first signal now ends the loop's iteration
        self._walked: str | None = None
        self._not_learning: str | None = None
        self.critic_updates = config.update.critic_updates
        self.actor_updates = config.update.actor_updates

    def check(self, done_iterations: int) -> Stop | None:
        """Why the loop ends before its next iteration, or None: a signal, a window that
        learned nothing, or a rule that ends the run complete."""
        if self.signals.requested:
            return Stop(StopRule.SIGNAL, f"interrupted by {self.signals.requested}")
        if self._not_learning:
            return Stop(StopRule.NOT_LEARNING, self._not_learning)
        if self._walked:
            return Stop(StopRule.WALKED, self._walked)
        return self._time_is_up(done_iterations)

    def judge(self, window: Window | None) -> None:
        """Judge a logged window: is the run learning, and (run.stop_at_walk) does it walk?
        None: no window was logged."""
        if window is None:
            return
        self._not_learning = self._not_learning or self.not_learning(window)
        if not self.stop_at_walk or self._walked or not self.tracking_top:
            return
        length = window.episode_length_mean
        tracking = window.reward_means.get("tracking_lin_vel")
        if length is None or tracking is None:
            return
        if (
            length >= run_config.WALK_EPISODE_LENGTH
            and tracking / self.tracking_top >= run_config.WALK_TRACKING_FRAC
        ):
            k = window.last_iteration
            self._walked = f"run.stop_at_walk: walking thresholds met at iteration {k}"
            log.info("%s: stopping", self._walked)

    def not_learning(self, window: Window) -> str | None:
        """Why nothing of `window` was learned, in one line; None when something was."""
        if not window.ticks:
            return None
        span = f"iterations {window.first_iteration}-{window.last_iteration}"
        if window.dead_ticks >= window.ticks:
            return (
                f"every env's every step in {span} was a broken row (its episode ended at its "
                "first step with reward 0: the env met non-finite physics or rewards), so every "
                "reward was zeroed; check the task's values and its model file (task.model_file)"
            )
        learned = window.skips
        if not learned:
            return None  # a window before the start of learning: no update to judge
        span = f"iterations {learned[0].iteration}-{learned[-1].iteration}"
        for name, per_iteration, skipped in (
            ("critic", self.critic_updates, [s.critic for s in learned]),
            ("actor", self.actor_updates, [s.actor for s in learned]),
        ):
            if per_iteration and all(n >= per_iteration for n in skipped):
                return (
                    f"every {name} update of {span} was skipped (non-finite loss or gradient: "
                    "the finite guard kept the weights), so the run learns nothing; check the "
                    "learner.* and task.* values"
                )
        return None

    def check_last(self, window: Window | None) -> Stop | None:
        """Judge the run's last window (written as the loop ends, however many rows it has):
        a failed Stop when it, or the window before it, learned nothing. A run stopped by a
        signal stays interrupted (it is continued, and judged, on resume)."""
        if self.signals.requested:
            return None
        self.judge(window)
        if self._not_learning:
            return Stop(StopRule.NOT_LEARNING, self._not_learning)
        return None

    def _time_is_up(self, done_iterations: int) -> Stop | None:
        limit = self.time_limit_s
        if limit is None or time.perf_counter() - self.run_t0 < limit:
            return None
        reason = f"run.time_limit_s={limit:g} reached after {done_iterations} iterations"
        log.info("%s: stopping", reason)
        return Stop(StopRule.TIME_LIMIT, reason)
