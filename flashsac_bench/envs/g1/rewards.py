"""Reward terms and quaternion helpers of G1 Walk Flat, written once for numpy and torch.

Every term takes (N, ...) arrays and returns the unweighted (N,) value; the env multiplies by the
weight (and the penalty-curriculum scale for negative weights) and by ctrl_dt. Formulas follow
UniLab's G1 joystick tasks (see the module docstring of `g1.cpu.walk_flat` for sources and choices).
Quaternions are MuJoCo's (w, x, y, z).

Both backends run these functions: the CPU backend on numpy arrays, the MuJoCo Warp backend on
torch tensors on the physics' device; `array_ops.ops(x)` picks the operations of the inputs'
library. On numpy they are the calls this module always made: these run on a few dozen envs
per worker process every control step, where numpy's per-call overhead, not the arithmetic, is
the cost, so row sums call `np.add.reduce` (what `np.sum` calls, without its wrapper) and shared
subexpressions are computed once. Any rewrite must keep every floating-point operation and its
order (an env's numbers are bit-stable across versions).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flashsac_bench.envs.g1.array_ops import ops

TWO_PI = 2.0 * np.pi

# An array of either library: numpy's ndarray or a torch tensor (see array_ops).
Array = Any


def tracking_lin_vel(command_xy: Array, lin_vel_xy: Array, sigma: float) -> Array:
    """exp(-|v_cmd - v|^2 / sigma) on the planar pelvis velocity (pelvis frame); 1 at perfect."""
    xp = ops(command_xy)
    err = xp.row_sum(xp.square(command_xy - lin_vel_xy))
    return xp.exp(-err / sigma)


def tracking_ang_vel(command_wz: Array, gyro_z: Array, sigma: float) -> Array:
    """exp(-(wz_cmd - wz)^2 / sigma) on the torso gyro's z; 1 at perfect tracking."""
    xp = ops(command_wz)
    return xp.exp(-xp.square(command_wz - gyro_z) / sigma)


def ang_vel_xy(gyro: Array) -> Array:
    """Squared roll/pitch rate of the torso."""
    xp = ops(gyro)
    return xp.square(gyro[:, 0]) + xp.square(gyro[:, 1])


def orientation(gravity: Array) -> Array:
    """Squared horizontal part of the (unit) gravity direction: sin^2(tilt); 0 when upright."""
    xp = ops(gravity)
    return xp.square(gravity[:, 0]) + xp.square(gravity[:, 1])


def action_rate(action: Array, last_action: Array) -> Array:
    xp = ops(action)
    return xp.row_sum(xp.square(action - last_action))


def pose(joint_pos_rel: Array, weights: Array) -> Array:
    """Weighted squared deviation from the default pose.

    A row-wise sum, not `@`: a BLAS product may sum a row in an order that depends on how many
    rows it is given, and an env's reward must not depend on its shard's size
    (`envs.g1.cpu.shards`).
    """
    xp = ops(joint_pos_rel)
    return xp.row_sum(xp.square(joint_pos_rel) * weights)


def feet_ori(left_quat: Array, right_quat: Array) -> Array:
    """Squared x/y quaternion components of both foot frames: 0 for flat feet (any heading)."""
    xp = ops(left_quat)
    return (
        xp.square(left_quat[:, 1])
        + xp.square(left_quat[:, 2])
        + xp.square(right_quat[:, 1])
        + xp.square(right_quat[:, 2])
    )


def swing_height_target(phase: Array, swing_height: float) -> Array:
    """Foot-height target over one gait cycle (UniLab's convention): 0 at phase pi, a cubic
    Bezier rise to `swing_height` at phase 2 pi (= 0), and the mirrored fall back to 0 at pi."""
    xp = ops(phase)
    x = xp.remainder(phase + np.pi, TWO_PI) / TWO_PI
    rising = x <= 0.5
    two_x = 2.0 * x
    t = xp.where(rising, two_x, two_x - 1.0)
    bezier = t**3 + 3.0 * t**2 * (1.0 - t)
    return swing_height * xp.where(rising, bezier, 1.0 - bezier)


def feet_phase(feet_z: Array, phase: Array, swing_height: float, sigma: float) -> Array:
    """exp(-sum over both feet of (z - target(phase))^2 / sigma); feet_z and phase are (N, 2)."""
    xp = ops(feet_z)
    err = xp.row_sum(xp.square(feet_z - swing_height_target(phase, swing_height)))
    return xp.exp(-err / sigma)


# -- quaternions ------------------------------------------------------------------------------


def up_and_gravity(quat: Array) -> tuple[Array, Array]:
    """(up, gravity) of the frames `quat` (N, 4): each z axis in world coordinates (third column
    of R), and the world gravity direction (0, 0, -1) in each frame (-(third row of R)).
    Computed from one set of products; the same bits as the two written out separately
    (tests)."""
    xp = ops(quat)
    w, x, y, z = quat[:, 0], quat[:, 1], quat[:, 2], quat[:, 3]
    xz, wy, yz, wx = x * z, w * y, y * z, w * x
    up_z = 1.0 - 2.0 * (x * x + y * y)
    up = xp.stack_cols((2.0 * (xz + wy), 2.0 * (yz - wx), up_z))
    gravity = xp.stack_cols((-(2.0 * (xz - wy)), -(2.0 * (yz + wx)), -up_z))
    return up, gravity


def quat_mul(a: Array, b: Array) -> Array:
    """Row-wise Hamilton products of (N, 4) quaternions."""
    xp = ops(a)
    aw, ax, ay, az = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    bw, bx, by, bz = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    return xp.stack_cols(
        (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        )
    )


def yaw_quat(yaw: Array) -> Array:
    """(N, 4) quaternions of rotations by `yaw` (N,) about the world z axis."""
    xp = ops(yaw)
    half = 0.5 * yaw
    zero = xp.zeros_like(half)
    return xp.stack_cols((xp.cos(half), zero, zero, xp.sin(half)))
