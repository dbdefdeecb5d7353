from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from flashsac_bench.config.backend import EnvPlan
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.options import OptionGroup, installed
from flashsac_bench.config.values import FLOAT_BOUND, INT_MAX, ranged, require_bounded

TASKS = ("g1_walk_flat", "gymnasium")

# Canonical order of the 29 actuated G1 joints: left leg, right leg, waist, left arm, right arm.
NUM_JOINTS = 29
GRAVITY_FRAMES = ("body", "world")
# Physics substeps per control step, control steps per episode: past these a typo, not a task.
MAX_DECIMATION = 1000
MAX_EPISODE_STEPS = 10_000_000
# Velocity commands (m/s, rad/s) and reward weights past these are typos: no legged robot
# tracks them, and the returns they give near float32's limits teach nothing.
MAX_COMMAND = 100.0
MAX_REWARD_WEIGHT = 1e4


def _weight(default: float) -> float:
    """A reward weight's field: within MAX_REWARD_WEIGHT."""
    return ranged(default, low=-MAX_REWARD_WEIGHT, high=MAX_REWARD_WEIGHT)


def _command_range(low: float, high: float) -> list[float]:
    """A command range's field, [low, high] within MAX_COMMAND."""
    return ranged(low=-MAX_COMMAND, high=MAX_COMMAND, default_factory=lambda: [low, high])


def _check_range(where: str, values: list[float]) -> None:
    if len(values) != 2 or not values[0] <= values[1]:
        raise ConfigError(f"{where} must be [low, high] with low <= high, got {values}")


@dataclass
class CommandRanges:
    vx: list[float] = _command_range(-0.6, 1.0)
    vy: list[float] = _command_range(-0.4, 0.4)
    wz: list[float] = _command_range(-0.8, 0.8)
    # Planar commands with |(vx, vy)| below this are zeroed (stand still).
    dead_zone: float = ranged(0.2, low=0.0, high=MAX_COMMAND)

    def __post_init__(self) -> None:
        require_bounded(self, "task.commands.")
        for key in ("vx", "vy", "wz"):
            _check_range(f"task.commands.{key}", getattr(self, key))


@dataclass
class RewardWeights:
    """The FlashSAC MuJoCo owner weights of UniLab's G1WalkFlat (unilab-rl 1.4.15)."""

    tracking_lin_vel: float = _weight(2.0)
    tracking_ang_vel: float = _weight(1.5)
    penalty_ang_vel_xy: float = _weight(-1.0)
    penalty_orientation: float = _weight(-10.0)
    penalty_action_rate: float = _weight(-5.0)
    pose: float = _weight(-0.5)
    penalty_feet_ori: float = _weight(-25.0)
    feet_phase: float = _weight(5.0)
    alive: float = _weight(10.0)

    def __post_init__(self) -> None:
        require_bounded(self, "task.rewards.")


@dataclass
class ObsConfig:
    """Observation scales and the policy-only uniform noise (applied before scaling)."""

    # The scales enter products every step: > 0.
    gyro_scale: float = ranged(0.25, low=0.0, high=FLOAT_BOUND, closed="(]")
    joint_vel_scale: float = ranged(0.05, low=0.0, high=FLOAT_BOUND, closed="(]")
    # Critic-only pelvis linear velocity.
    lin_vel_scale: float = ranged(2.0, low=0.0, high=FLOAT_BOUND, closed="(]")
    joint_pos_noise: float = ranged(0.01, low=0.0, high=FLOAT_BOUND)
    joint_vel_noise: float = ranged(0.1, low=0.0, high=FLOAT_BOUND)
    add_noise: bool = True
    # "body": gravity in the torso IMU frame (standard projected gravity). "world": UniLab's
    # -torso_upvector (torso z axis in the world frame), for exact parity with UniLab.
    gravity_frame: str = "body"

    def __post_init__(self) -> None:
        require_bounded(self, "task.obs.")
        if self.gravity_frame not in GRAVITY_FRAMES:
            raise ConfigError(
                f"task.obs.gravity_frame must be one of {GRAVITY_FRAMES}, "
                f"got {self.gravity_frame!r}"
            )


@dataclass
class GaitConfig:
    """Two-foot gait clock (feet half a period apart) and the feet_phase swing-height target."""

    frequency: float = ranged(1.5, low=0.0, high=FLOAT_BOUND)
    swing_height: float = ranged(0.09, low=0.0, high=FLOAT_BOUND)
    # feet_phase = exp(-(sum of squared foot-height errors) / sigma).
    sigma: float = ranged(0.005, low=0.0, high=FLOAT_BOUND, closed="(]")

    def __post_init__(self) -> None:
        require_bounded(self, "task.gait.")


@dataclass
class CurriculumConfig:
    """Penalty curriculum: negative-weight terms are multiplied by a scale that shrinks by
    (1 - degree) whenever the tracked mean episode length is below level_down_threshold and
    grows by (1 + degree) above level_up_threshold, clipped to [min_scale, max_scale]."""

    enabled: bool = True
    initial_scale: float = 0.0625
    min_scale: float = 0.0625
    max_scale: float = 0.125
    # Mean episode lengths, in control steps.
    level_down_threshold: float = ranged(150.0, low=0.0, high=MAX_EPISODE_STEPS)
    level_up_threshold: float = ranged(750.0, low=0.0, high=MAX_EPISODE_STEPS)
    degree: float = ranged(0.001, low=0.0, high=1.0, closed="[)")
    # Mean episode length is an EMA; window is for 4096 envs and scales with num_envs.
    window: int = ranged(1000, low=1, high=INT_MAX)

    def __post_init__(self) -> None:
        require_bounded(self, "task.curriculum.")
        if not 0 <= self.min_scale <= self.initial_scale <= self.max_scale:
            raise ConfigError(
                "task.curriculum needs 0 <= min_scale <= initial_scale <= max_scale, got "
                f"{self.min_scale}, {self.initial_scale}, {self.max_scale}"
            )
        if self.level_down_threshold > self.level_up_threshold:
            raise ConfigError("task.curriculum.level_down_threshold must be <= level_up_threshold")


@dataclass
class ResetConfig:
    """Reset randomization around the `stand` keyframe (uniform, symmetric ranges)."""

    xy: float = ranged(0.5, low=0.0, high=FLOAT_BOUND)
    yaw: float = ranged(math.pi, low=0.0, high=FLOAT_BOUND)
    # All six root velocity components (linear: world frame, angular: pelvis frame).
    root_vel: float = ranged(0.5, low=0.0, high=FLOAT_BOUND)
    # One multiplier per env for all kp, one for all kd, redrawn at every reset.
    kp_scale: list[float] = ranged(low=0.0, high=FLOAT_BOUND, default_factory=lambda: [0.9, 1.1])
    kd_scale: list[float] = ranged(low=0.0, high=FLOAT_BOUND, default_factory=lambda: [0.9, 1.1])

    def __post_init__(self) -> None:
        require_bounded(self, "task.reset.")
        _check_range("task.reset.kp_scale", self.kp_scale)
        _check_range("task.reset.kd_scale", self.kd_scale)


def _default_pose_weights() -> list[float]:
    # UniLab's FlashSAC MuJoCo owner: per-leg [hip pitch, hip roll, hip yaw, knee, ankle pitch,
    # ankle roll] = [0.01, 2, 5, 0.01, 5, 5]; waist and arms 50.
    leg = [0.01, 2.0, 5.0, 0.01, 5.0, 5.0]
    return leg + leg + [50.0] * 17


@dataclass
class BaseTaskConfig(OptionGroup):
    """The task the envs run (group `task`): what every task has. Each task has a schema of its
    own (TaskConfig: the G1's; GymnasiumTaskConfig; its YAML in conf/task/ starts from it), so
    that a composed config holds the keys its task reads and no others."""

    GROUP: ClassVar[str] = "task"
    OPTIONS: ClassVar[tuple[str, ...]] = TASKS
    # Whether a backend (group `backend`) steps the task's envs; a task that steps them itself
    # composes none (Config.backend None) and says what does (`stepped_by`).
    USES_BACKEND: ClassVar[bool] = True

    # "g1_walk_flat": the G1 walk this project is built around; "gymnasium": any Gymnasium env.
    name: str = "g1_walk_flat"

    def __post_init__(self) -> None:
        require_bounded(self, "task.")
        self.check_name(self.name)

    @classmethod
    def _schemas(cls) -> dict[str, type[Any]]:
        return {"g1_walk_flat": TaskConfig, "gymnasium": GymnasiumTaskConfig}

    @property
    def stepped_by(self) -> str:
        """What steps the envs of a task that uses no backend (for messages)."""
        return "a backend"

    def plan(self, num_envs: int) -> EnvPlan:
        """How a task that uses no backend steps its envs; a backend's task has the backend's
        plan (BackendConfig.plan), never its own."""
        raise ConfigError(f"task={self.name} is stepped by a backend: its plan is the backend's")

    def walk_tracking_top(self) -> float | None:
        """The most lin-vel tracking reward one control step can earn, which the walking
        thresholds of run.stop_at_walk are judged against; None: a task that has no walking
        thresholds."""
        return None

    def check_available(self) -> None:
        """Refuse a task whose packages are not installed (one line naming the install
        command); not part of __post_init__, as backends' (config.backend)."""


@dataclass
class TaskConfig(BaseTaskConfig):
    """task=g1_walk_flat: the G1 walking on flat ground (owned by flashsac_bench.envs)."""

    name: str = "g1_walk_flat"
    # None: the built-in G1 model (flashsac_bench.envs.g1.model). A path: any external G1 MJCF
    # (visual meshes it names but that are missing are stripped).
    model_file: str | None = None
    ctrl_dt: float = ranged(0.02, low=0.0, high=FLOAT_BOUND, closed="(]")
    decimation: int = ranged(3, low=1, high=MAX_DECIMATION)
    episode_length_s: float = ranged(20.0, low=0.0, high=FLOAT_BOUND, closed="(]")
    action_scale: float = ranged(1.0, low=0.0, high=FLOAT_BOUND, closed="(]")
    commands: CommandRanges = field(default_factory=CommandRanges)
    rewards: RewardWeights = field(default_factory=RewardWeights)
    tracking_sigma: float = ranged(0.25, low=0.0, high=FLOAT_BOUND, closed="(]")
    termination_tilt_deg: float = ranged(65.0, low=0.0, high=180.0, closed="(]")
    termination_min_height: float = 0.3
    # Weighted squared deviation from the default pose, canonical joint order: legs [hip pitch,
    # hip roll, hip yaw, knee, ankle pitch, ankle roll] x 2, waist [yaw, roll, pitch], arms
    # [shoulder pitch, roll, yaw, elbow, wrist roll, pitch, yaw] x 2. Weights of a squared
    # deviation: a negative one would reward leaving the pose.
    pose_weights: list[float] = ranged(
        low=0.0, high=MAX_REWARD_WEIGHT, default_factory=_default_pose_weights
    )
    obs: ObsConfig = field(default_factory=ObsConfig)
    gait: GaitConfig = field(default_factory=GaitConfig)
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    reset: ResetConfig = field(default_factory=ResetConfig)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._require_name("g1_walk_flat")
        if self.max_episode_steps < 1:
            raise ConfigError("task.episode_length_s must be at least one control step")
        if self.max_episode_steps > MAX_EPISODE_STEPS:
            raise ConfigError(
                f"task.episode_length_s / task.ctrl_dt must be <= {MAX_EPISODE_STEPS} control "
                f"steps, got {self.max_episode_steps}"
            )
        if len(self.pose_weights) != NUM_JOINTS:
            raise ConfigError(
                f"task.pose_weights needs {NUM_JOINTS} entries, got {len(self.pose_weights)}"
            )

    @property
    def max_episode_steps(self) -> int:
        return int(round(self.episode_length_s / self.ctrl_dt))

    @property
    def sim_dt(self) -> float:
        return self.ctrl_dt / self.decimation

    def walk_tracking_top(self) -> float:
        return self.rewards.tracking_lin_vel * self.ctrl_dt


VECTORIZATIONS = ("sync", "async")
GYMNASIUM_MISSING = (
    "task=gymnasium needs the [gymnasium] extra (gymnasium not installed): "
    'pip install -e ".[gymnasium]"'
)


@dataclass
class GymnasiumTaskConfig(BaseTaskConfig):
    """task=gymnasium: any registered Gymnasium env with a flat Box observation, a bounded Box
    action space and a time limit ([gymnasium] extra; flashsac_bench/envs/gymnasium/env.py).
    Gymnasium's vector env steps the run.num_envs envs, so no backend applies.

    What the learner needs beyond these keys is the env's or the learner's: the actor's
    actions in [-1, 1] are always scaled to the env's action bounds; critic_obs is obs; the
    observation needs no normalizer of its own (the networks' first layer is a BatchNorm, as
    FlashSAC's embedder), and the rewards go through the learner's return-based normalizer
    (learner.normalize_reward), which keeps the normalized returns inside the critic's
    [v_min, v_max] support whatever the task's reward scale is."""

    USES_BACKEND: ClassVar[bool] = False

    name: str = "gymnasium"
    # The registered env (gymnasium.make's id), e.g. HalfCheetah-v5, Humanoid-v5.
    env_id: str = "HalfCheetah-v5"
    # How the envs are stepped: "sync", one after another in this process (SyncVectorEnv);
    # "async", each in a worker process of its own (AsyncVectorEnv, spawned): for envs whose
    # step costs more than a pipe round trip (Humanoid at 16+ envs).
    vectorization: str = "sync"

    def __post_init__(self) -> None:
        super().__post_init__()
        self._require_name("gymnasium")
        if not self.env_id.strip():
            raise ConfigError("task.env_id must name a registered Gymnasium env, got ''")
        if self.vectorization not in VECTORIZATIONS:
            raise ConfigError(
                f"task.vectorization must be one of {VECTORIZATIONS}, got {self.vectorization!r}"
            )

    @property
    def stepped_by(self) -> str:
        return f"Gymnasium's vector env, task.vectorization={self.vectorization}"

    def plan(self, num_envs: int) -> EnvPlan:
        """Sync: every env in this process; async: one worker process per env."""
        if self.vectorization == "async":
            return EnvPlan("async", num_envs, 1)
        return EnvPlan("sync", 0, 1)

    def check_available(self) -> None:
        if not installed("gymnasium"):
            raise ConfigError(GYMNASIUM_MISSING)
