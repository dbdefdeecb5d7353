"""The per-env work of G1 Walk Flat for one contiguous env range (one shard, see `g1.cpu.shards`).

A shard steps its envs' MuJoCo models and computes their observations, rewards, terminations,
resets and reset randomization, writing into row views of the vector env's (N, ...) arrays.
The task contract is in `g1.cpu.walk_flat`'s module docstring. What is global stays with the vector
env (`G1WalkFlat`): the penalty-curriculum scale comes in as a `step` argument, and the episode
statistics it follows are reduced there, in env-index order, from the shared outputs.

Every per-env quantity is computed row by row (numpy elementwise ops and reductions along each
row), and every random number comes from the env's own stream (`g1.env_rng.EnvStreams`, keyed by
the GLOBAL env index), so an env's numbers do not depend on which shard it is in or how large
that shard is. The quantities themselves are the task's one definition (`g1.task`), which the
MuJoCo Warp backend runs too; this module moves the shard's arrays around them.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from flashsac_bench.config.task import TaskConfig
from flashsac_bench.envs.g1 import task as T
from flashsac_bench.envs.g1.array_ops import NUMPY
from flashsac_bench.envs.g1.cpu.batched import BatchedMujoco
from flashsac_bench.envs.g1.cpu.shards import ArraySpec
from flashsac_bench.envs.g1.env_rng import EnvStreams
from flashsac_bench.envs.g1.layout import G1Layout
from flashsac_bench.envs.g1.model import task_spec
from flashsac_bench.envs.g1.task import (
    ACTION,
    COMMAND,
    CRITIC_OBS_DIM,
    GRAVITY,
    GYRO,
    JOINT_POS,
    JOINT_VEL,
    LIN_VEL,
    NOISE_STREAM,
    NOISE_VALUES,
    NUM_JOINTS,
    OBS_DIM,
    PHASE,
    RESET_STREAM,
    RESET_VALUES,
    REWARD_TERMS,
)

__all__ = [
    "ACTION",
    "COMMAND",
    "CRITIC_OBS_DIM",
    "GRAVITY",
    "GYRO",
    "JOINT_POS",
    "JOINT_VEL",
    "LIN_VEL",
    "NUM_JOINTS",
    "OBS_DIM",
    "PHASE",
    "REWARD_TERMS",
    "G1Shard",
    "G1ShardFactory",
    "array_spec",
    "build_task_model",
]

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

        self._weights, self._is_penalty = T.reward_weights(task_cfg)
        self._pose_weights = np.asarray(task_cfg.pose_weights, dtype=np.float64)
        self._phase_delta = 2.0 * math.pi * task_cfg.gait.frequency * task_cfg.ctrl_dt
        self._min_up_z = math.cos(math.radians(task_cfg.termination_tilt_deg))
        self._idx = T.TaskIndex.from_layout(self.layout)
        self._ranges = T.ResetRanges.of(self.layout, model.nv, task_cfg.commands)
        # A slice where the actuators are contiguous (the built-in model's are): a view.
        self._actuators = T.as_slice(self.layout.actuators)
        self._alive = np.ones(n)
        self._step_weights: tuple[float, np.ndarray] | None = None  # (penalty scale, weights)
        self._noise_scale = T.noise_scale(task_cfg.obs)
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
        self.action[:] = NUMPY.clip(a["actions"], -1.0, 1.0)
        phys.ctrl[:, self._actuators] = lay.default_joint_pos + cfg.action_scale * self.action
        self.phase[:] = T.advance_phase(self.phase, self._phase_delta)
        if self._push is not None:
            self._apply_push()
        phys.step(cfg.decimation)
        self.episode_step += 1

        s = self._read(slice(None))
        self._observe(s, slice(None), a["final_obs"], a["final_critic_obs"])
        self._rewards(s, penalty_scale)
        terminated = self._terminated(s)
        broken = T.broken(a["final_critic_obs"], a["reward"])
        if broken.any():  # never hand NaN to the learner: zero the rows, end the episode
            self._zero_rows(broken)
            terminated |= broken
        truncated = T.truncated(self.episode_step, self.max_episode_steps, terminated)
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

    def _read(self, rows: slice | np.ndarray) -> T.Quantities:
        """Task quantities of the given envs from the physics outputs (views for a slice)."""
        phys = self.physics
        return T.read(
            phys.qpos[rows],
            phys.qvel[rows],
            phys.sensordata[rows],
            self._idx,
            self.cfg.obs.gravity_frame,
        )

    def _observe(
        self,
        s: T.Quantities,
        rows: slice | np.ndarray,
        obs: np.ndarray,
        critic: np.ndarray,
    ) -> None:
        """Write the observations of `rows` into obs / critic (the shard's full-height rows)."""
        ocfg = self.cfg.obs
        full = T.critic_obs(s, self.action[rows], self.command[rows], self.phase[rows], ocfg)
        unit = self.rng.unit(NOISE_STREAM, rows, NOISE_VALUES) if ocfg.add_noise else None
        if isinstance(rows, np.ndarray):
            c = full.astype(np.float32)
            critic[rows] = c
            obs[rows] = T.policy_obs(c, unit, self._noise_scale)
        else:  # every row: rounded into `critic` in place
            critic[:] = full
            obs[:] = T.policy_obs(critic, unit, self._noise_scale)

    def _rewards(self, s: T.Quantities, penalty_scale: float) -> None:
        raw = T.raw_rewards(
            s,
            self.command,
            self.action,
            self.last_action,
            self.phase,
            self._alive,
            self.cfg,
            self._pose_weights,
        )
        scale = penalty_scale if self.cfg.curriculum.enabled else 1.0
        if self._step_weights is None or self._step_weights[0] != scale:  # moves rarely
            w = T.scaled_weights(self._weights, self._is_penalty, scale)
            self._step_weights = (scale, w)
        terms, total = T.weigh(raw, self._step_weights[1])
        for name, term in zip(REWARD_TERMS, terms, strict=True):
            self.terms[name][:] = term
        self.a["reward"][:] = total

    def _terminated(self, s: T.Quantities) -> np.ndarray:
        phys = self.physics
        return T.terminated(
            s,
            phys.qpos,
            phys.qvel,
            self._idx,
            self._min_up_z,
            self.cfg.termination_min_height,
        )

    def _zero_rows(self, rows: np.ndarray) -> None:
        a = self.a
        for arr in (a["final_obs"], a["final_critic_obs"], a["reward"], *self.terms.values()):
            arr[rows] = 0.0

    def _reset_envs(self, ids: np.ndarray) -> None:
        u = self.rng.unit(RESET_STREAM, ids, RESET_VALUES)
        draw = T.draw_reset(u, self._ranges, self.cfg.reset, self.cfg.commands)
        command = draw.command
        if self._command_override is not None:
            command = self._command_override[ids]
        self.physics.set_gain_scales(ids, draw.kp_scale, draw.kd_scale)
        self.physics.reset_envs(ids, draw.qpos, draw.qvel)
        self.command[ids] = command
        self.phase[ids] = draw.phase
        self.action[ids] = 0.0
        self.last_action[ids] = 0.0
        self.episode_step[ids] = 0
        self.episode_return[ids] = 0.0
        self._observe(self._read(ids), ids, self.a["obs"], self.a["critic_obs"])
