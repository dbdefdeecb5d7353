"""The options of `python -m flashsac_bench.evaluate` (typed: unknown keys and types fail)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.run import MAX_SEED
from flashsac_bench.config.task import MAX_EPISODE_STEPS
from flashsac_bench.config.values import FLOAT_BOUND, ranged, require_bounded
from flashsac_bench.evaluation.robustness import condition_names

DEVICES = ("cpu", "cuda", "auto")
DTYPES = ("float32", "bfloat16", "checkpoint")
# Offscreen frames: MuJoCo's framebuffer is sized to them (render.render_frames).
MIN_PIXELS, MAX_PIXELS = 8, 4096
MAX_EPISODES = 1_000_000
MAX_THREADS = 4096
# Frames per second of the video, frames of the strip: past these a typo.
MAX_FPS = 1000
MAX_STRIP_FRAMES = 1000
# A push faster than this (m/s) throws the robot, it does not test it.
MAX_PUSH_VELOCITY = 100.0


@dataclass
class EvalConfig:
    checkpoint: str = "???"  # run dir, checkpoints dir or iter_*.pt (required)
    episodes: int = ranged(8, low=1, high=MAX_EPISODES)
    # envs stepped together (at most `episodes`)
    num_envs: int = ranged(8, low=1, high=MAX_EPISODES)
    seed: int = ranged(12345, low=0, high=MAX_SEED)  # env seed (resets, commands, obs noise)
    device: str = "cpu"  # where the policy runs: cpu, cuda, auto
    dtype: str = "float32"  # policy matmuls: float32, bfloat16, checkpoint (= training dtype)
    # MuJoCo threads of the in-process pool (forces backend.mode=threads); 0: the checkpoint's
    # backend setting (worker processes or threads, as in training).
    threads: int = ranged(0, low=0, high=MAX_THREADS)
    # The penalty-curriculum scale to evaluate with: "checkpoint" (the training env's, so that
    # returns compare with training) or "initial" (the task's initial_scale).
    penalty_scale: str = "checkpoint"
    out_dir: str | None = None  # default: the run dir of the checkpoint
    render: bool = True
    render_env: int = 0
    # at most this much of the env's first episode
    render_seconds: float = ranged(8.0, low=0.0, high=FLOAT_BOUND, closed="(]")
    render_fps: int = ranged(25, low=1, high=MAX_FPS)  # must divide the control rate (G1: 50 Hz)
    width: int = ranged(320, low=MIN_PIXELS, high=MAX_PIXELS)
    height: int = ranged(240, low=MIN_PIXELS, high=MAX_PIXELS)
    camera_distance: float = ranged(3.0, low=0.0, high=FLOAT_BOUND, closed="(]")
    camera_elevation: float = ranged(-15.0, low=-90.0, high=90.0)
    camera_azimuth: float = ranged(135.0, low=-360.0, high=360.0)
    strip_frames: int = ranged(6, low=1, high=MAX_STRIP_FRAMES)
    # Conditions no training run saw (flashsac_bench/evaluation/robustness.py), each reported in
    # eval.json's "robustness": true for all of nominal, push, mass_minus20, mass_plus20,
    # command_edges, or a list of them; false: none (eval.json as without the option). Any, not
    # list[str]: Hydra reads robustness=true as a bool. Normalized to the list of names.
    robustness: Any = False
    # the episode step the push acts in (50 Hz: 3 s into the episode)
    push_step: int = ranged(150, low=1, high=MAX_EPISODE_STEPS)
    push_velocity: list[float] = ranged(  # m/s, world
        low=-MAX_PUSH_VELOCITY, high=MAX_PUSH_VELOCITY, default_factory=lambda: [0.0, 0.75, 0.0]
    )
    # A checkpoint whose training ran with logger=wandb: the evaluation also goes to that W&B
    # run (the GIF as media eval/rollout, the goals as eval/* values, at the checkpoint's
    # iteration). false: eval.json only. (Not `logger`: that names the training's config group.)
    wandb: bool = True

    def __post_init__(self) -> None:
        # ConfigError: one line on the command line (flashsac_bench.cli.errors). Everything
        # that can be checked without the checkpoint is checked here, before any rollout.
        require_bounded(self, "")
        self.robustness = condition_names(self.robustness)
        if len(self.push_velocity) != 3:
            raise ConfigError(f"push_velocity must be [x, y, z] (m/s), got {self.push_velocity}")
        if self.penalty_scale not in ("checkpoint", "initial"):
            raise ConfigError(
                f"penalty_scale must be checkpoint or initial, got {self.penalty_scale!r}"
            )
        dev = self.device
        if not (dev in DEVICES or (dev.startswith("cuda:") and dev[5:].isdigit())):
            raise ConfigError(f"device must be cpu, cuda, cuda:N or auto, got {dev!r}")
        if self.dtype not in DTYPES:
            raise ConfigError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if not 0 <= self.render_env < min(self.num_envs, self.episodes):
            raise ConfigError(
                f"render_env must be an env of this evaluation, in [0, "
                f"{min(self.num_envs, self.episodes) - 1}], got {self.render_env}"
            )
