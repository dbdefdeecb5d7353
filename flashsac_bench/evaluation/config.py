"""The options of `python -m flashsac_bench.evaluate` (typed: unknown keys and types fail)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.values import require_finite, require_positive
from flashsac_bench.evaluation.robustness import condition_names

DEVICES = ("cpu", "cuda", "auto")
DTYPES = ("float32", "bfloat16", "checkpoint")
# Offscreen frames: MuJoCo's framebuffer is sized to them (render.render_frames).
MIN_PIXELS, MAX_PIXELS = 8, 4096
MAX_EPISODES = 1_000_000


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
    # A checkpoint whose training ran with logger=wandb: the evaluation also goes to that W&B
    # run (the GIF as media eval/rollout, the goals as eval/* values, at the checkpoint's
    # iteration). false: eval.json only. (Not `logger`: that names the training's config group.)
    wandb: bool = True

    def __post_init__(self) -> None:
        # ConfigError: one line on the command line (flashsac_bench.cli.errors). Everything
        # that can be checked without the checkpoint is checked here, before any rollout.
        require_finite(self, "")
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
        if self.episodes > MAX_EPISODES or self.num_envs > MAX_EPISODES:
            raise ConfigError(f"episodes and num_envs must be <= {MAX_EPISODES}")
        dev = self.device
        if not (dev in DEVICES or (dev.startswith("cuda:") and dev[5:].isdigit())):
            raise ConfigError(f"device must be cpu, cuda, cuda:N or auto, got {dev!r}")
        if self.dtype not in DTYPES:
            raise ConfigError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.threads < 0:
            raise ConfigError(
                f"threads must be >= 0 (0: the checkpoint's backend), got {self.threads}"
            )
        if self.seed < 0:
            raise ConfigError(f"seed must be >= 0, got {self.seed}")
        for key in ("width", "height"):
            value = getattr(self, key)
            if not MIN_PIXELS <= value <= MAX_PIXELS:
                raise ConfigError(
                    f"{key} must be in [{MIN_PIXELS}, {MAX_PIXELS}] pixels, got {value}"
                )
        if self.render_fps < 1:
            raise ConfigError(
                f"render_fps must be >= 1 (and divide the control rate), got {self.render_fps}"
            )
        if self.strip_frames < 1:
            raise ConfigError(f"strip_frames must be >= 1, got {self.strip_frames}")
        if not 0 <= self.render_env < min(self.num_envs, self.episodes):
            raise ConfigError(
                f"render_env must be an env of this evaluation, in [0, "
                f"{min(self.num_envs, self.episodes) - 1}], got {self.render_env}"
            )
        require_positive("render_seconds", self.render_seconds)
        require_positive("camera_distance", self.camera_distance)
