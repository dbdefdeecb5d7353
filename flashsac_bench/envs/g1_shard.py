"""The per-env work of G1 Walk Flat for one contiguous env range (one shard, see `envs.shards`).

A shard steps its envs' MuJoCo models and computes their observations, rewards, terminations,
resets and reset randomization, writing into row views of the vector env's (N, ...) arrays.
The task contract is in `g1_walk_flat`'s module docstring. What is global stays with the vector
env (`G1WalkFlat`): the penalty-curriculum scale comes in as a `step` argument, and the episode
statistics it follows are reduced there, in env-index order, from the shared outputs.

Every per-env quantity is computed row by row (numpy elementwise ops and reductions along each
row), and every random number comes from the env's own stream (`env_rng.EnvStreams`, keyed by
the GLOBAL env index), so an env's numbers do not depend on which shard it is in or how large
that shard is.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, fields
from typing import Any

import mujoco
import numpy as np

from flashsac_bench.config.task import RewardWeights, TaskConfig
from flashsac_bench.envs import g1_rewards as R
from flashsac_bench.envs.batched import BatchedMujoco
from flashsac_bench.envs.env_rng import EnvStreams
from flashsac_bench.envs.g1_layout import G1Layout
from flashsac_bench.envs.g1_model import task_spec
from flashsac_bench.envs.shards import ArraySpec

NUM_JOINTS = 29
OBS_DIM = 98
CRITIC_OBS_DIM = 101
# Policy observation layout.
GYRO, GRAVITY = slice(0, 3), slice(3, 6)
JOINT_POS, JOINT_VEL, ACTION = slice(6, 35), slice(35, 64), slice(64, 93)
COMMAND, PHASE, LIN_VEL = slice(93, 96), slice(96, 98), slice(98, 101)
REWARD_TERMS: tuple[str, ...] = tuple(f.name for f in fields(RewardWeights))

# Random streams of each env, and how many numbers one draw of each takes.
NOISE_STREAM, RESET_STREAM = 0, 1
NOISE_VALUES = 2 * NUM_JOINTS
# xy (2), yaw, root velocity (6), kp, kd, command (3), left-foot phase.
RESET_VALUES = 15

# The shard's own per-env state (besides physics): checkpointed by get_state.
_TASK_STATE = ("action", "last_action", "command", "phase", "episode_step", "episode_return")


def build_task_model(task_cfg: TaskConfig) -> mujoco.MjModel:
    """The task's compiled model with the task's timestep (every shard builds its own)."""
    model = task_spec(task_cfg.model_file).compile()
    model.opt.timestep = task_cfg.sim_dt
    # A diverging sim must surface as a non-finite state that ends the episode, not be
    # silently put back at qpos0 by MuJoCo in the middle of one.
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_AUTORESET
    return model


def array_spec(model: mujoco.MjModel) -> ArraySpec:
    """The shared per-env arrays: the actions in, every output of a step out."""
    f32 = "float32"
    return ArraySpec(
        (
            ("actions", (NUM_JOINTS,), "float64"),
            ("obs", (OBS_DIM,), f32),
            ("critic_obs", (CRITIC_OBS_DIM,), f32),
            ("final_obs", (OBS_DIM,), f32),
            ("final_critic_obs", (CRITIC_OBS_DIM,), f32),
            ("reward", (), f32),
            ("terminated", (), "bool"),
            ("truncated", (), "bool"),
            *((f"term/{name}", (), f32) for name in REWARD_TERMS),
            ("episode_return", (), f32),
            ("episode_length", (), "int32"),
            ("qpos", (model.nq,), "float64"),
            ("qvel", (model.nv,), "float64"),
            ("sensordata", (model.nsensordata,), "float64"),
        )
    )


@dataclass(frozen=True)
class G1ShardFactory:
    """Builds the shard of envs [lo, hi) (picklable: sent to worker processes)."""

    task_cfg: TaskConfig
    seed: int
    num_threads: int = 1

    def __call__(self, lo: int, hi: int, arrays: dict[str, np.ndarray]) -> G1Shard:
        return G1Shard(self.task_cfg, lo, hi, self.seed, self.num_threads, arrays)


class G1Shard:
    """Envs [lo, hi) of G1 Walk Flat; `arrays` are their rows of the shared arrays."""

    def __init__(
        self,
        task_cfg: TaskConfig,
        lo: int,
        hi: int,
        seed: int,
        num_threads: int,
        arrays: dict[str, np.ndarray],
    ) -> None:
        self.cfg = task_cfg
        self.lo, self.hi = lo, hi
        n = self.num_envs = hi - lo
        self.max_episode_steps = task_cfg.max_episode_steps
        self.model = model = build_task_model(task_cfg)
        self.layout = G1Layout.from_model(model)
        self.a = arrays
        self.physics = BatchedMujoco(
            model,
            n,
            num_threads,
            outputs={k: arrays[k] for k in ("qpos", "qvel", "sensordata")},
        )
        self.rng = EnvStreams(seed, np.arange(lo, hi), num_streams=2)
        self.terms = {name: arrays[f"term/{name}"] for name in REWARD_TERMS}

        weights = np.asarray([getattr(task_cfg.rewards, k) for k in REWARD_TERMS])
        self._weights = weights * task_cfg.ctrl_dt
        self._is_penalty = weights < 0
        self._pose_weights = np.asarray(task_cfg.pose_weights, dtype=np.float64)
        self._phase_delta = 2.0 * math.pi * task_cfg.gait.frequency * task_cfg.ctrl_dt
        self._min_up_z = math.cos(math.radians(task_cfg.termination_tilt_deg))
        # The task's indices as slices where they are contiguous (the built-in model's are):
        # views instead of gathers, the same values.
        lay, sens = self.layout, self.layout.sensors
        self._joint_qpos = _as_slice(lay.joint_qpos)
        self._joint_qvel = _as_slice(lay.joint_qvel)
        self._actuators = _as_slice(lay.actuators)
        self._feet_z = np.array([sens["left_foot_pos"].start + 2, sens["right_foot_pos"].start + 2])
        cc = task_cfg.commands
        self._command_low = np.array([cc.vx[0], cc.vy[0], cc.wz[0]])
        self._command_span = np.array([cc.vx[1], cc.vy[1], cc.wz[1]]) - self._command_low
        self._alive = np.ones(n)
        self._step_weights: tuple[float, np.ndarray] | None = None  # (penalty scale, weights)
        obs = task_cfg.obs
        self._noise_scale = np.concatenate(
            (
                np.full(NUM_JOINTS, obs.joint_pos_noise),
                np.full(NUM_JOINTS, obs.joint_vel_noise * obs.joint_vel_scale),
            )
        )
        self.action = np.zeros((n, NUM_JOINTS))
        self.last_action = np.zeros((n, NUM_JOINTS))
        self.command = np.zeros((n, 3))
        self.phase = np.zeros((n, 2))
        self.episode_step = np.zeros(n, dtype=np.int64)
        self.episode_return = np.zeros(n)
        # Evaluation-only perturbations (`G1WalkFlat.set_perturbations`); none during training.
        self._mass_scale = 1.0
        self._push: tuple[int, np.ndarray] | None = None
        self._command_override: np.ndarray | None = None

    # -- commands (called by the executor) ------------------------------------------------------

    def reset(self) -> None:
        """Reset every env of the shard (fresh randomization); final_obs = obs."""
        self._reset_envs(np.arange(self.num_envs))
        a = self.a
        a["final_obs"][:] = a["obs"]
        a["final_critic_obs"][:] = a["critic_obs"]

    def step(self, penalty_scale: float) -> None:
        """One control step of every env with `actions`; finished envs are reset."""
        cfg, a, phys, lay = self.cfg, self.a, self.physics, self.layout
        self.last_action[:] = self.action
        # np.clip's value (NaN passes through both), without its Python-level wrapper.
        np.minimum(np.maximum(a["actions"], -1.0), 1.0, out=self.action)
        phys.ctrl[:, self._actuators] = lay.default_joint_pos + cfg.action_scale * self.action
        self.phase += self._phase_delta
        np.mod(self.phase, R.TWO_PI, out=self.phase)
        if self._push is not None:
            self._apply_push()
        phys.step(cfg.decimation)
        self.episode_step += 1

        s = self._read(slice(None))
        self._observe(s, slice(None), a["final_obs"], a["final_critic_obs"])
        self._rewards(s, penalty_scale)
        terminated = self._terminated(s)
        broken = ~_rows_all(np.isfinite(a["final_critic_obs"])) | ~np.isfinite(a["reward"])
        if broken.any():  # never hand NaN to the learner: zero the rows, end the episode
            self._zero_rows(broken)
            terminated |= broken
        truncated = (self.episode_step >= self.max_episode_steps) & ~terminated
        a["terminated"][:] = terminated
        a["truncated"][:] = truncated
        self.episode_return += a["reward"]
        a["episode_return"][:] = self.episode_return
        a["episode_length"][:] = self.episode_step
        a["obs"][:] = a["final_obs"]
        a["critic_obs"][:] = a["final_critic_obs"]
        done = (terminated | truncated).nonzero()[0]
        if done.size:
            self._reset_envs(done)

    def reward_terms_now(self, penalty_scale: float) -> None:
        """Write the weighted terms `step` would award for the current state into the term
        outputs (diagnostics and tests)."""
        self._rewards(self._read(slice(None)), penalty_scale)

    def terminated_now(self) -> np.ndarray:
        """Whether the current physics state would end each episode as a failure."""
        return self._terminated(self._read(slice(None)))

    # -- evaluation perturbations ---------------------------------------------------------------

    def set_mass_scale(self, scale: float) -> None:
        """Every link's mass and inertia times `scale` (the world body excluded); 1 restores the
        compiled model exactly. Each env's gain randomization is kept."""
        if scale == self._mass_scale:
            return
        phys = self.physics
        for i in range(self.num_envs):
            m = copy.copy(self.model)  # the compiled constants, then scaled
            if scale != 1.0:
                m.body_mass[1:] *= scale
                m.body_inertia[1:] *= scale
                # Subtree masses, inverse weights...: derived from the masses. A scratch MjData,
                # because mj_setConst overwrites the state of the one it is given.
                mujoco.mj_setConst(m, mujoco.MjData(m))
            phys.models[i] = m
        phys.set_gain_scales(range(self.num_envs), phys.kp_scale.copy(), phys.kd_scale.copy())
        self._mass_scale = scale

    def set_push(self, episode_step: int | None, delta_v: list[float] | None) -> None:
        """At that step of every episode (before its physics), add `delta_v` (m/s, world x, y, z)
        to the pelvis's linear velocity: an impulse of mass x delta_v. None: no push."""
        if episode_step is None or delta_v is None:
            self._push = None
        else:
            self._push = (int(episode_step), np.asarray(delta_v, dtype=np.float64))

    def set_command_override(self, commands: np.ndarray | None) -> None:
        """Commands (k, 3) that replace the sampled ones at every reset of these envs (the random
        numbers are still drawn, so everything else stays as without the override)."""
        self._command_override = None if commands is None else np.asarray(commands, np.float64)

    def _apply_push(self) -> None:
        step, dv = self._push  # type: ignore[misc]
        # episode_step counts the steps done: the push acts during the (step)-th one.
        hit = np.flatnonzero(self.episode_step + 1 == step)
        phys, vroot = self.physics, self.layout.root_qvel
        for i in hit:
            d = phys.datas[i]
            d.qvel[vroot : vroot + 3] += dv
            mujoco.mj_step1(phys.models[i], d)  # the stages of the changed state

    def get_state(self) -> dict[str, Any]:
        """This shard's rows of the per-env state (copies)."""
        state: dict[str, Any] = {name: getattr(self, name).copy() for name in _TASK_STATE}
        state.update(
            physics=self.physics.get_state(),
            kp_scale=self.physics.kp_scale.copy(),
            kd_scale=self.physics.kd_scale.copy(),
            rng_counters=self.rng.counters.copy(),
        )
        return state

    def set_state(self, state: dict[str, Any], seed: int) -> None:
        """Restore this shard's rows (`state` holds exactly them) and the stream seed."""
        if seed != self.rng.seed:
            self.rng = EnvStreams(seed, np.arange(self.lo, self.hi), num_streams=2)
        self.physics.set_gain_scales(range(self.num_envs), state["kp_scale"], state["kd_scale"])
        self.physics.set_state(state["physics"])
        for name in _TASK_STATE:
            getattr(self, name)[:] = state[name]
        self.rng.counters[:] = state["rng_counters"]

    def close(self) -> None:
        self.physics.close()

    # -- internals ----------------------------------------------------------------------------

    def _read(self, rows: slice | np.ndarray) -> dict[str, np.ndarray]:
        """Task quantities of the given envs from the physics outputs (views for a slice)."""
        phys, lay = self.physics, self.layout
        sens = phys.sensordata[rows]
        sl = lay.sensors
        up, gravity = R.up_and_gravity(sens[:, sl["torso_quat"]])
        if self.cfg.obs.gravity_frame == "world":
            gravity = -up
        return {
            "joint_pos_rel": phys.qpos[rows][:, self._joint_qpos] - lay.default_joint_pos,
            "joint_vel": phys.qvel[rows][:, self._joint_qvel],
            "gyro": sens[:, sl["torso_gyro"]],
            "lin_vel": sens[:, sl["pelvis_local_linvel"]],
            "gravity": gravity,
            "up": up,
            "feet_z": sens[:, self._feet_z],
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
        """Write the observations of `rows` into obs / critic (the shard's full-height rows)."""
        ocfg = self.cfg.obs
        some = isinstance(rows, np.ndarray)
        c = critic[rows] if some else critic
        # A float64 product written into the float32 row rounds once, as assigning it would.
        np.multiply(s["gyro"], ocfg.gyro_scale, out=c[:, GYRO])
        c[:, GRAVITY] = s["gravity"]
        c[:, JOINT_POS] = s["joint_pos_rel"]
        np.multiply(s["joint_vel"], ocfg.joint_vel_scale, out=c[:, JOINT_VEL])
        c[:, ACTION] = self.action[rows]
        c[:, COMMAND] = self.command[rows]
        c[:, PHASE] = self.phase[rows]
        np.multiply(s["lin_vel"], ocfg.lin_vel_scale, out=c[:, LIN_VEL])
        if some:
            o = c[:, :OBS_DIM].copy()
        else:  # every row: the noisy policy obs are made in place in `obs`
            o = obs
            o[:] = c[:, :OBS_DIM]
        if ocfg.add_noise:
            noise = self.rng.unit(NOISE_STREAM, rows, NOISE_VALUES)
            noise *= 2.0  # (2 u - 1) * scale, in place
            noise -= 1.0
            noise *= self._noise_scale
            o[:, JOINT_POS.start : JOINT_VEL.stop] += noise
        if some:
            critic[rows] = c
            obs[rows] = o

    def _rewards(self, s: dict[str, np.ndarray], penalty_scale: float) -> None:
        cfg, gait = self.cfg, self.cfg.gait
        sigma = cfg.tracking_sigma
        raw = {
            "tracking_lin_vel": R.tracking_lin_vel(self.command[:, :2], s["lin_vel"][:, :2], sigma),
            "tracking_ang_vel": R.tracking_ang_vel(self.command[:, 2], s["gyro"][:, 2], sigma),
            "penalty_ang_vel_xy": R.ang_vel_xy(s["gyro"]),
            "penalty_orientation": R.orientation(s["gravity"]),
            "penalty_action_rate": R.action_rate(self.action, self.last_action),
            "pose": R.pose(s["joint_pos_rel"], self._pose_weights),
            "penalty_feet_ori": R.feet_ori(s["left_quat"], s["right_quat"]),
            "feet_phase": R.feet_phase(s["feet_z"], self.phase, gait.swing_height, gait.sigma),
            "alive": self._alive,
        }
        scale = penalty_scale if cfg.curriculum.enabled else 1.0
        if self._step_weights is None or self._step_weights[0] != scale:  # moves rarely
            w = np.where(self._is_penalty, self._weights * scale, self._weights)
            self._step_weights = (scale, w)
        weights = self._step_weights[1]
        total = np.zeros(self.num_envs)
        for name, w in zip(REWARD_TERMS, weights, strict=True):
            term = w * raw[name]
            total += term
            self.terms[name][:] = term
        self.a["reward"][:] = total

    def _terminated(self, s: dict[str, np.ndarray]) -> np.ndarray:
        phys = self.physics
        finite = _rows_all(np.isfinite(phys.qpos)) & _rows_all(np.isfinite(phys.qvel))
        height = phys.qpos[:, self.layout.root_qpos + 2]
        return (
            (s["up"][:, 2] < self._min_up_z) | (height < self.cfg.termination_min_height) | ~finite
        )

    def _zero_rows(self, rows: np.ndarray) -> None:
        a = self.a
        for arr in (a["final_obs"], a["final_critic_obs"], a["reward"], *self.terms.values()):
            arr[rows] = 0.0

    def _reset_envs(self, ids: np.ndarray) -> None:
        cfg, lay = self.cfg, self.layout
        rc, cc = cfg.reset, cfg.commands
        k = len(ids)
        u = self.rng.unit(RESET_STREAM, ids, RESET_VALUES)
        qpos = np.empty((k, self.model.nq))
        qpos[:] = lay.stand_qpos
        qvel = np.zeros((k, self.model.nv))
        root, vroot = lay.root_qpos, lay.root_qvel
        qpos[:, root : root + 2] += rc.xy * (2.0 * u[:, 0:2] - 1.0)
        yaw = rc.yaw * (2.0 * u[:, 2] - 1.0)
        qpos[:, root + 3 : root + 7] = R.quat_mul(qpos[:, root + 3 : root + 7], R.yaw_quat(yaw))
        qvel[:, vroot : vroot + 6] = rc.root_vel * (2.0 * u[:, 3:9] - 1.0)
        kp = _between(rc.kp_scale, u[:, 9])
        kd = _between(rc.kd_scale, u[:, 10])
        command = self._command_low + self._command_span * u[:, 11:14]
        planar = command[:, :2]
        # np.linalg.norm(planar, axis=1) is exactly this for real input, minus its wrapper.
        standing = np.sqrt(np.add.reduce(planar * planar, axis=1)) <= cc.dead_zone
        command[standing, :2] = 0.0
        if self._command_override is not None:
            command = self._command_override[ids]
        left = R.TWO_PI * u[:, 14]

        self.physics.set_gain_scales(ids, kp, kd)
        self.physics.reset_envs(ids, qpos, qvel)
        self.command[ids] = command
        self.phase[ids, 0] = left
        self.phase[ids, 1] = np.mod(left + np.pi, R.TWO_PI)
        self.action[ids] = 0.0
        self.last_action[ids] = 0.0
        self.episode_step[ids] = 0
        self.episode_return[ids] = 0.0
        self._observe(self._read(ids), ids, self.a["obs"], self.a["critic_obs"])


def _rows_all(x: np.ndarray) -> np.ndarray:
    """x.all(axis=1) without the method's Python-level wrapper."""
    return np.logical_and.reduce(x, axis=1)


def _as_slice(index: np.ndarray) -> slice | np.ndarray:
    """`index` as the slice it spans when it is a contiguous ascending range, else itself."""
    if len(index) and np.array_equal(index, np.arange(index[0], index[0] + len(index))):
        return slice(int(index[0]), int(index[0]) + len(index))
    return index


def _between(bounds: list[float], unit: np.ndarray) -> np.ndarray:
    return bounds[0] + (bounds[1] - bounds[0]) * unit
