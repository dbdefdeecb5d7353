from __future__ import annotations

import math
from dataclasses import dataclass, field

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.values import require_finite, require_positive

# Canonical order of the 29 actuated G1 joints: left leg, right leg, waist, left arm, right arm.
NUM_JOINTS = 29
GRAVITY_FRAMES = ("body", "world")
# Physics substeps per control step, control steps per episode: past these a typo, not a task.
MAX_DECIMATION = 1000
MAX_EPISODE_STEPS = 10_000_000


def _check_range(where: str, values: list[float], *, nonneg: bool = False) -> None:
    if len(values) != 2 or not values[0] <= values[1]:
        raise ConfigError(f"{where} must be [low, high] with low <= high, got {values}")
    if nonneg and values[0] < 0:
        raise ConfigError(f"{where} must be non-negative, got {values}")


@dataclass
class CommandRanges:
    vx: list[float] = field(default_factory=lambda: [-0.6, 1.0])
    vy: list[float] = field(default_factory=lambda: [-0.4, 0.4])
    wz: list[float] = field(default_factory=lambda: [-0.8, 0.8])
    # Planar commands with |(vx, vy)| below this are zeroed (stand still).
    dead_zone: float = 0.2

    def __post_init__(self) -> None:
        require_finite(self, "task.commands.")
        for key in ("vx", "vy", "wz"):
            _check_range(f"task.commands.{key}", getattr(self, key))
        if self.dead_zone < 0:
            raise ConfigError(f"task.commands.dead_zone must be >= 0, got {self.dead_zone}")


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

    def __post_init__(self) -> None:
        require_finite(self, "task.rewards.")


@dataclass
class ObsConfig:
    """Observation scales and the policy-only uniform noise (applied before scaling)."""

    gyro_scale: float = 0.25
    joint_vel_scale: float = 0.05
    # Critic-only pelvis linear velocity.
    lin_vel_scale: float = 2.0
    joint_pos_noise: float = 0.01
    joint_vel_noise: float = 0.1
    add_noise: bool = True
    # "body": gravity in the torso IMU frame (standard projected gravity). "world": UniLab's
    # -torso_upvector (torso z axis in the world frame), for exact parity with UniLab.
    gravity_frame: str = "body"

    def __post_init__(self) -> None:
        require_finite(self, "task.obs.")
        if self.gravity_frame not in GRAVITY_FRAMES:
            raise ConfigError(
                f"task.obs.gravity_frame must be one of {GRAVITY_FRAMES}, "
                f"got {self.gravity_frame!r}"
            )
        if min(self.joint_pos_noise, self.joint_vel_noise) < 0:
            raise ConfigError("task.obs noise amplitudes must be >= 0")


@dataclass
class GaitConfig:
    """Two-foot gait clock (feet half a period apart) and the feet_phase swing-height target."""

    frequency: float = 1.5
    swing_height: float = 0.09
    # feet_phase = exp(-(sum of squared foot-height errors) / sigma).
    sigma: float = 0.005

    def __post_init__(self) -> None:
        require_finite(self, "task.gait.")
        if self.frequency < 0 or self.swing_height < 0:
            raise ConfigError("task.gait.frequency and task.gait.swing_height must be >= 0")
        if self.sigma <= 0:
            raise ConfigError(f"task.gait.sigma must be > 0, got {self.sigma}")


@dataclass
class CurriculumConfig:
    """Penalty curriculum: negative-weight terms are multiplied by a scale that shrinks by
    (1 - degree) whenever the tracked mean episode length is below level_down_threshold and
    grows by (1 + degree) above level_up_threshold, clipped to [min_scale, max_scale]."""

    enabled: bool = True
    initial_scale: float = 0.0625
    min_scale: float = 0.0625
    max_scale: float = 0.125
    level_down_threshold: float = 150.0
    level_up_threshold: float = 750.0
    degree: float = 0.001
    # Mean episode length is an EMA; window is for 4096 envs and scales with num_envs.
    window: int = 1000

    def __post_init__(self) -> None:
        require_finite(self, "task.curriculum.")
        if not 0 <= self.min_scale <= self.initial_scale <= self.max_scale:
            raise ConfigError(
                "task.curriculum needs 0 <= min_scale <= initial_scale <= max_scale, got "
                f"{self.min_scale}, {self.initial_scale}, {self.max_scale}"
            )
        if self.level_down_threshold > self.level_up_threshold:
            raise ConfigError("task.curriculum.level_down_threshold must be <= level_up_threshold")
        if not 0 <= self.degree < 1:
            raise ConfigError(f"task.curriculum.degree must be in [0, 1), got {self.degree}")
        if self.window < 1:
            raise ConfigError(f"task.curriculum.window must be >= 1, got {self.window}")


@dataclass
class ResetConfig:
    """Reset randomization around the `stand` keyframe (uniform, symmetric ranges)."""

    xy: float = 0.5
    yaw: float = math.pi
    # All six root velocity components (linear: world frame, angular: pelvis frame).
    root_vel: float = 0.5
    # One multiplier per env for all kp, one for all kd, redrawn at every reset.
    kp_scale: list[float] = field(default_factory=lambda: [0.9, 1.1])
    kd_scale: list[float] = field(default_factory=lambda: [0.9, 1.1])

    def __post_init__(self) -> None:
        require_finite(self, "task.reset.")
        if min(self.xy, self.yaw, self.root_vel) < 0:
            raise ConfigError("task.reset.xy, yaw and root_vel must be >= 0")
        _check_range("task.reset.kp_scale", self.kp_scale, nonneg=True)
        _check_range("task.reset.kd_scale", self.kd_scale, nonneg=True)


def _default_pose_weights() -> list[float]:
    # UniLab's FlashSAC MuJoCo owner: per-leg [hip pitch, hip roll, hip yaw, knee, ankle pitch,
    # ankle roll] = [0.01, 2, 5, 0.01, 5, 5]; waist and arms 50.
    leg = [0.01, 2.0, 5.0, 0.01, 5.0, 5.0]
    return leg + leg + [50.0] * 17


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
    # Weighted squared deviation from the default pose, canonical joint order.
    pose_weights: list[float] = field(default_factory=_default_pose_weights)
    obs: ObsConfig = field(default_factory=ObsConfig)
    gait: GaitConfig = field(default_factory=GaitConfig)
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    reset: ResetConfig = field(default_factory=ResetConfig)

    def __post_init__(self) -> None:
        require_finite(self, "task.")
        if self.name != "g1_walk_flat":
            raise ConfigError(f"task.name must be 'g1_walk_flat', got {self.name!r}")
        if not 1 <= self.decimation <= MAX_DECIMATION:
            raise ConfigError(
                f"task.decimation must be in [1, {MAX_DECIMATION}], got {self.decimation}"
            )
        if self.ctrl_dt <= 0 or self.episode_length_s <= 0:
            raise ConfigError("task.ctrl_dt and task.episode_length_s must be > 0")
        if self.max_episode_steps < 1:
            raise ConfigError("task.episode_length_s must be at least one control step")
        if self.max_episode_steps > MAX_EPISODE_STEPS:
            raise ConfigError(
                f"task.episode_length_s / task.ctrl_dt must be <= {MAX_EPISODE_STEPS} control "
                f"steps, got {self.max_episode_steps}"
            )
        if self.action_scale <= 0:
            raise ConfigError(f"task.action_scale must be > 0, got {self.action_scale}")
        if self.tracking_sigma <= 0:
            raise ConfigError(f"task.tracking_sigma must be > 0, got {self.tracking_sigma}")
        if not 0 < self.termination_tilt_deg <= 180:
            raise ConfigError("task.termination_tilt_deg must be in (0, 180]")
        if len(self.pose_weights) != NUM_JOINTS:
            raise ConfigError(
                f"task.pose_weights needs {NUM_JOINTS} entries, got {len(self.pose_weights)}"
            )
        # Weights of a squared deviation: a negative one would reward leaving the pose.
        if min(self.pose_weights) < 0:
            raise ConfigError(f"task.pose_weights must be >= 0, got {self.pose_weights}")
        # The reward and observation scales enter products and exponents every step.
        for key in ("gyro_scale", "joint_vel_scale", "lin_vel_scale"):
            require_positive(f"task.obs.{key}", getattr(self.obs, key))

    @property
    def max_episode_steps(self) -> int:
        return int(round(self.episode_length_s / self.ctrl_dt))

    @property
    def sim_dt(self) -> float:
        return self.ctrl_dt / self.decimation
