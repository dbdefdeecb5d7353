"""G1 Walk Flat: UniLab's G1WalkFlat velocity-tracking task (unilab.md §4.2) on batched MuJoCo.

Contract. 50 Hz control (ctrl_dt 0.02 s, 3 physics steps of 1/150 s), 1000-step episodes.
Actions a in [-1, 1]^29 (clipped) set position targets default_pose + action_scale * a, held over
the substeps. Joint order is canonical (`g1_figures.JOINT_NAMES`: left leg, right leg, waist,
left arm, right arm) whatever the actuator order of an external model.

Policy observation (98): torso gyro * 0.25 | projected gravity (3) | joint pos - default (29,
noise U(+-0.01)) | joint vel * 0.05 (29, noise U(+-0.1) added before scaling) | last action (29,
the action just applied) | command vx, vy, wz | gait phase of both feet (2, radians in
[0, 2 pi)). Critic observation (101): the same without noise, then pelvis linear velocity * 2.
The gyro is the torso IMU's (local frame), the linear velocity the pelvis IMU velocimeter's
(local frame), as in UniLab. Observations describe the state after the substeps: the position
and velocity stages are recomputed after the last `mj_step` (see `batched`).

Rewards, UniLab's FlashSAC MuJoCo owner (sigma = tracking_sigma 0.25):
  tracking_lin_vel     exp(-|cmd_xy - v_xy|^2 / sigma)          (pelvis-frame velocity)
  tracking_ang_vel     exp(-(cmd_wz - gyro_z)^2 / sigma)
  penalty_ang_vel_xy   gyro_x^2 + gyro_y^2
  penalty_orientation  g_x^2 + g_y^2 of the projected gravity (= sin^2 tilt)
  penalty_action_rate  |a_t - a_{t-1}|^2 (a_{-1} = 0 after a reset)
  pose                 sum_j w_j (q_j - q0_j)^2 (task.pose_weights)
  penalty_feet_ori     x^2 + y^2 of both feet's world quaternions
  feet_phase           exp(-sum_feet (z_foot - h(phase))^2 / 0.005), h a cubic Bezier swing of
                       0.09 m on a 1.5 Hz clock (`g1_rewards.swing_height_target`)
  alive                1
Reward = ctrl_dt * sum_i w_i c_i r_i, with c_i the penalty-curriculum scale for w_i < 0 (else 1):
UniLab multiplies by ctrl_dt (its `scale_rewards_by_dt`), and so do we; `reward_terms` holds the
weighted w_i c_i r_i ctrl_dt, so it sums to the reward.

Penalty curriculum (UniLab's G1PenaltyCurriculum): the mean episode length is an EMA updated on
steps where envs finish, weight min(n_done / window, 1), window = max(1, int(1000 N / 4096)).
After such a step the scale is multiplied by (1 - 0.001) when the mean is below 150 or by
(1 + 0.001) above 750, clipped to [0.0625, 0.125] (start 0.0625); it applies from the next step.

Episode end. terminated: torso tilt > 65 deg, pelvis height < 0.3 m, or a non-finite state (our
addition: MuJoCo's own autoreset to qpos0 is disabled; the rows of a blown-up env are zeroed and
it restarts, so no NaN reaches the learner).
truncated: the 1000th step of an episode that did not terminate on it; terminated wins, the two
are never both set. Finished envs are reset in the same step: `final_obs` carries their true last
observation, `obs` the first of the new episode.

Reset: the `stand` keyframe, xy + U(+-0.5) m, yaw U(+-pi), all six root velocities U(+-0.5), one
kp and one kd multiplier U(0.9, 1.1) per env; commands vx, vy, wz uniform in their ranges, the
planar part zeroed when |(vx, vy)| <= 0.2, held for the whole episode (UniLab resamples every
20 s = once per episode); gait phase left U(0, 2 pi), right = left + pi.

Choices where UniLab differs or is silent (documented deviations):
  * Projected gravity is gravity in the torso IMU frame, R^T (0, 0, -1) (MuJoCo Playground's
    G1 convention). UniLab feeds -torso_upvector, the torso z axis in the WORLD frame, whose x/y
    turn with the heading (random at reset), so the policy cannot tell a forward from a sideways
    lean. Tilt and the orientation penalty are the same under both; `task.obs.gravity_frame=world`
    restores UniLab's observation exactly.
  * The right foot's reset phase is wrapped into [0, 2 pi) (UniLab wraps it one step later); the
    reward is 2 pi-periodic, only that first observation differs.
  * Observations use the state after the substeps (UniLab's backends read sensordata left by the
    last mj_step, one substep old).
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

import mujoco
import numpy as np

from flashsac_bench.config.backend import BackendConfig
from flashsac_bench.config.task import RewardWeights, TaskConfig
from flashsac_bench.envs import g1_rewards as R
from flashsac_bench.envs.api import ArrayFactory, EnvStep, default_array_factory
from flashsac_bench.envs.batched import BatchedMujoco
from flashsac_bench.envs.g1_layout import G1Layout
from flashsac_bench.envs.g1_model import task_spec

NUM_JOINTS = 29
OBS_DIM = 98
CRITIC_OBS_DIM = 101
# Policy observation layout.
GYRO, GRAVITY = slice(0, 3), slice(3, 6)
JOINT_POS, JOINT_VEL, ACTION = slice(6, 35), slice(35, 64), slice(64, 93)
COMMAND, PHASE, LIN_VEL = slice(93, 96), slice(96, 98), slice(98, 101)
REWARD_TERMS: tuple[str, ...] = tuple(f.name for f in fields(RewardWeights))


class G1WalkFlat:
    """`num_envs` G1 Walk Flat envs with autoreset; see the module docstring for the contract."""

    obs_dim = OBS_DIM
    critic_obs_dim = CRITIC_OBS_DIM
    action_dim = NUM_JOINTS

    def __init__(
        self,
        task_cfg: TaskConfig,
        backend_cfg: BackendConfig,
        num_envs: int,
        seed: int,
        array_factory: ArrayFactory | None = None,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.cfg = task_cfg
        self.num_envs = num_envs
        self.max_episode_steps = task_cfg.max_episode_steps
        model = task_spec(task_cfg.model_file).compile()
        model.opt.timestep = task_cfg.sim_dt
        # A diverging sim must surface as a non-finite state that ends the episode, not be
        # silently put back at qpos0 by MuJoCo in the middle of one.
        model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_AUTORESET
        self.model = model
        self.layout = G1Layout.from_model(model)
        self.physics = BatchedMujoco(model, num_envs, backend_cfg.resolved_num_threads(num_envs))
        self._rng = np.random.default_rng(seed)

        weights = np.asarray([getattr(task_cfg.rewards, n) for n in REWARD_TERMS])
        self._weights = weights * task_cfg.ctrl_dt
        self._is_penalty = weights < 0
        self._pose_weights = np.asarray(task_cfg.pose_weights, dtype=np.float64)
        self._phase_delta = 2.0 * math.pi * task_cfg.gait.frequency * task_cfg.ctrl_dt
        self._min_up_z = math.cos(math.radians(task_cfg.termination_tilt_deg))
        obs = task_cfg.obs
        self._noise_scale = np.concatenate(
            (
                np.full(NUM_JOINTS, obs.joint_pos_noise),
                np.full(NUM_JOINTS, obs.joint_vel_noise * obs.joint_vel_scale),
            )
        )
        cur = task_cfg.curriculum
        self._penalty_scale = cur.initial_scale
        self._mean_episode_length = 0.0
        self._length_window = max(1, int(cur.window * num_envs / 4096))

        n = num_envs
        self._action = np.zeros((n, NUM_JOINTS))
        self._last_action = np.zeros((n, NUM_JOINTS))
        self._command = np.zeros((n, 3))
        self._phase = np.zeros((n, 2))
        self._episode_step = np.zeros(n, dtype=np.int64)
        self._episode_return = np.zeros(n)

        alloc = array_factory or default_array_factory

        def new(shape: tuple[int, ...], dtype: type) -> np.ndarray:
            arr = alloc(shape, np.dtype(dtype))
            arr[...] = 0
            return arr

        self._out = EnvStep(
            obs=new((n, OBS_DIM), np.float32),
            critic_obs=new((n, CRITIC_OBS_DIM), np.float32),
            final_obs=new((n, OBS_DIM), np.float32),
            final_critic_obs=new((n, CRITIC_OBS_DIM), np.float32),
            reward=new((n,), np.float32),
            terminated=new((n,), np.bool_),
            truncated=new((n,), np.bool_),
            reward_terms={name: new((n,), np.float32) for name in REWARD_TERMS},
            episode_return=new((n,), np.float32),
            episode_length=new((n,), np.int32),
        )
        self._metrics = _MetricSums()
        self.reset()

    # -- public API ---------------------------------------------------------------------------

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        """Reset every env (fresh randomization); returns the (obs, critic_obs) output arrays."""
        self._reset_envs(np.arange(self.num_envs))
        out = self._out
        out.final_obs[:] = out.obs
        out.final_critic_obs[:] = out.critic_obs
        return out.obs, out.critic_obs

    def step(self, actions: np.ndarray) -> EnvStep:
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs, NUM_JOINTS):
            raise ValueError(f"actions must be {(self.num_envs, NUM_JOINTS)}, got {actions.shape}")
        cfg, out, phys, lay = self.cfg, self._out, self.physics, self.layout
        self._last_action[:] = self._action
        np.clip(actions, -1.0, 1.0, out=self._action)
        phys.ctrl[:, lay.actuators] = lay.default_joint_pos + cfg.action_scale * self._action
        self._phase += self._phase_delta
        np.mod(self._phase, R.TWO_PI, out=self._phase)
        phys.step(cfg.decimation)
        self._episode_step += 1

        s = self._read(slice(None))
        self._observe(s, slice(None), out.final_obs, out.final_critic_obs)
        self._rewards(s)
        terminated = self._terminated(s)
        broken = ~np.isfinite(out.final_critic_obs).all(axis=1) | ~np.isfinite(out.reward)
        if broken.any():  # never hand NaN to the learner: zero the rows, end the episode
            self._zero_rows(broken)
            terminated |= broken
        truncated = (self._episode_step >= self.max_episode_steps) & ~terminated
        out.terminated[:] = terminated
        out.truncated[:] = truncated
        self._episode_return += out.reward
        out.episode_return[:] = self._episode_return
        out.episode_length[:] = self._episode_step
        out.obs[:] = out.final_obs
        out.critic_obs[:] = out.final_critic_obs

        done = np.flatnonzero(terminated | truncated)
        self._metrics.add_step(out, done)
        if done.size:
            self._update_curriculum(self._episode_step[done])
            self._reset_envs(done)
        return out

    def reward_terms_now(self) -> dict[str, np.ndarray]:
        """The weighted reward terms `step` would award for the current physics state, command,
        gait phase and actions (diagnostics and tests; overwrites `reward_terms` in place)."""
        self._rewards(self._read(slice(None)))
        return self._out.reward_terms

    def terminated_now(self) -> np.ndarray:
        """Whether the current physics state would end the episode as a failure."""
        return self._terminated(self._read(slice(None)))

    def metrics(self) -> dict[str, float]:
        """Means since the previous call (episode stats: of the episodes finished meanwhile)."""
        result = self._metrics.pop()
        result["curriculum/penalty_scale"] = self._penalty_scale
        result["curriculum/mean_episode_length"] = self._mean_episode_length
        return result

    def get_state(self) -> dict[str, Any]:
        """Everything needed to continue bit-identically (copies)."""
        return {
            "num_envs": self.num_envs,
            "physics": self.physics.get_state(),
            "kp_scale": self.physics.kp_scale.copy(),
            "kd_scale": self.physics.kd_scale.copy(),
            "action": self._action.copy(),
            "last_action": self._last_action.copy(),
            "command": self._command.copy(),
            "phase": self._phase.copy(),
            "episode_step": self._episode_step.copy(),
            "episode_return": self._episode_return.copy(),
            "obs": self._out.obs.copy(),
            "critic_obs": self._out.critic_obs.copy(),
            "rng": self._rng.bit_generator.state,
            "penalty_scale": self._penalty_scale,
            "mean_episode_length": self._mean_episode_length,
            "metric_sums": self._metrics.state(),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        if state["num_envs"] != self.num_envs:
            raise ValueError(f"state is for {state['num_envs']} envs, this env has {self.num_envs}")
        ids = np.arange(self.num_envs)
        self.physics.set_gain_scales(ids, state["kp_scale"], state["kd_scale"])
        self.physics.set_state(state["physics"])
        for name in ("action", "last_action", "command", "phase"):
            getattr(self, f"_{name}")[:] = state[name]
        self._episode_step[:] = state["episode_step"]
        self._episode_return[:] = state["episode_return"]
        self._out.obs[:] = state["obs"]
        self._out.critic_obs[:] = state["critic_obs"]
        self._rng.bit_generator.state = state["rng"]
        self._penalty_scale = float(state["penalty_scale"])
        self._mean_episode_length = float(state["mean_episode_length"])
        self._metrics.load(state["metric_sums"])

    def close(self) -> None:
        self.physics.close()

    # -- internals ----------------------------------------------------------------------------

    def _read(self, rows: slice | np.ndarray) -> dict[str, np.ndarray]:
        """Task quantities of the given envs from the physics outputs (views for a slice)."""
        phys, lay = self.physics, self.layout
        sens = phys.sensordata[rows]
        sl = lay.sensors
        torso = sens[:, sl["torso_quat"]]
        up = R.up_vector(torso)
        gravity = -up if self.cfg.obs.gravity_frame == "world" else R.projected_gravity(torso)
        return {
            "joint_pos_rel": phys.qpos[rows][:, lay.joint_qpos] - lay.default_joint_pos,
            "joint_vel": phys.qvel[rows][:, lay.joint_qvel],
            "gyro": sens[:, sl["torso_gyro"]],
            "lin_vel": sens[:, sl["pelvis_local_linvel"]],
            "gravity": gravity,
            "up": up,
            "feet_z": np.stack(
                (sens[:, sl["left_foot_pos"]][:, 2], sens[:, sl["right_foot_pos"]][:, 2]), axis=1
            ),
            "left_quat": sens[:, sl["left_foot_quat"]],
            "right_quat": sens[:, sl["right_foot_quat"]],
        }

    def _observe(
        self,
        s: dict[str, np.ndarray],
        rows: slice | np.ndarray,
        obs: np.ndarray,
        critic: np.ndarray,
    ) -> None:
        """Write the observations of `rows` into obs / critic (full-height arrays)."""
        ocfg = self.cfg.obs
        c = critic[rows] if isinstance(rows, np.ndarray) else critic
        c[:, GYRO] = s["gyro"] * ocfg.gyro_scale
        c[:, GRAVITY] = s["gravity"]
        c[:, JOINT_POS] = s["joint_pos_rel"]
        c[:, JOINT_VEL] = s["joint_vel"] * ocfg.joint_vel_scale
        c[:, ACTION] = self._action[rows]
        c[:, COMMAND] = self._command[rows]
        c[:, PHASE] = self._phase[rows]
        c[:, LIN_VEL] = s["lin_vel"] * ocfg.lin_vel_scale
        o = c[:, :OBS_DIM].copy()
        if ocfg.add_noise:
            noise = self._rng.uniform(-1.0, 1.0, size=(len(o), 2 * NUM_JOINTS))
            o[:, JOINT_POS.start : JOINT_VEL.stop] += noise * self._noise_scale
        if isinstance(rows, np.ndarray):
            critic[rows] = c
            obs[rows] = o
        else:
            obs[:] = o

    def _rewards(self, s: dict[str, np.ndarray]) -> None:
        cfg, out, gait = self.cfg, self._out, self.cfg.gait
        sigma = cfg.tracking_sigma
        raw = {
            "tracking_lin_vel": R.tracking_lin_vel(
                self._command[:, :2], s["lin_vel"][:, :2], sigma
            ),
            "tracking_ang_vel": R.tracking_ang_vel(self._command[:, 2], s["gyro"][:, 2], sigma),
            "penalty_ang_vel_xy": R.ang_vel_xy(s["gyro"]),
            "penalty_orientation": R.orientation(s["gravity"]),
            "penalty_action_rate": R.action_rate(self._action, self._last_action),
            "pose": R.pose(s["joint_pos_rel"], self._pose_weights),
            "penalty_feet_ori": R.feet_ori(s["left_quat"], s["right_quat"]),
            "feet_phase": R.feet_phase(s["feet_z"], self._phase, gait.swing_height, gait.sigma),
            "alive": np.ones(self.num_envs),
        }
        scale = self._penalty_scale if cfg.curriculum.enabled else 1.0
        weights = np.where(self._is_penalty, self._weights * scale, self._weights)
        total = np.zeros(self.num_envs)
        for name, w in zip(REWARD_TERMS, weights, strict=True):
            term = w * raw[name]
            total += term
            out.reward_terms[name][:] = term
        out.reward[:] = total

    def _terminated(self, s: dict[str, np.ndarray]) -> np.ndarray:
        phys = self.physics
        finite = np.isfinite(phys.qpos).all(axis=1) & np.isfinite(phys.qvel).all(axis=1)
        height = phys.qpos[:, self.layout.root_qpos + 2]
        return (
            (s["up"][:, 2] < self._min_up_z) | (height < self.cfg.termination_min_height) | ~finite
        )

    def _zero_rows(self, rows: np.ndarray) -> None:
        out = self._out
        for arr in (out.final_obs, out.final_critic_obs, out.reward, *out.reward_terms.values()):
            arr[rows] = 0.0

    def _update_curriculum(self, lengths: np.ndarray) -> None:
        cur = self.cfg.curriculum
        weight = min(len(lengths) / self._length_window, 1.0)
        self._mean_episode_length += weight * (float(lengths.mean()) - self._mean_episode_length)
        if not cur.enabled:
            return
        if self._mean_episode_length < cur.level_down_threshold:
            self._penalty_scale *= 1.0 - cur.degree
        elif self._mean_episode_length > cur.level_up_threshold:
            self._penalty_scale *= 1.0 + cur.degree
        self._penalty_scale = min(max(self._penalty_scale, cur.min_scale), cur.max_scale)

    def _reset_envs(self, ids: np.ndarray) -> None:
        cfg, lay, rng = self.cfg, self.layout, self._rng
        rc, cc = cfg.reset, cfg.commands
        k = len(ids)
        qpos = np.tile(lay.stand_qpos, (k, 1))
        qvel = np.zeros((k, self.model.nv))
        root, vroot = lay.root_qpos, lay.root_qvel
        qpos[:, root : root + 2] += rng.uniform(-rc.xy, rc.xy, size=(k, 2))
        yaw = rng.uniform(-rc.yaw, rc.yaw, size=k)
        qpos[:, root + 3 : root + 7] = R.quat_mul(qpos[:, root + 3 : root + 7], R.yaw_quat(yaw))
        qvel[:, vroot : vroot + 6] = rng.uniform(-rc.root_vel, rc.root_vel, size=(k, 6))
        kp = rng.uniform(*rc.kp_scale, size=k)
        kd = rng.uniform(*rc.kd_scale, size=k)
        low = np.array([cc.vx[0], cc.vy[0], cc.wz[0]])
        high = np.array([cc.vx[1], cc.vy[1], cc.wz[1]])
        command = rng.uniform(low, high, size=(k, 3))
        standing = np.linalg.norm(command[:, :2], axis=1) <= cc.dead_zone
        command[standing, :2] = 0.0
        left = rng.uniform(0.0, R.TWO_PI, size=k)

        self.physics.set_gain_scales(ids, kp, kd)
        self.physics.reset_envs(ids, qpos, qvel)
        self._command[ids] = command
        self._phase[ids] = np.stack((left, np.mod(left + np.pi, R.TWO_PI)), axis=1)
        self._action[ids] = 0.0
        self._last_action[ids] = 0.0
        self._episode_step[ids] = 0
        self._episode_return[ids] = 0.0
        self._observe(self._read(ids), ids, self._out.obs, self._out.critic_obs)


class _MetricSums:
    """Running sums for `metrics()`, cleared on every read."""

    def __init__(self) -> None:
        self._sums: dict[str, float] = {}
        self._steps = 0
        self._last_episode = {"episode/return": 0.0, "episode/length": 0.0}

    def add_step(self, out: EnvStep, done: np.ndarray) -> None:
        sums = self._sums
        self._steps += 1
        for name, values in out.reward_terms.items():
            sums[f"reward/{name}"] = sums.get(f"reward/{name}", 0.0) + float(values.mean())
        sums["reward/total"] = sums.get("reward/total", 0.0) + float(out.reward.mean())
        if done.size:
            sums["episodes"] = sums.get("episodes", 0.0) + done.size
            sums["terminated"] = sums.get("terminated", 0.0) + float(out.terminated[done].sum())
            sums["return"] = sums.get("return", 0.0) + float(out.episode_return[done].sum())
            sums["length"] = sums.get("length", 0.0) + float(out.episode_length[done].sum())

    def pop(self) -> dict[str, float]:
        sums, steps = self._sums, max(self._steps, 1)
        result = {k: v / steps for k, v in sums.items() if k.startswith("reward/")}
        episodes = sums.get("episodes", 0.0)
        if episodes:
            self._last_episode = {
                "episode/return": sums["return"] / episodes,
                "episode/length": sums["length"] / episodes,
            }
        result.update(self._last_episode)
        result["episode/count"] = episodes
        terminated = sums.get("terminated", 0.0)
        result["episode/terminated_frac"] = terminated / episodes if episodes else 0.0
        self._sums, self._steps = {}, 0
        return result

    def state(self) -> dict[str, Any]:
        return {"sums": dict(self._sums), "steps": self._steps, "last": dict(self._last_episode)}

    def load(self, state: dict[str, Any]) -> None:
        self._sums = dict(state["sums"])
        self._steps = int(state["steps"])
        self._last_episode = dict(state["last"])
