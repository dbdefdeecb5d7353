"""The options of `python -m flashsac_bench.evaluate` (typed: unknown keys and types fail)."""

from __future__ import annotations

from dataclasses import dataclass

from flashsac_bench.config.errors import ConfigError


@dataclass
class EvalConfig:
    checkpoint: str = "???"  # run dir, checkpoints dir or iter_*.pt (required)
    episodes: int = 8
    num_envs: int = 8  # envs stepped together (at most `episodes`)
    seed: int = 12345  # env seed (resets, commands, observation noise)
    device: str = "cpu"  # where the policy runs: cpu, cuda, auto
    dtype: str = "float32"  # policy matmuls: float32, bfloat16, checkpoint (= training dtype)
    # MuJoCo threads of the in-process pool (forces backend.mode=threads); 0: the checkpoint's
    # backend setting (worker processes or threads, as in training).
    threads: int = 0
    # The penalty-curriculum scale to evaluate with: "checkpoint" (the training env's, so that
    # returns compare with training) or "initial" (the task's initial_scale).
    penalty_scale: str = "checkpoint"
    out_dir: str | None = None  # default: the run dir of the checkpoint
    render: bool = True
    render_env: int = 0
    render_seconds: float = 8.0  # at most this much of the env's first episode
    render_fps: int = 25  # must divide the control rate (50 Hz for G1)
    width: int = 320
    height: int = 240
    camera_distance: float = 3.0
    camera_elevation: float = -15.0
    camera_azimuth: float = 135.0
    strip_frames: int = 6

    def __post_init__(self) -> None:
        # ConfigError: one line on the command line (flashsac_bench.cli_errors).
        if self.episodes < 1 or self.num_envs < 1:
            raise ConfigError("episodes and num_envs must be >= 1")
        if self.penalty_scale not in ("checkpoint", "initial"):
            raise ConfigError(
                f"penalty_scale must be checkpoint or initial, got {self.penalty_scale!r}"
            )
