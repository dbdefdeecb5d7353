"""When a run ends before run.iterations: the loop asks `Stopping.due` before each iteration.

A signal (Ctrl-C, SIGTERM) ends it interrupted (runner.signals; a Stopping is made when the
setup is done, and from then on a first signal ends the current iteration). Two rules end it
complete, with the rule as its `stopped_by`:
- run.time_limit_s: the seconds since the runner started (setup included) have run out;
- run.stop_at_walk: a logged window met the walking thresholds, judged as the learning analysis
  judges them (the window's last row's mean episode length, and its mean
  Reward/tracking_lin_vel as a fraction of its maximum, weight * ctrl_dt).
A window is judged when it is logged (during the next iteration, while the envs step), so the
run ends before the iteration after that.

A run that is not learning is not complete: a logged window in which every critic (or every
actor) update was skipped (non-finite losses or gradients: the learner's finite guard keeps the
weights) or every env's every step was a broken row (records.dead_tick) ends the run with a
NotLearningError that says which and why, before its next iteration. The last window (partial,
written when the loop ends; also the last window of a resumed run) is judged too (`saw_last`):
a short run that learned nothing does not end complete. Only the rows that learned are judged
for skipped updates (those before the start of learning have no updates to skip).
"""

from __future__ import annotations

import logging
import time

from flashsac_bench.config import run as run_config
from flashsac_bench.config.root import Config
from flashsac_bench.runner.faults import NotLearningError
from flashsac_bench.runner.lifecycle import Signals
from flashsac_bench.runner.records import Window

log = logging.getLogger("flashsac_bench.runner")


class Stopping:
    """Asked by the loop before each iteration (`due`); told of each logged window (`saw`)."""

    def __init__(self, config: Config, run_t0: float, signals: Signals) -> None:
        self.time_limit_s = config.run.time_limit_s
        self.stop_at_walk = config.run.stop_at_walk
        self.tracking_top = config.task.rewards.tracking_lin_vel * config.task.ctrl_dt
        self.run_t0 = run_t0
        self.signals = signals
        signals.loop_started()  # the setup is done: a first signal now ends the loop's iteration
        self.reason: str | None = None  # the rule that ended the run
        self._walked: str | None = None
        self._not_learning: str | None = None
        self.critic_updates = config.update.critic_updates
        self.actor_updates = config.update.actor_updates

    def due(self, done_iterations: int) -> bool:
        """Whether the loop ends before its next iteration: after a signal (the run is then
        interrupted), or by a rule (complete; `reason` names it)."""
        if self.signals.requested:
            return True
        if self._not_learning:
            raise NotLearningError(self._not_learning)
        self.reason = self._walked or self._time_is_up(done_iterations)
        return self.reason is not None

    def saw(self, window: Window | None) -> None:
        """Judge a logged window: is the run learning, and (run.stop_at_walk) does it walk?
        None: no window was logged."""
        if window is None:
            return
        self._not_learning = self._not_learning or self.not_learning(window)
        if not self.stop_at_walk or self._walked or not self.tracking_top:
            return
        length = window.last_row["episode_length_mean"]
        tracking = window.means.get("Reward/tracking_lin_vel")
        if length is None or tracking is None:
            return
        if (
            length >= run_config.WALK_EPISODE_LENGTH
            and tracking / self.tracking_top >= run_config.WALK_TRACKING_FRAC
        ):
            k = window.last_row["iteration"]
            self._walked = f"run.stop_at_walk: walking thresholds met at iteration {k}"
            log.info("%s: stopping", self._walked)

    def not_learning(self, window: Window) -> str | None:
        """Why nothing of `window` was learned, in one line; None when something was."""
        rows = window.rows
        if not rows:
            return None
        span = f"iterations {rows[0]['iteration']}-{rows[-1]['iteration']}"
        if window.dead_ticks >= len(rows):
            return (
                f"every env's every step in {span} was a broken row (its episode ended at its "
                "first step with reward 0: the env met non-finite physics or rewards), so every "
                "reward was zeroed; check the task's values and its model file (task.model_file)"
            )
        learned = [r for r in rows if r.get("learning") and r.get("critic_skipped") is not None]
        if not learned:
            return None  # a window before the start of learning: no update to judge
        span = f"iterations {learned[0]['iteration']}-{learned[-1]['iteration']}"
        for name, per_iteration, why in (
            ("critic", self.critic_updates, "non-finite loss or gradient"),
            ("actor", self.actor_updates, "non-finite loss or gradient"),
        ):
            if per_iteration and all(r[f"{name}_skipped"] >= per_iteration for r in learned):
                return (
                    f"every {name} update of {span} was skipped ({why}: the finite guard kept "
                    "the weights), so the run learns nothing; check the learner.* and task.* "
                    "values"
                )
        return None

    def saw_last(self, window: Window | None) -> None:
        """Judge the run's last window (written as the loop ends, however many rows it has) and
        end the run as not learning when it, or the window before it, learned nothing. A run
        stopped by a signal stays interrupted (it is continued, and judged, on resume)."""
        if self.signals.requested:
            return
        self.saw(window)
        if self._not_learning:
            raise NotLearningError(self._not_learning)

    def _time_is_up(self, done_iterations: int) -> str | None:
        limit = self.time_limit_s
        if limit is None or time.perf_counter() - self.run_t0 < limit:
            return None
        reason = f"run.time_limit_s={limit:g} reached after {done_iterations} iterations"
        log.info("%s: stopping", reason)
        return reason
