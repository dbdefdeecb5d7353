"""The options of `python -m flashsac_bench.evaluate` (typed: unknown keys and types fail)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.evaluation.robustness import condition_names


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
    # Conditions no training run saw (flashsac_bench/evaluation/robustness.py), each reported in
    # eval.json's "robustness": true for all of nominal, push, mass_minus20, mass_plus20,
    # command_edges, or a list of them; false: none (eval.json as without the option). Any, not
    # list[str]: Hydra reads robustness=true as a bool. Normalized to the list of names.
    robustness: Any = False
    push_step: int = 150  # the episode step the push acts in (50 Hz: 3 s into the episode)
    push_velocity: list[float] = field(default_factory=lambda: [0.0, 0.75, 0.0])  # m/s, world

    def __post_init__(self) -> None:
        # ConfigError: one line on the command line (flashsac_bench.cli.errors).
        self.robustness = condition_names(self.robustness)
        if self.push_step < 1:
            raise ConfigError(f"push_step must be >= 1, got {self.push_step}")
        if len(self.push_velocity) != 3:
            raise ConfigError(f"push_velocity must be [x, y, z] (m/s), got {self.push_velocity}")
        if self.episodes < 1 or self.num_envs < 1:
            raise ConfigError("episodes and num_envs must be >= 1")
        if self.penalty_scale not in ("checkpoint", "initial"):
            raise ConfigError(
                f"penalty_scale must be checkpoint or initial, got {self.penalty_scale!r}"
            )
