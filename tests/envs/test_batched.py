"""BatchedMujoco against plain single-env MuJoCo stepping."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from flashsac_bench.envs.g1.cpu.batched import BatchedMujoco
from flashsac_bench.envs.g1.model import build_g1_model


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return build_g1_model()


def _start(model: mujoco.MjModel, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    qpos = np.tile(model.key_qpos[0], (n, 1))
    qvel = np.zeros((n, model.nv))
    qvel[:, :6] = rng.uniform(-0.5, 0.5, size=(n, 6))
    return qpos, qvel


def _ctrl(model: mujoco.MjModel, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return model.key_ctrl[0] + rng.uniform(-0.3, 0.3, size=(n, model.nu))


def test_step_equals_serial_mujoco_and_sensors_describe_the_new_state(
    model: mujoco.MjModel,
) -> None:
    n = 3
    batch = BatchedMujoco(model, n, num_threads=2)
    qpos, qvel = _start(model, n)
    batch.reset_envs(range(n), qpos, qvel)
    refs = [mujoco.MjData(model) for _ in range(n)]
    for d, q, v in zip(refs, qpos, qvel, strict=True):
        d.qpos[:], d.qvel[:] = q, v
    for k in range(4):
        batch.ctrl[:] = _ctrl(model, n, k)
        batch.step(3)
        for i, d in enumerate(refs):
            d.ctrl[:] = batch.ctrl[i]
            for _ in range(3):
                mujoco.mj_step(model, d)
            mujoco.mj_forward(model, d)  # sensors at the post-step state
            np.testing.assert_array_equal(batch.qpos[i], d.qpos)
            np.testing.assert_array_equal(batch.qvel[i], d.qvel)
            np.testing.assert_allclose(batch.sensordata[i], d.sensordata, rtol=0, atol=1e-12)
    batch.close()


def test_thread_count_does_not_change_results(model: mujoco.MjModel) -> None:
    n = 5
    outs = []
    for threads in (1, 2):
        batch = BatchedMujoco(model, n, num_threads=threads)
        batch.reset_envs(range(n), *_start(model, n))
        for k in range(5):
            batch.ctrl[:] = _ctrl(model, n, k)
            batch.step(3)
        outs.append((batch.qpos.copy(), batch.qvel.copy(), batch.sensordata.copy()))
        batch.close()
    for a, b in zip(*outs, strict=True):
        np.testing.assert_array_equal(a, b)


def test_gain_scales_touch_only_the_given_envs(model: mujoco.MjModel) -> None:
    batch = BatchedMujoco(model, 3, num_threads=1)
    batch.set_gain_scales([1], np.array([1.1]), np.array([0.9]))
    kp, kv = model.actuator_gainprm[:, 0], -model.actuator_biasprm[:, 2]
    scaled = batch.models[1]
    np.testing.assert_allclose(scaled.actuator_gainprm[:, 0], 1.1 * kp)
    np.testing.assert_allclose(scaled.actuator_biasprm[:, 1], -1.1 * kp)
    np.testing.assert_allclose(scaled.actuator_biasprm[:, 2], -0.9 * kv)
    for i in (0, 2):
        np.testing.assert_array_equal(batch.models[i].actuator_gainprm, model.actuator_gainprm)
        np.testing.assert_array_equal(batch.models[i].actuator_biasprm, model.actuator_biasprm)
    # A stiffer servo holds the stand pose closer: the gains really reach the physics.
    batch.reset_envs(range(3), *_start(model, 3))
    batch.set_gain_scales([0, 1], np.array([0.5, 2.0]), np.array([1.0, 1.0]))
    batch.ctrl[:] = model.key_ctrl[0]
    batch.step(30)
    sag = np.abs(batch.qpos[:, 7:] - model.key_qpos[0, 7:]).sum(axis=1)
    assert sag[1] < sag[0]
    batch.close()


def test_state_round_trip_continues_bit_identically(model: mujoco.MjModel) -> None:
    batch = BatchedMujoco(model, 2, num_threads=2)
    batch.reset_envs(range(2), *_start(model, 2))
    batch.ctrl[:] = _ctrl(model, 2, 0)
    batch.step(3)
    state = batch.get_state()
    runs = []
    for _ in range(2):
        batch.set_state(state)
        for k in range(3):
            batch.ctrl[:] = _ctrl(model, 2, k + 1)
            batch.step(3)
        runs.append((batch.qpos.copy(), batch.sensordata.copy()))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    batch.close()
