"""G1 Walk Flat: shapes, determinism, observations, rewards, terminations, autoreset, state."""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
import pytest

from flashsac_bench.config.backend import MujocoConfig
from flashsac_bench.config.task import CurriculumConfig, ObsConfig, ResetConfig, TaskConfig
from flashsac_bench.envs import EnvStep, make_env
from flashsac_bench.envs.g1.cpu.walk_flat import (
    ACTION,
    COMMAND,
    GRAVITY,
    GYRO,
    JOINT_POS,
    JOINT_VEL,
    LIN_VEL,
    PHASE,
    REWARD_TERMS,
    G1WalkFlat,
)

DT = 0.02
SCALE0 = 0.0625  # initial penalty-curriculum scale


def _no_randomization() -> ResetConfig:
    return ResetConfig(xy=0.0, yaw=0.0, root_vel=0.0, kp_scale=[1.0, 1.0], kd_scale=[1.0, 1.0])


IMU_IN_PELVIS_X = 0.04525  # site position of the pelvis IMU along the pelvis x axis (figures)


def _env(n: int = 4, seed: int = 0, threads: int = 2, **task: object) -> G1WalkFlat:
    # In-process: these tests read and place the MuJoCo state through env.physics.
    backend = MujocoConfig(mode="threads", num_threads=threads)
    return make_env(TaskConfig(**task), backend, n, seed)


def _actions(n: int, steps: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.2, 1.2, size=(steps, n, 29)).astype(np.float32)


def _snapshot(step: EnvStep) -> dict[str, np.ndarray]:
    out = {k: np.copy(getattr(step, k)) for k in step.__dataclass_fields__ if k != "reward_terms"}
    out.update({f"term/{k}": v.copy() for k, v in step.reward_terms.items()})
    return out


def _rollout(env: G1WalkFlat, actions: np.ndarray) -> list[dict[str, np.ndarray]]:
    return [_snapshot(env.step(a)) for a in actions]


def _assert_same(a: list[dict[str, np.ndarray]], b: list[dict[str, np.ndarray]]) -> None:
    for sa, sb in zip(a, b, strict=True):
        for key in sa:
            np.testing.assert_array_equal(sa[key], sb[key], err_msg=key)


def _place(
    env: G1WalkFlat,
    i: int,
    *,
    quat: tuple[float, ...] | np.ndarray = (1.0, 0.0, 0.0, 0.0),
    z: float = 0.754,
    qvel: np.ndarray | None = None,
    dq: np.ndarray | None = None,
) -> None:
    """Put env i at the stand pose (+ dq) with the given root orientation, height, velocity."""
    qpos = env.layout.stand_qpos.copy()
    qpos[2] = z
    qpos[3:7] = quat
    if dq is not None:
        qpos[env.layout.joint_qpos] += dq
    vel = np.zeros(env.model.nv) if qvel is None else np.asarray(qvel, dtype=float)
    env.physics.reset_envs([i], qpos[None], vel[None])


def _quat(axis: tuple[float, float, float], angle_deg: float) -> np.ndarray:
    q = np.zeros(4)
    mujoco.mju_axisAngle2Quat(q, np.asarray(axis, dtype=float), math.radians(angle_deg))
    return q


# -- contract -----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_shapes_dtypes_and_preallocated_outputs(
    backend: str, request: pytest.FixtureRequest
) -> None:
    workers = 2 if backend == "processes" else 0
    env = make_env(TaskConfig(), MujocoConfig(mode=backend, workers=workers), 3, 0)
    request.addfinalizer(env.close)
    assert env.workers == workers
    assert (env.num_envs, env.obs_dim, env.critic_obs_dim, env.action_dim) == (3, 98, 101, 29)
    assert env.max_episode_steps == 1000
    obs, critic = env.reset()
    assert obs.shape == (3, 98) and obs.dtype == np.float32
    assert critic.shape == (3, 101) and critic.dtype == np.float32
    step = env.step(np.zeros((3, 29), np.float32))
    arrays = [getattr(step, k) for k in step.__dataclass_fields__ if k != "reward_terms"]
    arrays += list(step.reward_terms.values())
    snapshot = [a.copy() for a in arrays]
    again = env.step(np.zeros((3, 29), np.float32))
    assert again is step  # one result object, its arrays overwritten in place
    assert any(not np.array_equal(a, b) for a, b in zip(arrays, snapshot, strict=True))
    assert step.obs is obs and step.critic_obs is critic
    assert step.final_obs.shape == (3, 98) and step.final_critic_obs.shape == (3, 101)
    for name in ("reward", "episode_return"):
        assert getattr(step, name).shape == (3,) and getattr(step, name).dtype == np.float32
    assert step.terminated.dtype == np.bool_ and step.truncated.dtype == np.bool_
    assert step.episode_length.dtype == np.int32
    assert tuple(step.reward_terms) == REWARD_TERMS and len(REWARD_TERMS) == 9
    assert all(v.shape == (3,) and v.dtype == np.float32 for v in step.reward_terms.values())
    terms = np.sum([v.astype(np.float64) for v in step.reward_terms.values()], axis=0)
    np.testing.assert_allclose(step.reward, terms, rtol=1e-5)
    with pytest.raises(ValueError, match="actions must be"):
        env.step(np.zeros((2, 29), np.float32))
    env.close()


def test_same_seed_same_trajectory_any_thread_count() -> None:
    actions = _actions(4, 25)
    short = dict(episode_length_s=0.2)  # 10-step episodes: resets draw from the RNG too
    a = _rollout(_env(seed=5, threads=1, **short), actions)
    b = _rollout(_env(seed=5, threads=2, **short), actions)
    _assert_same(a, b)
    c = _rollout(_env(seed=6, threads=2, **short), actions)
    assert not np.array_equal(a[0]["obs"], c[0]["obs"])


def test_actions_are_clipped_and_drive_the_joint_targets() -> None:
    env = _env(n=2)
    actions = np.zeros((2, 29), np.float32)
    actions[0, 3], actions[1, 3] = 1.7, -0.25  # left knee
    step = env.step(actions)
    np.testing.assert_allclose(step.obs[:, ACTION][:, 3], [1.0, -0.25])
    knee = env.layout.actuators[3]
    stand_knee = env.layout.default_joint_pos[3]
    np.testing.assert_allclose(env.physics.ctrl[:, knee], [stand_knee + 1.0, stand_knee - 0.25])
    # Action rate: against zero after the reset, then against the previous (clipped) action.
    rate = -5.0 * SCALE0 * DT
    np.testing.assert_allclose(
        step.reward_terms["penalty_action_rate"], [rate * 1.0, rate * 0.0625], rtol=1e-5
    )
    actions[:, 3] = 0.5
    step = env.step(actions)
    np.testing.assert_allclose(
        step.reward_terms["penalty_action_rate"], [rate * 0.25, rate * 0.5625], rtol=1e-5
    )


# -- observations -------------------------------------------------------------------------------


def test_critic_observation_matches_mujoco_state() -> None:
    env = _env(n=3, obs=ObsConfig(add_noise=False))
    step = env.step(_actions(3, 1)[0])
    model = env.model
    for i, d in enumerate(env.physics.datas):
        critic, obs = step.final_critic_obs[i], step.final_obs[i]
        np.testing.assert_array_equal(critic[:98], obs)  # noise off: identical prefix
        vel = np.zeros(6)
        mujoco.mj_objectVelocity(
            model, d, mujoco.mjtObj.mjOBJ_SITE, model.site("imu_in_torso").id, vel, 1
        )
        np.testing.assert_allclose(critic[GYRO], 0.25 * vel[:3], rtol=1e-5, atol=1e-6)
        rot = d.site_xmat[model.site("imu_in_torso").id].reshape(3, 3)
        np.testing.assert_allclose(critic[GRAVITY], rot.T @ [0, 0, -1], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            critic[JOINT_POS], d.qpos[7:] - model.key_qpos[0, 7:], rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(critic[JOINT_VEL], 0.05 * d.qvel[6:], rtol=1e-5, atol=1e-6)
        mujoco.mj_objectVelocity(
            model, d, mujoco.mjtObj.mjOBJ_SITE, model.site("imu_in_pelvis").id, vel, 1
        )
        np.testing.assert_allclose(critic[LIN_VEL], 2.0 * vel[3:], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(critic[PHASE], env.get_state()["phase"][i], rtol=1e-6)
        np.testing.assert_allclose(critic[COMMAND], env.get_state()["command"][i], rtol=1e-6)
        # Phase offsets: right = left + pi (mod 2 pi).
        gap = (critic[PHASE][1] - critic[PHASE][0]) % (2 * math.pi)
        assert gap == pytest.approx(math.pi, abs=1e-5)


def test_policy_noise_only_on_joint_pos_and_vel_and_within_bounds() -> None:
    env = _env(n=16)
    step = env.step(np.zeros((16, 29), np.float32))
    diff = step.final_obs - step.final_critic_obs[:, :98]
    assert np.abs(diff[:, JOINT_POS]).max() <= 0.01 + 1e-6
    assert np.abs(diff[:, JOINT_VEL]).max() <= 0.1 * 0.05 + 1e-6
    assert np.abs(diff[:, JOINT_POS]).max() > 0.005  # noise is really there
    untouched = np.ones(98, bool)
    untouched[JOINT_POS] = untouched[JOINT_VEL] = False
    np.testing.assert_array_equal(diff[:, untouched], 0.0)


def test_world_gravity_frame_is_minus_the_torso_up_vector() -> None:
    env = _env(n=1, obs=ObsConfig(add_noise=False, gravity_frame="world"))
    tilt = np.zeros(4)  # heading turned by 90 deg, then leaning 20 deg
    mujoco.mju_mulQuat(tilt, _quat((0, 0, 1), 90), _quat((0, 1, 0), 20))
    _place(env, 0, quat=tilt, z=1.0)
    step = env.step(np.zeros((1, 29), np.float32))
    d, model = env.physics.datas[0], env.model
    up = d.site_xmat[model.site("imu_in_torso").id].reshape(3, 3)[:, 2]
    np.testing.assert_allclose(step.final_obs[0, GRAVITY], -up, rtol=1e-5, atol=1e-6)


# -- rewards on hand-built states ---------------------------------------------------------------


def _set_task_state(env: G1WalkFlat, i: int, **values: np.ndarray) -> None:
    state = env.get_state()
    for key, value in values.items():
        state[key][i] = value
    env.set_state(state)


def test_reward_terms_on_a_hand_built_standing_state() -> None:
    env = _env(n=2, reset=_no_randomization())
    vx, vy, wz = 0.5, 0.2, 0.3
    # Root velocity chosen so that the pelvis IMU (0.04525 m ahead of the pelvis origin) moves at
    # exactly the command: v_imu = v + w x r = (vx, vy + 0.04525 wz, 0).
    _place(env, 0, qvel=np.r_[vx, vy, 0, 0, 0, wz, np.zeros(29)])
    _place(env, 1, dq=np.eye(29)[1] * 0.1)  # left hip roll off by 0.1 rad, at rest
    act = np.linspace(-0.5, 0.5, 29)
    _set_task_state(
        env, 0, command=np.array([vx, vy + IMU_IN_PELVIS_X * wz, wz]), action=act, last_action=act
    )
    _set_task_state(env, 1, command=np.zeros(3), action=np.full(29, 0.2), last_action=np.zeros(29))
    _set_task_state(env, 0, phase=np.array([math.pi, math.pi]))
    terms = {k: v.astype(np.float64) for k, v in env.reward_terms_now().items()}

    # Perfect tracking: the maximum tracking rewards, weight * dt.
    assert terms["tracking_lin_vel"][0] == pytest.approx(2.0 * DT, rel=1e-6)
    assert terms["tracking_ang_vel"][0] == pytest.approx(1.5 * DT, rel=1e-6)
    # Upright, no roll/pitch rate, default pose, steady actions: zero penalties.
    for name in ("penalty_ang_vel_xy", "penalty_orientation", "penalty_action_rate", "pose"):
        assert terms[name][0] == pytest.approx(0.0, abs=1e-9), name
    assert terms["alive"][0] == pytest.approx(10.0 * DT)
    # The stand pose pitches each foot by -0.312 + 0.669 - 0.363 = -0.006 rad (the +-10 deg body
    # offsets of hip roll and knee cancel): quaternion y = sin(-0.003) on both feet.
    expect_feet = -25.0 * SCALE0 * DT * 2 * math.sin(0.003) ** 2
    assert terms["penalty_feet_ori"][0] == pytest.approx(expect_feet, rel=1e-3)
    # Gait phase pi: both target heights 0, so the reward sees the foot sites' height.
    d, model = env.physics.datas[0], env.model
    z = [d.site_xpos[model.site(s).id][2] for s in ("left_foot", "right_foot")]
    expect_phase = 5.0 * DT * math.exp(-(z[0] ** 2 + z[1] ** 2) / 0.005)
    assert terms["feet_phase"][0] == pytest.approx(expect_phase, rel=1e-5)
    # Env 1: standing still against a zero command; hip roll (weight 2) off by 0.1; actions
    # jumped by 0.2 on all 29 joints.
    assert terms["tracking_lin_vel"][1] == pytest.approx(2.0 * DT, rel=1e-6)
    assert terms["pose"][1] == pytest.approx(-0.5 * SCALE0 * DT * 2.0 * 0.01, rel=1e-4)
    assert terms["penalty_action_rate"][1] == pytest.approx(
        -5.0 * SCALE0 * DT * 29 * 0.04, rel=1e-5
    )


def test_orientation_and_angular_rate_penalties_when_tilted_and_rolling() -> None:
    env = _env(n=1)
    _place(
        env, 0, quat=_quat((1, 0, 0), 90), z=1.0, qvel=np.r_[0, 0, 0, 0.3, -0.4, 0, np.zeros(29)]
    )
    terms = env.reward_terms_now()
    assert terms["penalty_orientation"][0] == pytest.approx(-10.0 * SCALE0 * DT, rel=1e-6)
    # Roll/pitch rate 0.3, -0.4 rad/s of the pelvis = of the torso (waist joints at rest).
    assert terms["penalty_ang_vel_xy"][0] == pytest.approx(-1.0 * SCALE0 * DT * 0.25, rel=1e-5)


# -- terminations, truncation, autoreset --------------------------------------------------------


def test_terminations_on_tilt_and_height() -> None:
    env = _env(n=5)
    _place(env, 0)  # upright standing
    _place(env, 1, quat=_quat((1, 0, 0), 90), z=1.0)  # toppled on its side
    _place(env, 2, z=0.25)  # pelvis below 0.3 m
    _place(env, 3, quat=_quat((0, 1, 0), 60), z=1.0)  # leaning 60 deg: still alive
    _place(env, 4, quat=_quat((0, 1, 0), 70), z=1.0)  # leaning 70 deg > 65
    np.testing.assert_array_equal(env.terminated_now(), [False, True, True, False, True])


def test_toppled_env_terminates_and_autoresets_with_true_final_obs() -> None:
    env = _env(n=3, obs=ObsConfig(add_noise=False))
    for _ in range(3):
        env.step(np.zeros((3, 29), np.float32))
    _place(env, 1, quat=_quat((1, 0, 0), 90), z=0.754)
    step = env.step(np.zeros((3, 29), np.float32))
    np.testing.assert_array_equal(step.terminated, [False, True, False])
    assert not step.truncated.any()
    assert step.episode_length[1] == 4
    # The final observation shows the robot on its side (gravity along the body's y axis) ...
    g_final = step.final_obs[1, GRAVITY]
    assert abs(g_final[1]) > 0.95 and abs(g_final[2]) < 0.3
    # ... the next one a fresh upright robot at the default pose with a zero last action.
    np.testing.assert_allclose(step.obs[1, GRAVITY], [0, 0, -1], atol=1e-6)
    np.testing.assert_allclose(step.obs[1, JOINT_POS], 0.0, atol=1e-6)
    np.testing.assert_array_equal(step.obs[1, ACTION], 0.0)
    assert not np.array_equal(step.obs[1], step.final_obs[1])
    # Envs that did not finish: obs is the final obs.
    np.testing.assert_array_equal(step.obs[[0, 2]], step.final_obs[[0, 2]])
    np.testing.assert_array_equal(step.critic_obs[[0, 2]], step.final_critic_obs[[0, 2]])


def test_truncation_at_step_1000_returns_the_true_final_observation() -> None:
    # No failure can end these episodes, so the time limit is the only way out. A twin env with a
    # longer limit consumes the same random numbers up to step 1000: its observation at step 1000
    # is the true final observation the first env must report.
    immortal = dict(termination_tilt_deg=180.0, termination_min_height=-1.0)
    env = _env(n=2, seed=3, **immortal)
    twin = _env(n=2, seed=3, episode_length_s=40.0, **immortal)
    actions = np.zeros((2, 29), np.float32)
    for t in range(1, 1001):
        step, twin_step = env.step(actions), twin.step(actions)
        if t < 1000:
            assert not step.truncated.any() and not step.terminated.any()
    np.testing.assert_array_equal(step.truncated, [True, True])
    np.testing.assert_array_equal(step.terminated, [False, False])
    np.testing.assert_array_equal(step.episode_length, [1000, 1000])
    np.testing.assert_array_equal(step.final_obs, twin_step.obs)
    np.testing.assert_array_equal(step.final_critic_obs, twin_step.critic_obs)
    # The robots have fallen by now; the post-reset observation is a fresh standing robot.
    assert (step.final_obs[:, GRAVITY][:, 2] > -0.9).all()
    np.testing.assert_allclose(step.obs[:, GRAVITY], [[0, 0, -1]] * 2, atol=1e-6)
    next_step = env.step(actions)
    np.testing.assert_array_equal(next_step.episode_length, [1, 1])


def test_terminated_wins_over_truncated() -> None:
    env = _env(n=2, episode_length_s=0.1)  # 5-step episodes
    for _ in range(4):
        env.step(np.zeros((2, 29), np.float32))
    _place(env, 0, quat=_quat((1, 0, 0), 90), z=0.754)
    step = env.step(np.zeros((2, 29), np.float32))
    np.testing.assert_array_equal(step.terminated, [True, False])
    np.testing.assert_array_equal(step.truncated, [False, True])


def test_zero_action_at_the_keyframe_stays_upright_for_one_second() -> None:
    env = _env(n=2, reset=_no_randomization(), obs=ObsConfig(add_noise=False))
    for _ in range(50):  # 50 control steps = 1 s
        step = env.step(np.zeros((2, 29), np.float32))
        assert not (step.terminated | step.truncated).any()
        tilt = np.degrees(np.arccos(-step.final_obs[:, GRAVITY][:, 2]))
        assert (tilt < 10).all()
        assert (env.physics.qpos[:, 2] > 0.6).all()


# -- curriculum, state, metrics -----------------------------------------------------------------


def test_penalty_curriculum_follows_the_mean_episode_length() -> None:
    cur = CurriculumConfig(initial_scale=0.1, window=8192)  # 4 envs -> EMA window 8
    env = _env(n=4, episode_length_s=0.1, curriculum=cur, reset=_no_randomization())
    zero = np.zeros((4, 29), np.float32)
    for _ in range(5):
        step = env.step(zero)
    assert step.truncated.all()
    # All 4 envs finished with length 5: EMA weight 4/8, 0 + 0.5 (5 - 0); mean < 150: shrink.
    m = env.metrics()
    assert m["curriculum/mean_episode_length"] == pytest.approx(2.5)
    assert m["curriculum/penalty_scale"] == pytest.approx(0.1 * 0.999)
    assert m["episode/length"] == 5 and m["episode/count"] == 4
    for _ in range(5):
        env.step(zero)
    m = env.metrics()
    assert m["curriculum/mean_episode_length"] == pytest.approx(3.75)
    assert m["curriculum/penalty_scale"] == pytest.approx(0.1 * 0.999**2)
    # Long episodes grow the scale, up to max_scale.
    grow = CurriculumConfig(initial_scale=0.124, level_down_threshold=0, level_up_threshold=0.5)
    env = _env(n=2, episode_length_s=0.02, curriculum=grow, reset=_no_randomization())
    for _ in range(10):  # 1-step episodes: 10 updates, 0.124 * 1.001**10 > 0.125
        env.step(np.zeros((2, 29), np.float32))
    assert env.metrics()["curriculum/penalty_scale"] == pytest.approx(0.125)


def test_get_state_set_state_continues_bit_identically() -> None:
    short = dict(episode_length_s=0.16)  # 8-step episodes, so resets happen in the replay
    env = _env(n=3, seed=11, **short)
    actions = _actions(3, 30, seed=2)
    _rollout(env, actions[:10])
    state = env.get_state()
    first = _rollout(env, actions[10:])
    metrics = env.metrics()
    env.set_state(state)
    _assert_same(first, _rollout(env, actions[10:]))
    assert env.metrics() == metrics
    other = _env(n=3, seed=99, threads=1, **short)  # a fresh env, different seed
    other.set_state(state)
    _assert_same(first, _rollout(other, actions[10:]))
    with pytest.raises(ValueError, match="3 envs"):
        _env(n=2).set_state(state)


def test_reset_randomization_ranges() -> None:
    env = _env(n=64, seed=4)
    lay, phys = env.layout, env.physics
    xy = phys.qpos[:, :2]
    assert np.abs(xy).max() <= 0.5 and np.abs(xy).max() > 0.4
    yaw = 2 * np.arctan2(phys.qpos[:, 6], phys.qpos[:, 3])
    assert np.abs(np.angle(np.exp(1j * yaw))).max() > 2.5
    np.testing.assert_allclose(phys.qpos[:, 4:6], 0.0, atol=1e-12)  # yaw only
    root_vel = phys.qvel[:, :6]
    assert np.abs(root_vel).max() <= 0.5 and np.abs(root_vel).max() > 0.45
    np.testing.assert_array_equal(phys.qvel[:, 6:], 0.0)
    np.testing.assert_array_equal(
        phys.qpos[:, lay.joint_qpos], np.tile(lay.default_joint_pos, (64, 1))
    )
    for scale in (phys.kp_scale, phys.kd_scale):
        assert (scale >= 0.9).all() and (scale <= 1.1).all() and scale.std() > 0.03
    cmd = env.get_state()["command"]
    assert (cmd[:, 0] >= -0.6).all() and (cmd[:, 0] <= 1.0).all()
    assert (np.abs(cmd[:, 1]) <= 0.4).all() and (np.abs(cmd[:, 2]) <= 0.8).all()
    planar = np.linalg.norm(cmd[:, :2], axis=1)
    assert ((planar == 0) | (planar > 0.2)).all() and (planar == 0).any() and (planar > 0).any()


def test_metrics_report_curriculum_episodes_and_mean_rewards() -> None:
    env = _env(n=2, episode_length_s=0.04)
    for _ in range(4):
        env.step(np.zeros((2, 29), np.float32))
    m = env.metrics()
    assert m["episode/count"] == 4 and m["episode/length"] == 2
    assert m["curriculum/penalty_scale"] == pytest.approx(SCALE0)
    assert m["reward/alive"] == pytest.approx(10.0 * DT)
    assert set(m) >= {f"reward/{k}" for k in REWARD_TERMS} | {"reward/total"}


@pytest.mark.shared
def test_external_reference_model_gives_the_same_env(shared_reference: Path) -> None:
    scene = str(shared_reference / "g1_unilab" / "scene_flat.xml")
    actions = _actions(2, 12)
    builtin = _rollout(_env(n=2, seed=8), actions)
    external = _rollout(_env(n=2, seed=8, model_file=scene), actions)
    _assert_same(builtin, external)


def test_a_diverged_env_terminates_with_zeroed_rows_and_restarts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # MuJoCo logs the instability warning to ./MUJOCO_LOG.TXT
    env = _env(n=2)
    _place(env, 0, qvel=np.full(35, np.nan))
    step = env.step(np.zeros((2, 29), np.float32))
    np.testing.assert_array_equal(step.terminated, [True, False])
    np.testing.assert_array_equal(step.final_obs[0], 0.0)
    np.testing.assert_array_equal(step.final_critic_obs[0], 0.0)
    assert step.reward[0] == 0.0 and all(v[0] == 0.0 for v in step.reward_terms.values())
    assert np.isfinite(step.obs).all() and np.isfinite(step.final_obs[1]).all()
    np.testing.assert_allclose(step.obs[0, GRAVITY], [0, 0, -1], atol=1e-6)  # restarted upright


# -- evaluation perturbations -------------------------------------------------------------------


def test_mass_scale_scales_every_link_and_changes_the_dynamics() -> None:
    nominal, heavy = _env(n=2, seed=4), _env(n=2, seed=4)
    heavy.set_perturbations(mass_scale=1.2)
    for m in heavy.physics.models:
        np.testing.assert_allclose(m.body_mass[1:], nominal.model.body_mass[1:] * 1.2)
        np.testing.assert_allclose(m.body_subtreemass[0], nominal.model.body_subtreemass[0] * 1.2)
    a = np.zeros((2, 29), np.float32)
    for _ in range(10):
        s_n, s_h = nominal.step(a), heavy.step(a)
    assert not np.allclose(s_n.final_critic_obs, s_h.final_critic_obs)
    heavy.set_perturbations()  # back to nominal
    np.testing.assert_array_equal(heavy.physics.models[0].body_mass, nominal.model.body_mass)


def test_push_changes_the_pelvis_velocity_at_that_episode_step() -> None:
    calm, pushed = _env(n=2, seed=2), _env(n=2, seed=2)
    pushed.set_perturbations(push_step=3, push_velocity=[1.0, -0.5, 0.0])
    a = np.zeros((2, 29), np.float32)
    for _ in range(2):
        np.testing.assert_array_equal(calm.step(a).obs, pushed.step(a).obs)  # before: same
    calm.step(a), pushed.step(a)  # the third step carries the push
    dv = pushed.physics.qvel[:, :3] - calm.physics.qvel[:, :3]
    # Contacts and gravity act during the step too, so the change is about the push, not exact.
    np.testing.assert_allclose(dv[:, :2], [[1.0, -0.5]] * 2, atol=0.25)


def test_command_override_replaces_the_sampled_commands_at_reset() -> None:
    commands = np.array([[1.0, 0.0, 0.0], [0.0, 0.4, -0.8]])
    env = _env(n=2, seed=1, obs=ObsConfig(add_noise=False))
    env.set_perturbations(commands=commands)
    obs, critic = env.reset()
    np.testing.assert_allclose(critic[:, COMMAND], commands, rtol=1e-6)
    np.testing.assert_allclose(env.get_state()["command"], commands)
    with pytest.raises(ValueError, match=r"commands must be \(2, 3\)"):
        env.set_perturbations(commands=np.zeros((3, 3)))
