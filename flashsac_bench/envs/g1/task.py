"""The task of G1 Walk Flat as pure functions: one definition that both backends run.

The CPU backend (`g1.cpu.shard`, numpy float64, in the shard workers) and the MuJoCo Warp backend
(`g1.warp.walk_warp`, torch float64 tensors on the physics' device) call the same functions for
every quantity of the task: what is read from the physics, the observations and their noise, each
reward term (`g1.rewards`), its weighting under the penalty curriculum, terminations, the
blown-up-env guard, truncations, the reset draw (pose, root velocity, gains, command, gait phase)
and the curriculum's update. Each backend only moves the arrays: where they live, which rows a reset
touches, how the random numbers are drawn (the same counter-based streams, `g1.env_rng` and
`g1.warp.env_rng_torch`), and how the physics is stepped. The contract of every quantity is in
`g1.cpu.walk_flat`'s module docstring.

The functions take arrays of either library and compute with `array_ops.ops(x)`; on numpy they
are the operations the CPU backend always ran, in the same order, so its numbers do not change
by one bit (tests/test_smoke_fingerprint.py). Float64 throughout: the Warp backend converts its
float32 physics state once per read, so the two backends differ only by their physics.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, NamedTuple

import numpy as np

from flashsac_bench.config.task import (
    CommandRanges,
    CurriculumConfig,
    ObsConfig,
    ResetConfig,
    RewardWeights,
    TaskConfig,
)
from flashsac_bench.envs.g1 import rewards as R
from flashsac_bench.envs.g1.array_ops import ops
from flashsac_bench.envs.g1.layout import G1Layout

Array = Any  # a numpy array or a torch tensor (see array_ops)

NUM_JOINTS = 29
OBS_DIM = 98
CRITIC_OBS_DIM = 101
# Policy observation layout.
GYRO, GRAVITY = slice(0, 3), slice(3, 6)
JOINT_POS, JOINT_VEL, ACTION = slice(6, 35), slice(35, 64), slice(64, 93)
COMMAND, PHASE, LIN_VEL = slice(93, 96), slice(96, 98), slice(98, 101)
# The observation noise covers the joint positions and velocities (contiguous).
NOISY = slice(JOINT_POS.start, JOINT_VEL.stop)
REWARD_TERMS: tuple[str, ...] = tuple(f.name for f in fields(RewardWeights))

# Random streams of each env, and how many numbers one draw of each takes.
NOISE_STREAM, RESET_STREAM = 0, 1
NOISE_VALUES = 2 * NUM_JOINTS
# xy (2), yaw, root velocity (6), kp, kd, command (3), left-foot phase.
RESET_VALUES = 15


@dataclass(frozen=True)
class TaskIndex:
    """Where the task reads in qpos / qvel / sensordata (slices where the model's indices are
    contiguous, as the built-in model's are: views instead of gathers, the same values), and the
    default joint pose, as objects of one array library."""

    joint_qpos: slice | Array
    joint_qvel: slice | Array
    root_z: int  # qpos index of the pelvis height
    gyro: slice
    torso_quat: slice
    lin_vel: slice
    left_quat: slice
    right_quat: slice
    feet_z: Array  # the two foot heights in sensordata
    default_joint_pos: Array  # (29,)

    @classmethod
    def from_layout(cls, layout: G1Layout, convert: Any = None) -> TaskIndex:
        """The index of `layout`; `convert` turns a numpy array into the other library's (None:
        numpy)."""
        to = convert or (lambda a: a)
        sens = layout.sensors

        def index(a: np.ndarray) -> slice | Array:
            s = as_slice(a)
            return s if isinstance(s, slice) else to(s)

        feet = np.array([sens["left_foot_pos"].start + 2, sens["right_foot_pos"].start + 2])
        return cls(
            joint_qpos=index(layout.joint_qpos),
            joint_qvel=index(layout.joint_qvel),
            root_z=layout.root_qpos + 2,
            gyro=sens["torso_gyro"],
            torso_quat=sens["torso_quat"],
            lin_vel=sens["pelvis_local_linvel"],
            left_quat=sens["left_foot_quat"],
            right_quat=sens["right_foot_quat"],
            feet_z=to(feet),
            default_joint_pos=to(layout.default_joint_pos),
        )


class Quantities(NamedTuple):
    """The task's reading of the physics state of some envs (float64)."""

    joint_pos_rel: Array  # (N, 29) joint positions minus the default pose
    joint_vel: Array  # (N, 29)
    gyro: Array  # (N, 3) torso IMU, local frame
    lin_vel: Array  # (N, 3) pelvis velocimeter, local frame
    gravity: Array  # (N, 3) the observation's gravity direction (task.obs.gravity_frame)
    up: Array  # (N, 3) the torso z axis in the world frame
    feet_z: Array  # (N, 2)
    left_quat: Array  # (N, 4) foot frames, world
    right_quat: Array


def read(qpos: Array, qvel: Array, sens: Array, idx: TaskIndex, gravity_frame: str) -> Quantities:
    """The task's quantities from the rows of qpos / qvel / sensordata given."""
    up, gravity = R.up_and_gravity(sens[:, idx.torso_quat])
    if gravity_frame == "world":
        gravity = -up
    return Quantities(
        joint_pos_rel=qpos[:, idx.joint_qpos] - idx.default_joint_pos,
        joint_vel=qvel[:, idx.joint_qvel],
        gyro=sens[:, idx.gyro],
        lin_vel=sens[:, idx.lin_vel],
        gravity=gravity,
        up=up,
        feet_z=sens[:, idx.feet_z],
        left_quat=sens[:, idx.left_quat],
        right_quat=sens[:, idx.right_quat],
    )


# -- observations ---------------------------------------------------------------------------


def critic_obs(q: Quantities, action: Array, command: Array, phase: Array, cfg: ObsConfig) -> Array:
    """The critic observation (N, 101), float64: its writer rounds it to float32 once."""
    xp = ops(q.gyro)
    return xp.concat_cols(
        (
            q.gyro * cfg.gyro_scale,
            q.gravity,
            q.joint_pos_rel,
            q.joint_vel * cfg.joint_vel_scale,
            action,
            command,
            phase,
            q.lin_vel * cfg.lin_vel_scale,
        )
    )


def noise_scale(cfg: ObsConfig) -> np.ndarray:
    """Amplitude of the policy's uniform noise on each NOISY column (velocity: scaled too)."""
    return np.concatenate(
        (
            np.full(NUM_JOINTS, cfg.joint_pos_noise),
            np.full(NUM_JOINTS, cfg.joint_vel_noise * cfg.joint_vel_scale),
        )
    )


def policy_obs(critic32: Array, unit: Array | None, scale: Array) -> Array:
    """The policy observation (N, 98), float32, from the float32 critic observation: its first
    98 columns, plus (2 u - 1) * scale on the NOISY columns for uniform `unit` (N, 58) (None:
    no noise), added in float64 and rounded once."""
    xp = ops(critic32)
    obs = xp.float32(critic32[:, :OBS_DIM])
    if unit is not None:
        noise = (unit * 2.0 - 1.0) * scale
        xp.add_rounded(obs[:, NOISY], noise)
    return obs


# -- rewards ----------------------------------------------------------------------------------


def reward_weights(cfg: TaskConfig) -> tuple[np.ndarray, np.ndarray]:
    """(w_i * ctrl_dt, w_i < 0) in REWARD_TERMS order."""
    weights = np.asarray([getattr(cfg.rewards, k) for k in REWARD_TERMS])
    return weights * cfg.ctrl_dt, weights < 0


def scaled_weights(weights: Array, is_penalty: Array, scale: Any) -> Array:
    """The step's weights: the penalties' times the curriculum scale."""
    return ops(weights).where(is_penalty, weights * scale, weights)


def raw_rewards(
    q: Quantities,
    command: Array,
    action: Array,
    last_action: Array,
    phase: Array,
    alive: Array,
    cfg: TaskConfig,
    pose_weights: Array,
) -> dict[str, Array]:
    """Every term's unweighted value (N,), in REWARD_TERMS order; `alive` is ones (N,)."""
    sigma, gait = cfg.tracking_sigma, cfg.gait
    return {
        "tracking_lin_vel": R.tracking_lin_vel(command[:, :2], q.lin_vel[:, :2], sigma),
        "tracking_ang_vel": R.tracking_ang_vel(command[:, 2], q.gyro[:, 2], sigma),
        "penalty_ang_vel_xy": R.ang_vel_xy(q.gyro),
        "penalty_orientation": R.orientation(q.gravity),
        "penalty_action_rate": R.action_rate(action, last_action),
        "pose": R.pose(q.joint_pos_rel, pose_weights),
        "penalty_feet_ori": R.feet_ori(q.left_quat, q.right_quat),
        "feet_phase": R.feet_phase(q.feet_z, phase, gait.swing_height, gait.sigma),
        "alive": alive,
    }


def weigh(raw: dict[str, Array], weights: Array) -> tuple[list[Array], Array]:
    """(the weighted terms in REWARD_TERMS order, their sum added in that order from 0)."""
    first = raw[REWARD_TERMS[0]]
    total = ops(first).zeros_like(first)
    terms = []
    for name, w in zip(REWARD_TERMS, weights, strict=True):
        term = w * raw[name]
        total += term
        terms.append(term)
    return terms, total


# -- episode ends ---------------------------------------------------------------------------


def terminated(
    q: Quantities, qpos: Array, qvel: Array, idx: TaskIndex, min_up_z: float, min_height: float
) -> Array:
    """A failure: the torso tilted past the limit, the pelvis below the minimum height, or a
    non-finite state."""
    xp = ops(qpos)
    finite = xp.rows_all(xp.isfinite(qpos)) & xp.rows_all(xp.isfinite(qvel))
    return (q.up[:, 2] < min_up_z) | (qpos[:, idx.root_z] < min_height) | ~finite


def broken(critic: Array, reward: Array) -> Array:
    """Rows whose observation or reward is not finite: zeroed and ended, never learned from."""
    xp = ops(critic)
    return ~xp.rows_all(xp.isfinite(critic)) | ~xp.isfinite(reward)


def truncated(episode_step: Array, max_steps: int, terminated: Array) -> Array:
    """The time limit, on a step that did not also terminate (terminated wins)."""
    return (episode_step >= max_steps) & ~terminated


# -- resets -----------------------------------------------------------------------------------


class ResetDraw(NamedTuple):
    """The start of new episodes, drawn from RESET_VALUES uniform numbers per env."""

    qpos: Array  # (k, nq)
    qvel: Array  # (k, nv)
    kp_scale: Array  # (k,)
    kd_scale: Array  # (k,)
    command: Array  # (k, 3)
    phase: Array  # (k, 2)


@dataclass(frozen=True)
class ResetRanges:
    """What a reset draw needs besides the random numbers (arrays of one library)."""

    stand_qpos: Array  # (nq,)
    root_qpos: int
    root_qvel: int
    nv: int
    command_low: Array  # (3,)
    command_span: Array  # (3,)

    @classmethod
    def of(cls, layout: G1Layout, nv: int, cc: CommandRanges, convert: Any = None) -> ResetRanges:
        to = convert or (lambda a: a)
        low = np.array([cc.vx[0], cc.vy[0], cc.wz[0]])
        span = np.array([cc.vx[1], cc.vy[1], cc.wz[1]]) - low
        return cls(to(layout.stand_qpos), layout.root_qpos, layout.root_qvel, nv, to(low), to(span))


def draw_reset(u: Array, ranges: ResetRanges, rc: ResetConfig, cc: CommandRanges) -> ResetDraw:
    """The `stand` keyframe moved by xy, turned by yaw, all six root velocities, one kp and one
    kd multiplier, the command (planar part zeroed inside the dead zone) and the left foot's
    gait phase (the right one half a cycle later), from uniform numbers u (k, RESET_VALUES)."""
    xp = ops(u)
    k = u.shape[0]
    root, vroot = ranges.root_qpos, ranges.root_qvel
    qpos = xp.repeat_rows(ranges.stand_qpos, k)
    qpos[:, root : root + 2] += rc.xy * (2.0 * u[:, 0:2] - 1.0)
    yaw = rc.yaw * (2.0 * u[:, 2] - 1.0)
    qpos[:, root + 3 : root + 7] = R.quat_mul(qpos[:, root + 3 : root + 7], R.yaw_quat(yaw))
    qvel = xp.zeros(k, ranges.nv, u)
    qvel[:, vroot : vroot + 6] = rc.root_vel * (2.0 * u[:, 3:9] - 1.0)
    kp = _between(rc.kp_scale, u[:, 9])
    kd = _between(rc.kd_scale, u[:, 10])
    command = ranges.command_low + ranges.command_span * u[:, 11:14]
    planar = command[:, :2]
    # |(vx, vy)| written out: np.linalg.norm(planar, axis=1) is exactly this, minus its wrapper.
    standing = xp.sqrt(xp.row_sum(planar * planar)) <= cc.dead_zone
    command[:, :2] = xp.where(standing[:, None], 0.0, planar)
    left = R.TWO_PI * u[:, 14]
    phase = xp.stack_cols((left, xp.remainder(left + np.pi, R.TWO_PI)))
    return ResetDraw(qpos, qvel, kp, kd, command, phase)


def _between(bounds: list[float], unit: Array) -> Array:
    return bounds[0] + (bounds[1] - bounds[0]) * unit


def advance_phase(phase: Array, delta: float) -> Array:
    """The gait clock one control step on, wrapped into [0, 2 pi)."""
    return ops(phase).remainder(phase + delta, R.TWO_PI)


# -- the penalty curriculum -------------------------------------------------------------------


def curriculum_step(
    scale: Array,
    mean_length: Array,
    n_done: Array,
    length_sum: Array,
    window: int,
    cfg: CurriculumConfig,
) -> tuple[Array, Array]:
    """(scale, mean episode length) after a step in which `n_done` episodes ended with lengths
    summing to `length_sum` (0-d float64 arrays): the mean moves by min(n_done / window, 1) of
    the way to the step's mean; then the scale shrinks by (1 - degree) below the lower threshold
    or grows by (1 + degree) above the upper one, clipped to [min_scale, max_scale]. Nothing
    changes on a step where no episode ended."""
    xp = ops(scale)
    done = n_done > 0
    weight = xp.clip(n_done / window, 0.0, 1.0)
    step_mean = length_sum / xp.where(done, n_done, 1.0)
    mean = xp.where(done, mean_length + weight * (step_mean - mean_length), mean_length)
    if not cfg.enabled:
        return scale, mean
    # Every branch an array of scale's dtype (torch makes a where of two Python floats float32).
    moved = xp.where(
        mean < cfg.level_down_threshold,
        scale * (1.0 - cfg.degree),
        xp.where(mean > cfg.level_up_threshold, scale * (1.0 + cfg.degree), scale),
    )
    moved = xp.clip(moved, cfg.min_scale, cfg.max_scale)
    return xp.where(done, moved, scale), mean


def as_slice(index: np.ndarray) -> slice | np.ndarray:
    """`index` as the slice it spans when it is a contiguous ascending range, else itself."""
    if len(index) and np.array_equal(index, np.arange(index[0], index[0] + len(index))):
        return slice(int(index[0]), int(index[0]) + len(index))
    return index
