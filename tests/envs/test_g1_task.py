"""The task's one definition (g1.task, g1.rewards) computes the same values on torch tensors as
on numpy arrays: every function on the same random inputs, float64 in and out, equal to
rounding (the formulas' operations and their order are the same; only library kernels differ)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from flashsac_bench.config.task import CurriculumConfig, TaskConfig
from flashsac_bench.envs.g1 import rewards as R
from flashsac_bench.envs.g1 import task as T
from flashsac_bench.envs.g1.cpu.shard import build_task_model
from flashsac_bench.envs.g1.layout import G1Layout

N = 257


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(a)


def _same(got: object, want: object, rtol: float = 1e-12) -> None:
    if isinstance(want, tuple | list):
        for g, w in zip(got, want, strict=True):  # type: ignore[call-overload]
            _same(g, w, rtol)
        return
    if isinstance(want, dict):
        assert list(got) == list(want)  # type: ignore[call-overload]
        for key in want:
            _same(got[key], want[key], rtol)  # type: ignore[index]
        return
    assert isinstance(got, torch.Tensor) and isinstance(want, np.ndarray)
    assert got.dtype == torch.from_numpy(want[..., :0] if want.ndim else want.reshape(1)).dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=1e-15)


def _quats(n: int, seed: int) -> np.ndarray:
    q = _rng(seed).normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def test_reward_terms_and_quaternion_helpers_on_both_libraries() -> None:
    r = _rng(1)
    a, b = r.normal(size=(N, 2)), r.normal(size=(N, 2))
    cases = [
        (R.tracking_lin_vel, (a, b, 0.25)),
        (R.tracking_ang_vel, (a[:, 0], b[:, 0], 0.25)),
        (R.ang_vel_xy, (r.normal(size=(N, 3)),)),
        (R.orientation, (r.normal(size=(N, 3)),)),
        (R.action_rate, (r.uniform(-1, 1, (N, 29)), r.uniform(-1, 1, (N, 29)))),
        (R.pose, (r.normal(size=(N, 29)), r.uniform(0, 50, 29))),
        (R.feet_ori, (_quats(N, 2), _quats(N, 3))),
        (R.swing_height_target, (r.uniform(-7, 7, (N, 2)), 0.09)),
        (R.feet_phase, (r.uniform(0, 0.2, (N, 2)), r.uniform(0, 2 * math.pi, (N, 2)), 0.09, 0.005)),
        (R.up_and_gravity, (_quats(N, 4),)),
        (R.quat_mul, (_quats(N, 5), _quats(N, 6))),
        (R.yaw_quat, (r.uniform(-math.pi, math.pi, N),)),
    ]
    for fn, args in cases:
        want = fn(*args)
        got = fn(*(_t(x) if isinstance(x, np.ndarray) else x for x in args))
        _same(got, want)


@pytest.fixture(scope="module")
def layout() -> tuple[G1Layout, int, int]:
    model = build_task_model(TaskConfig())
    return G1Layout.from_model(model), model.nv, model.nsensordata


def _physics(nq: int, nv: int, ns: int, seed: int) -> tuple[np.ndarray, ...]:
    r = _rng(seed)
    qpos, qvel, sens = r.normal(size=(N, nq)), r.normal(size=(N, nv)), r.normal(size=(N, ns))
    qpos[:7, 0] = np.nan  # non-finite states terminate
    return qpos, qvel, sens


@pytest.mark.parametrize("gravity_frame", ["body", "world"])
def test_observations_rewards_and_episode_ends_on_both_libraries(layout, gravity_frame) -> None:
    lay, nv, ns = layout
    cfg = TaskConfig()
    idx_np = T.TaskIndex.from_layout(lay)
    idx_t = T.TaskIndex.from_layout(lay, _t)
    qpos, qvel, sens = _physics(len(lay.stand_qpos), nv, ns, 7)
    r = _rng(8)
    action, last = r.uniform(-1, 1, (N, 29)), r.uniform(-1, 1, (N, 29))
    command, phase = r.normal(size=(N, 3)), r.uniform(0, 2 * math.pi, (N, 2))
    q_np = T.read(qpos, qvel, sens, idx_np, gravity_frame)
    q_t = T.read(_t(qpos), _t(qvel), _t(sens), idx_t, gravity_frame)
    _same(q_t, q_np)
    critic_np = T.critic_obs(q_np, action, command, phase, cfg.obs)
    critic_t = T.critic_obs(q_t, _t(action), _t(command), _t(phase), cfg.obs)
    _same(critic_t, critic_np)
    unit, scale = r.random((N, T.NOISE_VALUES)), T.noise_scale(cfg.obs)
    c32 = critic_np.astype(np.float32)
    obs_np = T.policy_obs(c32, unit, scale)
    obs_t = T.policy_obs(_t(c32), _t(unit), _t(scale))
    assert obs_np.dtype == np.float32 and obs_t.dtype == torch.float32
    np.testing.assert_array_equal(obs_t.numpy(), obs_np)  # one float32 rounding of the same sum
    weights, is_penalty = T.reward_weights(cfg)
    pose_w = np.asarray(cfg.pose_weights)
    alive = np.ones(N)
    raw_np = T.raw_rewards(q_np, command, action, last, phase, alive, cfg, pose_w)
    raw_t = T.raw_rewards(
        q_t, _t(command), _t(action), _t(last), _t(phase), _t(alive), cfg, _t(pose_w)
    )
    _same(raw_t, raw_np)
    w_np = T.scaled_weights(weights, is_penalty, 0.09)
    w_t = T.scaled_weights(_t(weights), _t(is_penalty), torch.tensor(0.09, dtype=torch.float64))
    _same(w_t, w_np)
    _same(T.weigh(raw_t, w_t), T.weigh(raw_np, w_np))
    term_np = T.terminated(q_np, qpos, qvel, idx_np, 0.42, 0.3)
    term_t = T.terminated(q_t, _t(qpos), _t(qvel), idx_t, 0.42, 0.3)
    np.testing.assert_array_equal(term_t.numpy(), term_np)
    assert term_np[:7].all() and 0 < term_np[7:].sum() < N - 7  # both outcomes occur
    steps = r.integers(990, 1010, N)
    np.testing.assert_array_equal(
        T.truncated(_t(steps), 1000, term_t).numpy(), T.truncated(steps, 1000, term_np)
    )


def test_reset_draws_on_both_libraries(layout) -> None:
    lay, nv, _ = layout
    cfg = TaskConfig()
    u = _rng(9).random((N, T.RESET_VALUES))
    u[:40, 11:13] = (0.375, 0.55)  # planar commands near 0: the dead zone zeroes them
    want = T.draw_reset(u, T.ResetRanges.of(lay, nv, cfg.commands), cfg.reset, cfg.commands)
    got = T.draw_reset(_t(u), T.ResetRanges.of(lay, nv, cfg.commands, _t), cfg.reset, cfg.commands)
    _same(tuple(got), tuple(want))
    assert (want.command[:40, :2] == 0).all()


@pytest.mark.parametrize("mean", [10.0, 400.0, 900.0])
def test_the_curriculum_rule_on_both_libraries_bit_for_bit(mean: float) -> None:
    cfg = CurriculumConfig(initial_scale=0.1)
    for n_done, total in ((0.0, 0.0), (3.0, 3 * mean), (500.0, 500 * mean)):
        args = [0.1, 47.25, n_done, total]
        want = T.curriculum_step(*(np.asarray(a) for a in args), 250, cfg)
        got = T.curriculum_step(*(torch.tensor(a, dtype=torch.float64) for a in args), 250, cfg)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == torch.float64
            assert float(g) == float(w)
        if n_done == 0:  # nothing ended: nothing moves
            assert (float(want[0]), float(want[1])) == (0.1, 47.25)
