"""Reward terms and quaternion helpers of G1 Walk Flat, as pure batched numpy functions.

Every term takes (N, ...) arrays and returns the unweighted (N,) value; the env multiplies by the
weight (and the penalty-curriculum scale for negative weights) and by ctrl_dt. Formulas follow
UniLab's G1 joystick tasks (see the module docstring of `g1_walk_flat` for sources and choices).
Quaternions are MuJoCo's (w, x, y, z).

These run on a few dozen envs per worker process every control step, where numpy's per-call
overhead, not the arithmetic, is the cost: row sums call `np.add.reduce` (what `np.sum` calls,
without its wrapper) and shared subexpressions are computed once. Any such rewrite must keep
every floating-point operation and its order (an env's numbers are bit-stable across versions).
"""

from __future__ import annotations

import numpy as np

TWO_PI = 2.0 * np.pi


def tracking_lin_vel(command_xy: np.ndarray, lin_vel_xy: np.ndarray, sigma: float) -> np.ndarray:
    """exp(-|v_cmd - v|^2 / sigma) on the planar pelvis velocity (pelvis frame); 1 at perfect."""
    err = np.add.reduce(np.square(command_xy - lin_vel_xy), axis=1)
    return np.exp(-err / sigma)


def tracking_ang_vel(command_wz: np.ndarray, gyro_z: np.ndarray, sigma: float) -> np.ndarray:
    """exp(-(wz_cmd - wz)^2 / sigma) on the torso gyro's z; 1 at perfect tracking."""
    return np.exp(-np.square(command_wz - gyro_z) / sigma)


def ang_vel_xy(gyro: np.ndarray) -> np.ndarray:
    """Squared roll/pitch rate of the torso."""
    return np.square(gyro[:, 0]) + np.square(gyro[:, 1])


def orientation(gravity: np.ndarray) -> np.ndarray:
    """Squared horizontal part of the (unit) gravity direction: sin^2(tilt); 0 when upright."""
    return np.square(gravity[:, 0]) + np.square(gravity[:, 1])


def action_rate(action: np.ndarray, last_action: np.ndarray) -> np.ndarray:
    return np.add.reduce(np.square(action - last_action), axis=1)


def pose(joint_pos_rel: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted squared deviation from the default pose.

    A row-wise sum, not `@`: a BLAS product may sum a row in an order that depends on how many
    rows it is given, and an env's reward must not depend on its shard's size (`envs.shards`).
    """
    return np.add.reduce(np.square(joint_pos_rel) * weights, axis=1)


def feet_ori(left_quat: np.ndarray, right_quat: np.ndarray) -> np.ndarray:
    """Squared x/y quaternion components of both foot frames: 0 for flat feet (any heading)."""
    return (
        np.square(left_quat[:, 1])
        + np.square(left_quat[:, 2])
        + np.square(right_quat[:, 1])
        + np.square(right_quat[:, 2])
    )


def swing_height_target(phase: np.ndarray, swing_height: float) -> np.ndarray:
    """Foot-height target over one gait cycle (UniLab's convention): 0 at phase pi, a cubic
    Bezier rise to `swing_height` at phase 2 pi (= 0), and the mirrored fall back to 0 at pi."""
    x = np.mod(phase + np.pi, TWO_PI) / TWO_PI
    rising = x <= 0.5
    two_x = 2.0 * x
    t = np.where(rising, two_x, two_x - 1.0)
    bezier = t**3 + 3.0 * t**2 * (1.0 - t)
    return swing_height * np.where(rising, bezier, 1.0 - bezier)


def feet_phase(
    feet_z: np.ndarray, phase: np.ndarray, swing_height: float, sigma: float
) -> np.ndarray:
    """exp(-sum over both feet of (z - target(phase))^2 / sigma); feet_z and phase are (N, 2)."""
    err = np.add.reduce(np.square(feet_z - swing_height_target(phase, swing_height)), axis=1)
    return np.exp(-err / sigma)


# -- quaternions ------------------------------------------------------------------------------


def up_and_gravity(quat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(up, gravity) of the frame `quat`: its z axis in world coordinates (third column of R),
    and the world gravity direction (0, 0, -1) in its frame (-(third row of R)). Computed from
    one set of products; the same bits as the two written out separately (tests)."""
    w, x, y, z = quat[:, 0], quat[:, 1], quat[:, 2], quat[:, 3]
    xz, wy, yz, wx = x * z, w * y, y * z, w * x
    up = np.empty((len(quat), 3))
    gravity = np.empty((len(quat), 3))
    np.multiply(2.0, xz + wy, out=up[:, 0])
    np.multiply(2.0, yz - wx, out=up[:, 1])
    np.subtract(1.0, 2.0 * (x * x + y * y), out=up[:, 2])
    np.multiply(2.0, xz - wy, out=gravity[:, 0])
    np.multiply(2.0, yz + wx, out=gravity[:, 1])
    gravity[:, 2] = up[:, 2]
    np.negative(gravity, out=gravity)
    return up, gravity


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = aw * bw - ax * bx - ay * by - az * bz
    out[..., 1] = aw * bx + ax * bw + ay * bz - az * by
    out[..., 2] = aw * by - ax * bz + ay * bw + az * bx
    out[..., 3] = aw * bz + ax * by - ay * bx + az * bw
    return out


def yaw_quat(yaw: np.ndarray) -> np.ndarray:
    half = 0.5 * yaw
    out = np.zeros((*np.shape(yaw), 4))
    out[..., 0] = np.cos(half)
    out[..., 3] = np.sin(half)
    return out
