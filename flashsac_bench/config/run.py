from __future__ import annotations

from dataclasses import dataclass

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.values import INT_MAX, ranged, require_bounded

# Sizes past these are typos, not runs (the memory they need is checked against this machine
# before anything is allocated: cli.runtime_checks).
MAX_NUM_ENVS = 1 << 24
MAX_ITERATIONS = 1 << 40
# torch's generators take 64-bit seeds, and the envs' streams hash all 64 bits.
MAX_SEED = 2**63 - 1
MAX_TIME_LIMIT_S = 1e8

# "The G1 walks" (the walking thresholds; the learning analysis and run.stop_at_walk share them):
# the mean length of the last 100 episodes and the logged lin-vel tracking reward as a fraction
# of its maximum (weight * ctrl_dt), both in one logged window.
WALK_EPISODE_LENGTH = 900.0
WALK_TRACKING_FRAC = 0.8


@dataclass
class ReplayConfig:
    """Device replay ring and sampling."""

    batch_size: int = ranged(2048, low=1, high=INT_MAX)
    # Ring capacity in rows = replay_buffer_n * num_envs (UniLab's convention).
    replay_buffer_n: int = ranged(512, low=1, high=INT_MAX)
    # Learning starts once learning_starts * num_envs rows are stored (and >= batch_size).
    learning_starts: int = 98

    def __post_init__(self) -> None:
        require_bounded(self, "replay.")


@dataclass
class RunConfig:
    """One training run."""

    seed: int = ranged(1, low=0, high=MAX_SEED)
    num_envs: int = ranged(1024, low=1, high=MAX_NUM_ENVS)
    iterations: int = ranged(1000, low=1, high=MAX_ITERATIONS)
    # Summaries use the last `summary_last` timed (learning) iterations.
    summary_last: int = ranged(500, low=1, high=MAX_ITERATIONS)
    # Write a checkpoint every N iterations (0: only at the end and on interruption). A
    # periodic one is written by a background thread while training goes on (runner.run_dir:
    # the replay ring makes it large, an inline write would stall the loop); the final one
    # inline.
    checkpoint_every: int = ranged(0, low=0, high=MAX_ITERATIONS)
    # Path of a checkpoint to continue from.
    resume: str | None = None
    # "auto": a live Rich line on a terminal, plain log lines otherwise; "rich"; "plain".
    progress: str = "auto"
    log_every: int = ranged(10, low=1, high=MAX_ITERATIONS)
    # Stop after the iteration during which this many seconds have passed since the run began
    # (env build and compile/capture included); the run then counts as complete, with
    # `stopped_by` in its summary. None: no limit.
    time_limit_s: float | None = ranged(None, low=0, high=MAX_TIME_LIMIT_S, closed="(]")
    # End the run (complete, `stopped_by` says why) at the first logged window in which the
    # walking thresholds above are met: time-to-walk runs need nothing after that point.
    stop_at_walk: bool = False

    def __post_init__(self) -> None:
        require_bounded(self, "run.")
        if self.progress not in ("auto", "rich", "plain"):
            raise ConfigError(f"run.progress must be auto, rich or plain, got {self.progress!r}")
