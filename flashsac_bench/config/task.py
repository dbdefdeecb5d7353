from __future__ import annotations

from dataclasses import dataclass, field

from flashsac_bench.config.errors import ConfigError


@dataclass
class CommandRanges:
    vx: list[float] = field(default_factory=lambda: [-0.6, 1.0])
    vy: list[float] = field(default_factory=lambda: [-0.4, 0.4])
    wz: list[float] = field(default_factory=lambda: [-0.8, 0.8])
    # Planar commands with |(vx, vy)| below this are zeroed (stand still).
    dead_zone: float = 0.2


@dataclass
class RewardWeights:
    """The FlashSAC MuJoCo owner weights of UniLab's G1WalkFlat (unilab.md §4.2)."""

    tracking_lin_vel: float = 2.0
    tracking_ang_vel: float = 1.5
    penalty_ang_vel_xy: float = -1.0
    penalty_orientation: float = -10.0
    penalty_action_rate: float = -5.0
    pose: float = -0.5
    penalty_feet_ori: float = -25.0
    feet_phase: float = 5.0
    alive: float = 10.0


@dataclass
class TaskConfig:
    """The task the envs run (group `task`). Owned by flashsac_bench.envs."""

    name: str = "g1_walk_flat"
    # None: the built-in G1 model (flashsac_bench.envs.g1_model). A path: any external G1 MJCF.
    model_file: str | None = None
    ctrl_dt: float = 0.02
    decimation: int = 3
    episode_length_s: float = 20.0
    action_scale: float = 1.0
    commands: CommandRanges = field(default_factory=CommandRanges)
    rewards: RewardWeights = field(default_factory=RewardWeights)
    tracking_sigma: float = 0.25
    termination_tilt_deg: float = 65.0
    termination_min_height: float = 0.3

    def __post_init__(self) -> None:
        if self.name != "g1_walk_flat":
            raise ConfigError(f"task.name must be 'g1_walk_flat', got {self.name!r}")
        if self.decimation < 1:
            raise ConfigError(f"task.decimation must be >= 1, got {self.decimation}")
        if self.ctrl_dt <= 0 or self.episode_length_s <= 0:
            raise ConfigError("task.ctrl_dt and task.episode_length_s must be > 0")

    @property
    def max_episode_steps(self) -> int:
        return int(round(self.episode_length_s / self.ctrl_dt))
