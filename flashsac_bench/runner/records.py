"""What a run records: one row per iteration, the episode windows, the logged scalars, the
progress line, and summary.json's content made of them together with the run's description and
status. Records writes no file: the run dir's owner (runner.run_dir) writes the summary it makes
and opens the logger it hands its points to.

Iteration k's row is built during iteration k+1, while the envs step (`keep` iteration k's
IterationRecord, then `log` builds its row): off the serial path, and complete at once, since a
learning iteration's learner time and losses are read after the next action hand-off has
synchronized past them (see runner.loop). A checkpoint, the loop's end and a failure build the
pending row first.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from flashsac_bench.config.root import Config
from flashsac_bench.learner.state import METRICS
from flashsac_bench.runner.collector import TickResult
from flashsac_bench.runner.liveness import HEARTBEAT_EVERY_S, HEARTBEAT_NAME, writer_identity
from flashsac_bench.runner.progress import Progress
from flashsac_bench.runner.resume_commands import continue_command
from flashsac_bench.runner.scalars import Scalars
from flashsac_bench.runner.summary import (
    SUMMARY_FORMAT,
    TIMING_SEMANTICS,
    select_rows,
    timing_block,
)

log = logging.getLogger("flashsac_bench.runner")

# Finished episodes the running return / length means are taken over (UniLab uses 100).
EPISODE_WINDOW = 100

# An update's learner time (ms) and metrics, read one iteration late (DeviceSteps.late_values).
LearnerValues = tuple[float | None, dict[str, float] | None]


@dataclass(kw_only=True)
class IterationTimes:
    """time.perf_counter() at the steps of one iteration, set by runner.loop as it passes them."""

    start: float = field(default_factory=time.perf_counter)
    acted: float = 0.0  # act: the actions are on the host
    released: float = 0.0  # collect: the collector is about to be released
    update_start: float = 0.0  # update: the envs step, the update launches
    update_end: float = 0.0  # the update is launched (its device time is the learner timer's)
    joined: float = 0.0  # store: the collector's tick is back
    stored: float = 0.0  # the tick is stored: the iteration's serial part ends


@dataclass(frozen=True, kw_only=True)
class IterationRecord:
    """What iteration k's row is built from, during iteration k+1."""

    iteration: int
    learning: bool  # the learner updated (else random actions, or a refill after a resume)
    tick: TickResult
    times: IterationTimes
    replay_rows: int  # rows in the ring once the tick is stored


@dataclass(frozen=True, kw_only=True)
class UpdateSkips:
    """A learning iteration's updates that the learner's finite guard skipped."""

    iteration: int
    critic: float
    actor: float


@dataclass(frozen=True, kw_only=True)
class Window:
    """A logged window, as runner.stopping judges it."""

    first_iteration: int
    last_iteration: int
    ticks: int  # rows (iterations) in the window
    dead_ticks: int  # ticks in which every env's step was a broken row (`dead_tick`)
    episode_length_mean: float | None  # of the last 100 episodes, at the window's end
    reward_means: dict[str, float]  # each reward term (task name) over the window's ticks
    skips: tuple[UpdateSkips, ...]  # its learning iterations' skipped updates


def dead_tick(tick: TickResult, num_envs: int) -> bool:
    """Every env ended its episode at its first step with a return of exactly 0: every row a
    broken row (envs.contract.api.EnvStep says what an env does with a row it cannot compute).
    A live env earns a non-zero reward on some step."""
    lengths, returns = tick.episode_lengths, tick.episode_returns
    return (
        len(lengths) == num_envs
        and bool((lengths <= 1).all())
        and bool((returns == 0.0).all())
        and tick.reward_mean == 0.0
    )


@dataclass
class RunInfo:
    """What summary.json says about the run besides its rows; setup adds the measured parts."""

    composed: dict[str, Any]
    command: dict[str, Any]
    training_config: dict[str, Any]
    device: dict[str, Any]
    writer: dict[str, Any] = field(
        default_factory=lambda: {**writer_identity(), "started_unix": time.time()}
    )
    git: dict[str, Any] = field(default_factory=dict)
    startup: dict[str, float] = field(default_factory=dict)
    compile: dict[str, Any] = field(default_factory=dict)  # runner.setup.compile_delta
    beside: dict[str, float] = field(default_factory=dict)  # what ran beside startup's parts
    # The model the envs step (envs.g1.model.model_record; None: a custom env factory's env):
    # carried by every checkpoint, so that resume can refuse another model and evaluate /
    # export use exactly this one.
    model: dict[str, Any] | None = None


@dataclass
class RunState:
    """Where the run stands (runner.run_dir.status decides the final status)."""

    status: str = "starting"
    reason: str | None = None
    start_iteration: int = 0
    done_iterations: int = 0
    resumed_from: str | None = None
    # Resumed from a learner-only checkpoint: the loaded policy acts while the replay refills.
    policy_refill: bool = False
    stopped_by: str | None = None  # why the loop ended early (runner.stopping)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)  # written by this process


class Records:
    def __init__(self, config: Config, run_dir: Path, info: RunInfo, state: RunState) -> None:
        self.cfg, self.run_dir, self.info, self.state = config, run_dir, info, state
        self.num_envs = config.run.num_envs
        self.rows_all: list[dict[str, Any]] = []
        self.returns: deque[float] = deque(maxlen=EPISODE_WINDOW)
        self.lengths: deque[float] = deque(maxlen=EPISODE_WINDOW)
        self.pending: IterationRecord | None = None  # the last iteration, its row not built yet
        # Writes nothing until the run dir opens the run's logger (RunDir.open_logger).
        self.scalars = Scalars(None, self.num_envs)
        # The logger state of the checkpoint this run continues (its W&B run id).
        self.logger_saved: dict[str, Any] | None = None
        self.loop_t0: float | None = None
        self.setup_s: float | None = None  # runner start -> first iteration (this segment)
        # Loop seconds of the segments before a resume: rows' time_s runs on across resumes,
        # so a walk trained in several segments reads its time to the thresholds off one clock.
        self.time_offset_s = 0.0
        self._window: list[dict[str, Any]] = []  # finalized rows of the next TensorBoard point
        self._window_terms: list[dict[str, float]] = []
        self._window_dead = 0  # dead ticks (dead_tick) in the window
        self._env_metrics: dict[str, float] = {}

    def report_start(self, threshold: int) -> None:
        """The run's opening log line (once its parts are built)."""
        c, info, tc = self.cfg, self.info, self.info.training_config
        log.info(
            "flashsac_bench: %s %s on %s (%s), %d envs, batch %d, %d iterations; "
            "learning starts at %d replay rows; cold start %.2f s; run dir %s",
            c.update.name,
            tc["executor"],
            info.device.get("gpu", info.device["device"]),
            tc["dtype"],
            c.run.num_envs,
            c.replay.batch_size,
            c.run.iterations,
            threshold,
            info.startup["cold_start_s"],
            self.run_dir,
        )

    # ------------------------------------------------------------------ rows
    def add_tick(self, tick: TickResult) -> None:
        """The tick's finished episodes, reward terms and env metrics into the windows."""
        for ret, length in zip(tick.episode_returns, tick.episode_lengths, strict=True):
            self.returns.append(float(ret))
            self.lengths.append(float(length))
        self._window_terms.append(tick.reward_terms)
        self._window_dead += dead_tick(tick, self.num_envs)
        if tick.env_metrics is not None:
            self._env_metrics = tick.env_metrics

    def wants_env_metrics(self, iteration: int) -> bool:
        """Whether iteration's tick reads the env's metrics: it ends a log window or the run."""
        run = self.cfg.run
        return (iteration + 1) % run.log_every == 0 or iteration == run.iterations - 1

    def keep(self, record: IterationRecord) -> None:
        """Iteration k is done; its row is built later (`log`, `build_row`)."""
        assert self.pending is None, "the previous iteration's row was never built"
        self.pending = record

    def log(self, values: LearnerValues | None, progress: Progress | None) -> Window | None:
        """Build the pending row (`build_row`) and, once a window is full, write its logged
        point: the window written, if any. The loop calls it while the envs step, off the
        serial path (it writes a few dozen scalars)."""
        self.build_row(values, progress)
        if len(self._window) >= self.cfg.run.log_every:
            return self.flush_window()
        return None

    def build_row(self, values: LearnerValues | None, progress: Progress | None) -> None:
        """Build, keep and show the pending iteration's row. `values`: its update's learner
        time and metrics (a learning iteration; None where they cannot be read, as after a
        failure)."""
        d, self.pending = self.pending, None
        if d is None:
            return
        t = time.perf_counter()
        self.add_tick(d.tick)
        row = self.row(d, values)
        self.rows_all.append(row)
        self._window.append(row)
        if progress is not None:
            self.show(d.tick, progress, row)
        row["bookkeeping_ms"] = (time.perf_counter() - t) * 1e3  # set last: it covers show, too

    def row(self, d: IterationRecord, values: LearnerValues | None) -> dict[str, Any]:
        """Iteration k's row (bookkeeping_ms is filled in by build_row)."""
        ms = 1e3
        tick, marks = d.tick, d.times
        learner_ms, metrics = values if d.learning and values is not None else (None, None)
        row: dict[str, Any] = {
            "iteration": d.iteration,
            "env_steps": (d.iteration + 1) * self.num_envs,
            "learning": d.learning,
            "iter_ms": (marks.stored - marks.start) * ms,
            "learner_train_ms": learner_ms,
            "collector_cycle_ms": tick.cycle_ms,
            "env_step_ms": tick.env_step_ms,
            "action_ms": (marks.acted - marks.start) * ms,
            "learner_host_ms": (
                (marks.update_end - marks.update_start) * ms if d.learning else None
            ),
            "collector_wait_ms": (marks.joined - marks.update_end) * ms,
            "collector_start_ms": tick.start_ms,
            "release_ms": (marks.released - marks.acted) * ms,
            # from the tick complete (and the update launched) to the main thread going on
            "join_ms": (marks.joined - max(tick.end, marks.update_end)) * ms,
            "straggler_ms": tick.straggler_ms,
            "insert_ms": (marks.stored - marks.joined) * ms,
            "bookkeeping_ms": None,
            "replay_rows": d.replay_rows,
            "reward_mean": tick.reward_mean,
            "episodes_done": len(tick.episode_returns),
            "episode_return_mean": float(np.mean(self.returns)) if self.returns else None,
            "episode_length_mean": float(np.mean(self.lengths)) if self.lengths else None,
            "time_s": marks.stored - (self.loop_t0 or marks.start) + self.time_offset_s,
        }
        row.update({key: (metrics or {}).get(key) for key in METRICS})
        return row

    # ------------------------------------------------------------------ progress, TensorBoard
    def show(self, tick: TickResult, progress: Progress, row: dict[str, Any]) -> None:
        """The progress line."""
        log_every = self.cfg.run.log_every
        iter_vals = [r["iter_ms"] for r in self.rows_all[-log_every:] if r.get("iter_ms")]
        iter_ms = float(np.mean(iter_vals)) if iter_vals else None
        learner_ms = next(
            (r["learner_train_ms"] for r in reversed(self.rows_all) if r["learner_train_ms"]),
            None,
        )
        progress.update(
            {
                "iteration": row["iteration"],
                "iterations": self.cfg.run.iterations,
                "learning": row["learning"],
                "reward_mean": row["reward_mean"],
                "episode_return_mean": row["episode_return_mean"],
                "learner_train_ms": learner_ms,
                "collector_cycle_ms": tick.cycle_ms,
                "iter_ms": row["iter_ms"],
                "env_steps_per_s": self.num_envs * 1e3 / iter_ms if iter_ms else None,
            }
        )

    def flush_window(self) -> Window | None:
        """Write the window's logged point (if it has rows) and start the next window."""
        rows = self._window
        if not rows:
            return None
        terms = self._window_terms
        reward_means = {
            name: float(np.mean([t[name] for t in terms if name in t]))
            for name in (terms[-1] if terms else {})
        }
        means = {f"Reward/{name}": value for name, value in reward_means.items()}
        means.update({f"Env/{name}": float(value) for name, value in self._env_metrics.items()})
        self.scalars.write(rows, means)
        window = Window(
            first_iteration=rows[0]["iteration"],
            last_iteration=rows[-1]["iteration"],
            ticks=len(rows),
            dead_ticks=self._window_dead,
            episode_length_mean=rows[-1]["episode_length_mean"],
            reward_means=reward_means,
            skips=tuple(
                UpdateSkips(
                    iteration=r["iteration"], critic=r["critic_skipped"], actor=r["actor_skipped"]
                )
                for r in rows
                if r["learning"] and r["critic_skipped"] is not None
            ),
        )
        self._window, self._window_terms, self._window_dead = [], [], 0
        return window

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        return {
            "episodes": {"returns": list(self.returns), "lengths": list(self.lengths)},
            "rows_all": self.rows_all,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.returns.extend(state["episodes"]["returns"])
        self.lengths.extend(state["episodes"]["lengths"])
        self.rows_all = list(state["rows_all"])
        saved = state.get("logger")
        self.logger_saved = saved if isinstance(saved, dict) else None
        last = self.rows_all[-1].get("time_s") if self.rows_all else None
        self.time_offset_s = float(last) if isinstance(last, int | float) else 0.0

    # ------------------------------------------------------------------ summary.json
    def summary(self) -> dict[str, Any]:
        c, info, st = self.cfg, self.info, self.state
        rows = select_rows(self.rows_all, c.run.summary_last)
        learning = [r for r in self.rows_all if r.get("learning")]
        last_metrics = next(
            (r for r in reversed(learning) if r.get("critic_loss") is not None), None
        )
        return {
            "format": SUMMARY_FORMAT,
            "complete": st.status == "complete",
            "status": st.status,
            "incomplete_reason": None if st.status == "complete" else st.reason,
            "command": info.command,
            "resume_command": continue_command(
                info.command, self.run_dir, st.resumed_from, bool(st.checkpoints)
            ),
            "writer": {
                **info.writer,
                "heartbeat_unix": time.time(),  # when this summary was written
                "heartbeat_file": HEARTBEAT_NAME,
                "heartbeat_every_s": HEARTBEAT_EVERY_S,
            },
            "run_dir": str(self.run_dir),
            "logger": self.scalars.describe(),
            "config": info.composed,
            "device": info.device,
            "git": info.git,
            "cold_start_s": info.startup.get("cold_start_s"),
            "startup": info.startup,
            "setup_s": self.setup_s,
            "compile": info.compile,
            "setup_beside": info.beside,
            "training_config": info.training_config,
            "iterations_planned": c.run.iterations,
            "iterations_done": st.done_iterations,
            "time_limit_s": c.run.time_limit_s,
            "stopped_by": st.stopped_by,
            "warmup_iterations": len(self.rows_all) - len(learning),
            "first_learning_iteration": learning[0]["iteration"] if learning else None,
            "resumed_from": st.resumed_from,
            "resume_iteration": st.start_iteration if st.resumed_from else None,
            "resumed_learner_only": st.policy_refill,
            "last_checkpoint": st.checkpoints[-1]["path"] if st.checkpoints else None,
            "checkpoints": st.checkpoints,
            "num_samples": len(rows),
            "num_samples_all": len(self.rows_all),
            "summary_last": c.run.summary_last,
            "summary_first_iteration": rows[0]["iteration"] if rows else None,
            "summary_last_iteration": rows[-1]["iteration"] if rows else None,
            **timing_block(rows, self.num_envs),
            "wall_s": time.perf_counter() - self.loop_t0 if self.loop_t0 else None,
            "final_metrics": (
                {k: last_metrics[k] for k in (*METRICS, "reward_mean", "episode_return_mean")}
                if last_metrics
                else None
            ),
            "timing_semantics": TIMING_SEMANTICS,
            "rows": rows,
            "rows_all": self.rows_all,
        }
