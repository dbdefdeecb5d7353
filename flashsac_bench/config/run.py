from __future__ import annotations

from dataclasses import dataclass

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.values import require_finite

# Sizes past these are typos, not runs (the memory they need is checked against this machine
# before anything is allocated: cli.runtime_checks).
MAX_NUM_ENVS = 1 << 24
MAX_ITERATIONS = 1 << 40

# "The G1 walks" (issue 6's thresholds; the learning analysis and run.stop_at_walk share them):
# the mean length of the last 100 episodes and the logged lin-vel tracking reward as a fraction
# of its maximum (weight * ctrl_dt), both in one logged window.
WALK_EPISODE_LENGTH = 900.0
WALK_TRACKING_FRAC = 0.8


@dataclass
class ReplayConfig:
    """Device replay ring and sampling."""

    batch_size: int = 2048
    # Ring capacity in rows = replay_buffer_n * num_envs (UniLab's convention).
    replay_buffer_n: int = 512
    # Learning starts once learning_starts * num_envs rows are stored (and >= batch_size).
    learning_starts: int = 98

    def __post_init__(self) -> None:
        require_finite(self, "replay.")
        for key in ("batch_size", "replay_buffer_n"):
            if getattr(self, key) < 1:
                raise ConfigError(f"replay.{key} must be >= 1, got {getattr(self, key)}")
        if self.learning_starts < 0:
            raise ConfigError(f"replay.learning_starts must be >= 0, got {self.learning_starts}")


@dataclass
class RunConfig:
    """One training run."""

    seed: int = 1
    num_envs: int = 1024
    iterations: int = 1000
    # Summaries use the last `summary_last` timed iterations (after `skip_first`).
    summary_last: int = 500
    skip_first: int = 0
    # Write a checkpoint every N iterations (0: only at the end and on interruption).
    checkpoint_every: int = 0
    # Periodic checkpoints: the snapshot is taken between iterations, and a background thread
    # serializes and fsyncs it while training goes on (the replay ring makes it large, so an
    # inline write would stall the loop). The next checkpoint and the run's end wait for it; the
    # final checkpoint is always written inline. It keeps one host buffer of the ring's size
    # for the run (a checkpoint needs that much memory anyway, while written).
    # False: every checkpoint inline.
    background_checkpoints: bool = True
    # Path of a checkpoint to continue from.
    resume: str | None = None
    # "auto": a live Rich line on a terminal, plain log lines otherwise; "rich"; "plain".
    progress: str = "auto"
    log_every: int = 10
    # Stop after the iteration during which this many seconds have passed since the run began
    # (env build and compile/capture included); the run then counts as complete, with
    # `stopped_by` in its summary. None: no limit.
    time_limit_s: float | None = None
    # End the run (complete, `stopped_by` says why) at the first logged window in which the
    # walking thresholds above are met: time-to-walk runs need nothing after that point.
    stop_at_walk: bool = False
    # CUDA: capture the per-iteration act and store steps as small CUDA graphs (every path;
    # see runner.device_steps). Ignored on the CPU.
    capture_device_steps: bool = True

    def __post_init__(self) -> None:
        require_finite(self, "run.")
        for key in ("num_envs", "iterations", "summary_last", "log_every"):
            if getattr(self, key) < 1:
                raise ConfigError(f"run.{key} must be >= 1, got {getattr(self, key)}")
        for key, top in (("num_envs", MAX_NUM_ENVS), ("iterations", MAX_ITERATIONS)):
            if getattr(self, key) > top:
                raise ConfigError(f"run.{key} must be <= {top}, got {getattr(self, key)}")
        for key in ("skip_first", "checkpoint_every"):
            if getattr(self, key) < 0:
                raise ConfigError(f"run.{key} must be >= 0, got {getattr(self, key)}")
        if self.time_limit_s is not None and self.time_limit_s <= 0:
            raise ConfigError(f"run.time_limit_s must be > 0, got {self.time_limit_s}")
        if self.progress not in ("auto", "rich", "plain"):
            raise ConfigError(f"run.progress must be auto, rich or plain, got {self.progress!r}")
