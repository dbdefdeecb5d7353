"""Reward terms and quaternion helpers on hand-computed inputs."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from flashsac_bench.envs.g1 import rewards as R


def _axis_angle_quat(axis: tuple[float, float, float], angle: float) -> np.ndarray:
    q = np.zeros(4)
    mujoco.mju_axisAngle2Quat(q, np.asarray(axis, dtype=float), angle)
    return q


def test_tracking_rewards() -> None:
    cmd = np.array([[0.5, -0.2], [0.5, -0.2]])
    vel = np.array([[0.5, -0.2], [0.0, -0.2]])  # perfect; 0.5 m/s short in x
    np.testing.assert_allclose(R.tracking_lin_vel(cmd, vel, 0.25), [1.0, math.exp(-1.0)])
    np.testing.assert_allclose(
        R.tracking_ang_vel(np.array([0.3, 0.3]), np.array([0.3, -0.2]), 0.25),
        [1.0, math.exp(-0.25 / 0.25)],
    )


def test_penalties_on_hand_values() -> None:
    np.testing.assert_allclose(R.ang_vel_xy(np.array([[0.3, 0.4, 9.0]])), [0.25])
    np.testing.assert_allclose(
        R.action_rate(np.array([[1.0, -1.0, 0.5]]), np.array([[0.0, -1.0, 0.0]])), [1.25]
    )
    rel = np.array([[0.1, -0.2, 0.0]])
    np.testing.assert_allclose(R.pose(rel, np.array([2.0, 0.5, 7.0])), [0.02 + 0.02])


def _gravity(quat: np.ndarray) -> np.ndarray:
    return R.up_and_gravity(quat)[1]


def test_orientation_is_zero_upright_and_sin2_tilt_when_tilted() -> None:
    upright = _gravity(np.array([[1.0, 0.0, 0.0, 0.0]]))
    np.testing.assert_allclose(upright, [[0.0, 0.0, -1.0]])
    assert R.orientation(upright)[0] == 0.0
    for axis in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.6, 0.8, 0.0)):
        tilted = _gravity(_axis_angle_quat(axis, math.radians(30))[None])
        assert R.orientation(tilted)[0] == pytest.approx(0.25)


def test_gravity_and_up_vector_match_mujoco_rotation() -> None:
    rng = np.random.default_rng(0)
    quats = rng.normal(size=(5, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    up_all, gravity_all = R.up_and_gravity(quats)
    for q, g, up in zip(quats, gravity_all, up_all, strict=True):
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, q)
        rot = mat.reshape(3, 3)  # body -> world
        np.testing.assert_allclose(g, rot.T @ [0.0, 0.0, -1.0], atol=1e-12)
        np.testing.assert_allclose(up, rot @ [0.0, 0.0, 1.0], atol=1e-12)


def _projected_gravity(quat: np.ndarray) -> np.ndarray:
    """The env's gravity as it was written before up_and_gravity (the reference)."""
    w, x, y, z = quat[:, 0], quat[:, 1], quat[:, 2], quat[:, 3]
    return -np.stack(
        (2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)), axis=1
    )


def _up_vector(quat: np.ndarray) -> np.ndarray:
    """The env's up vector as it was written before up_and_gravity (the reference)."""
    w, x, y, z = quat[:, 0], quat[:, 1], quat[:, 2], quat[:, 3]
    return np.stack(
        (2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)), axis=1
    )


def test_up_and_gravity_at_once_are_the_separate_functions_bit_for_bit() -> None:
    rng = np.random.default_rng(1)
    quats = rng.normal(size=(64, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    quats[:8] = [1.0, 0.0, 0.0, 0.0]  # upright: zero products, where signed zeros could differ
    quats[8:16, 1:3] = -0.0
    up, gravity = R.up_and_gravity(quats)
    for got, want in ((up, _up_vector(quats)), (gravity, _projected_gravity(quats))):
        assert got.shape == want.shape == (64, 3)
        np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


def test_quat_mul_and_yaw_quat_match_mujoco() -> None:
    a = _axis_angle_quat((0.0, 1.0, 0.0), 0.3)
    yaw = R.yaw_quat(np.array([1.1]))[0]
    np.testing.assert_allclose(yaw, _axis_angle_quat((0.0, 0.0, 1.0), 1.1), atol=1e-12)
    expected = np.zeros(4)
    mujoco.mju_mulQuat(expected, a, yaw)
    np.testing.assert_allclose(R.quat_mul(a[None], yaw[None])[0], expected, atol=1e-12)


def test_feet_ori_ignores_heading_and_sees_roll() -> None:
    flat_turned = _axis_angle_quat((0.0, 0.0, 1.0), 2.0)[None]
    assert R.feet_ori(flat_turned, flat_turned)[0] == pytest.approx(0.0, abs=1e-15)
    rolled = _axis_angle_quat((1.0, 0.0, 0.0), 0.2)[None]
    assert R.feet_ori(rolled, flat_turned)[0] == pytest.approx(math.sin(0.1) ** 2)


def test_swing_height_target_on_the_cycle() -> None:
    # Phase pi: on the ground; phase 0 / 2 pi: top of the swing; a quarter cycle either side:
    # Bezier at t = 1/2 is 1/8 + 3/8 = 1/2, so half the swing height.
    phase = np.array([math.pi, 0.0, 2 * math.pi, math.pi / 2, 3 * math.pi / 2])
    np.testing.assert_allclose(
        R.swing_height_target(phase, 0.09), [0.0, 0.09, 0.09, 0.045, 0.045], atol=1e-15
    )
    # One eighth into the cycle (x = 1/8, phase -3/4 pi): t = 1/4, 1/64 + 3 (1/16)(3/4) = 10/64.
    x = 1 / 8
    assert R.swing_height_target(np.array([2 * math.pi * x - math.pi]), 1.0)[0] == pytest.approx(
        10 / 64
    )


def test_feet_phase_is_one_on_target_and_decays_with_error() -> None:
    phase = np.array([[math.pi, 0.0]])  # left on the ground, right at the top
    on_target = np.array([[0.0, 0.09]])
    assert R.feet_phase(on_target, phase, 0.09, 0.005)[0] == pytest.approx(1.0)
    off = np.array([[0.05, 0.09]])
    assert R.feet_phase(off, phase, 0.09, 0.005)[0] == pytest.approx(math.exp(-0.0025 / 0.005))
