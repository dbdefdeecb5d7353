"""G1 Walk Flat on MuJoCo Warp: the task of `g1_walk_flat` with every env on the GPU.

The `mjwarp` backend. The contract (observations, rewards, terminations, truncations, resets,
commands, randomization, the penalty curriculum) is `g1_walk_flat`'s, computed by the same
functions (`g1_task`, `g1_rewards`) on torch float64 tensors on the physics' device, read from
zero-copy views of MuJoCo Warp's float32 state (`warp_physics`). Random numbers come from the
same per-env counter streams (`env_rng_torch`, equal bit for bit to the CPU backend's), so a
seed gives both backends the same resets, commands and noise; they differ by their physics
(float32 here, float64 there; tests/envs/test_g1_warp.py states by how much).

No step synchronizes with the host, and no shape depends on the data: every env is computed and
the rows that reset are selected with `where`, so the whole control step (physics substeps and
task) can be captured as one CUDA graph on the learner's stream (`capture`). On Warp's CPU
device (testing only) the physics is replayed from a Warp graph and the task runs as torch ops.

What is global (the curriculum scale, the mean episode length, the metric sums) lives on the
device too, as 0-d tensors; `metrics()` reads them (one synchronization, at log time).
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import torch

from flashsac_bench.config.backend import BackendConfig
from flashsac_bench.config.task import TaskConfig
from flashsac_bench.envs import g1_task as T
from flashsac_bench.envs.api import DeviceEnvStep, DeviceVecEnv
from flashsac_bench.envs.env_rng_torch import TorchEnvStreams
from flashsac_bench.envs.g1_layout import G1Layout
from flashsac_bench.envs.g1_shard import build_task_model
from flashsac_bench.envs.g1_task import (
    CRITIC_OBS_DIM,
    NOISE_STREAM,
    NOISE_VALUES,
    NUM_JOINTS,
    OBS_DIM,
    RESET_STREAM,
    RESET_VALUES,
    REWARD_TERMS,
)
from flashsac_bench.envs.warp_physics import WarpPhysics, import_warp

log = logging.getLogger(__name__)

# Version of get_state's layout.
STATE_FORMAT = 1
_F64 = torch.float64
# The task's per-env state (besides physics), float64 / int64 on the device.
_TASK_STATE = ("action", "last_action", "command", "phase", "episode_step", "episode_return")
# The global state: 0-d tensors (curriculum) and the metric sums.
_GLOBAL_STATE = ("penalty_scale", "mean_episode_length", "sums")
# Metric sums: every term's per-step mean, the reward's, then episode counts and sums.
_SUMS = (*(f"reward/{t}" for t in REWARD_TERMS), "reward/total", "steps")
_EPISODE_SUMS = ("episodes", "terminated", "return", "length")


class G1WalkWarp(DeviceVecEnv):
    """`num_envs` G1 Walk Flat envs on MuJoCo Warp, autoresetting; `g1_walk_flat`'s contract."""

    obs_dim = OBS_DIM
    critic_obs_dim = CRITIC_OBS_DIM
    action_dim = NUM_JOINTS

    def __init__(
        self, task_cfg: TaskConfig, backend_cfg: BackendConfig, num_envs: int, seed: int
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        import_warp()  # the missing extra, in one line, before anything is built
        opts = backend_cfg.warp_options()
        device = opts.resolved_device()
        if device == "cpu":
            log.warning(
                "backend=mjwarp runs on Warp's CPU device: for testing only (slow; the first "
                "step compiles the kernels, cached in ~/.cache/warp)"
            )
        self.cfg = task_cfg
        self.num_envs = n = num_envs
        self.seed = int(seed)
        self.max_episode_steps = task_cfg.max_episode_steps
        model = build_task_model(task_cfg)
        self.layout = layout = G1Layout.from_model(model)
        self.physics = WarpPhysics(
            model, n, device, opts.nconmax, opts.njmax, deterministic=opts.deterministic
        )
        dev = self._device = self.physics.device

        def to(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(a, device=dev)

        self._idx = T.TaskIndex.from_layout(layout, to)
        self._ranges = T.ResetRanges.of(layout, model.nv, task_cfg.commands, to)
        actuators = T.as_slice(layout.actuators)  # a view where contiguous (the built-in's)
        self._actuators = actuators if isinstance(actuators, slice) else to(actuators)
        weights, is_penalty = T.reward_weights(task_cfg)
        self._weights, self._is_penalty = to(weights), to(is_penalty)
        self._pose_weights = to(np.asarray(task_cfg.pose_weights, dtype=np.float64))
        self._noise_scale = to(T.noise_scale(task_cfg.obs))
        self._phase_delta = 2.0 * math.pi * task_cfg.gait.frequency * task_cfg.ctrl_dt
        self._min_up_z = math.cos(math.radians(task_cfg.termination_tilt_deg))
        self._window = max(1, int(task_cfg.curriculum.window * n / 4096))
        self.rng = TorchEnvStreams(self.seed, np.arange(n), 2, dev)

        def zeros(*shape: int, dtype: torch.dtype = _F64) -> torch.Tensor:
            return torch.zeros(shape, dtype=dtype, device=dev)

        self._alive = torch.ones(n, dtype=_F64, device=dev)
        self._all = torch.ones(n, dtype=torch.bool, device=dev)
        self.action, self.last_action = zeros(n, NUM_JOINTS), zeros(n, NUM_JOINTS)
        self.command, self.phase = zeros(n, 3), zeros(n, 2)
        self.episode_step = zeros(n, dtype=torch.int64)
        self.episode_return = zeros(n)
        cur = task_cfg.curriculum
        self.penalty_scale = torch.tensor(cur.initial_scale, dtype=_F64, device=dev)
        self.mean_episode_length = zeros()
        self.sums = zeros(len(_SUMS) + len(_EPISODE_SUMS))
        self._last_episode = {"episode/return": 0.0, "episode/length": 0.0}
        f32 = torch.float32
        self._terms = zeros(n, len(REWARD_TERMS), dtype=f32)
        self._out = DeviceEnvStep(
            obs=zeros(n, OBS_DIM, dtype=f32),
            critic_obs=zeros(n, CRITIC_OBS_DIM, dtype=f32),
            final_obs=zeros(n, OBS_DIM, dtype=f32),
            final_critic_obs=zeros(n, CRITIC_OBS_DIM, dtype=f32),
            reward=zeros(n, dtype=f32),
            terminated=zeros(n, dtype=torch.bool),
            truncated=zeros(n, dtype=torch.bool),
            reward_terms={name: self._terms[:, i] for i, name in enumerate(REWARD_TERMS)},
            episode_return=zeros(n, dtype=f32),
            episode_length=zeros(n, dtype=torch.int32),
        )
        self._graph: torch.cuda.CUDAGraph | None = None
        self._graph_actions: torch.Tensor | None = None
        self._mode = "eager"
        self.reset()  # the outputs hold first observations, as the CPU env's do
        self._capture_physics()

    # -- the contract ---------------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return self._device

    @property
    def step_mode(self) -> str:
        return self._mode

    def reset(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Reset every env (fresh randomization); returns the (obs, critic_obs) outputs."""
        self._reset_rows(self._all)
        out = self._out
        out.final_obs.copy_(out.obs)
        out.final_critic_obs.copy_(out.critic_obs)
        return out.obs, out.critic_obs

    def step(self, actions: torch.Tensor) -> DeviceEnvStep:
        if tuple(actions.shape) != (self.num_envs, NUM_JOINTS):
            raise ValueError(f"actions must be {(self.num_envs, NUM_JOINTS)}, got {actions.shape}")
        if self._graph is not None and actions is self._graph_actions:
            self._graph.replay()
        else:
            self._step(actions)
        return self._out

    def capture(self, actions: torch.Tensor) -> bool:
        """On CUDA: the whole control step (Warp's physics launches and the task's torch ops)
        as one torch CUDA graph on the current stream, replayed by `step(actions)`. A step runs
        first, eagerly (Warp loads its kernels, torch its lazy state) and is undone."""
        if not self.physics.wp_device.is_cuda:
            return False
        state = self.get_state()
        try:
            self._step(actions)
            self.set_state(state)
            torch.cuda.synchronize(self._device)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                with self.physics.external_capture():
                    self._step(actions)
        except Exception as err:  # noqa: BLE001 - any capture failure falls back, loudly
            log.warning(
                "CUDA graph capture of the MuJoCo Warp step failed (%s: %s); stepping %s",
                type(err).__name__,
                err,
                "with Warp graphs for the physics" if self._mode == "warp_graph" else "eagerly",
            )
            torch.cuda.synchronize(self._device)
            self.set_state(state)
            return False
        self._graph, self._graph_actions = graph, actions
        self._mode = "cuda_graph"
        return True

    def metrics(self) -> dict[str, float]:
        """Means since the previous call (episode stats: of the episodes finished meanwhile).
        The one read of the device in a loop iteration that asks for it: an explicit copy and
        wait, never an implicit synchronization."""
        curriculum = torch.stack((self.penalty_scale, self.mean_episode_length))
        device_values = torch.cat((self.sums, curriculum))
        host = torch.empty(device_values.shape, dtype=_F64, pin_memory=self._device.type == "cuda")
        host.copy_(device_values, non_blocking=True)
        self.sums.zero_()
        if self._device.type == "cuda":
            torch.cuda.current_stream(self._device).synchronize()
        *sums, scale, mean = host.tolist()
        values = dict(zip((*_SUMS, *_EPISODE_SUMS), sums, strict=True))
        steps = max(values.pop("steps"), 1.0)
        result = {k: v / steps for k, v in values.items() if k.startswith("reward/")}
        episodes = values["episodes"]
        if episodes:
            self._last_episode = {
                "episode/return": values["return"] / episodes,
                "episode/length": values["length"] / episodes,
            }
        result.update(self._last_episode)
        result["episode/count"] = episodes
        result["episode/terminated_frac"] = values["terminated"] / episodes if episodes else 0.0
        result["curriculum/penalty_scale"] = scale
        result["curriculum/mean_episode_length"] = mean
        return result

    def get_state(self) -> dict[str, Any]:
        """Everything needed to continue bit-identically on the same device (host copies)."""

        def host(t: torch.Tensor) -> np.ndarray:
            return t.detach().cpu().numpy().copy()

        state: dict[str, Any] = {
            "format": STATE_FORMAT,
            "backend": "mjwarp",
            "num_envs": self.num_envs,
            "seed": self.seed,
            "physics": self.physics.get_state(),
            "rng_counters": host(self.rng.counters),
            "obs": host(self._out.obs),
            "critic_obs": host(self._out.critic_obs),
            "last_episode": dict(self._last_episode),
        }
        state.update({k: host(getattr(self, k)) for k in (*_TASK_STATE, *_GLOBAL_STATE)})
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        if state.get("backend") != "mjwarp" or state.get("format") != STATE_FORMAT:
            raise ValueError(
                "this env state was not saved by the mjwarp backend's G1 env of this version; "
                "resume it with the backend that wrote it"
            )
        if state["num_envs"] != self.num_envs:
            raise ValueError(f"state is for {state['num_envs']} envs, this env has {self.num_envs}")
        if int(state["seed"]) != self.seed:
            self.seed = int(state["seed"])
            self.rng = TorchEnvStreams(self.seed, np.arange(self.num_envs), 2, self._device)

        def load(target: torch.Tensor, value: Any) -> None:
            target.copy_(torch.as_tensor(np.asarray(value)).to(target.dtype))

        self.physics.set_state(state["physics"])
        load(self.rng.counters, state["rng_counters"])
        load(self._out.obs, state["obs"])
        load(self._out.critic_obs, state["critic_obs"])
        for name in (*_TASK_STATE, *_GLOBAL_STATE):
            load(getattr(self, name), state[name])
        self._last_episode = dict(state["last_episode"])

    def close(self) -> None:
        if self._graph is not None:  # no graph is destroyed while the device may replay it
            torch.cuda.synchronize(self._device)
        self._graph = self._graph_actions = None
        self.physics.close()

    # -- the control step -----------------------------------------------------------------------

    def _capture_physics(self) -> None:
        """The physics as Warp graphs (on Warp's CPU device its C++ replay of the same kernels,
        on CUDA CUDA graphs), the task as torch ops: how a step runs unless `capture` records
        all of it. The kernels load on a first, undone step."""
        state = self.get_state()
        self._step(torch.zeros(self.num_envs, NUM_JOINTS, device=self._device))
        self.set_state(state)
        if self.physics.capture(self.cfg.decimation):
            self._mode = "warp_graph"

    def _read(self) -> tuple[T.Quantities, torch.Tensor, torch.Tensor]:
        """The task's quantities, and qpos / qvel, of every env, float64."""
        p = self.physics
        qpos, qvel = p.qpos.to(_F64), p.qvel.to(_F64)
        q = T.read(qpos, qvel, p.sensordata.to(_F64), self._idx, self.cfg.obs.gravity_frame)
        return q, qpos, qvel

    def _observe(self, q: T.Quantities) -> tuple[torch.Tensor, torch.Tensor]:
        """(policy obs, critic obs), float32, of every env; draws the noise of every env."""
        ocfg = self.cfg.obs
        critic = T.critic_obs(q, self.action, self.command, self.phase, ocfg).to(torch.float32)
        unit = self.rng.peek(NOISE_STREAM, NOISE_VALUES) if ocfg.add_noise else None
        return T.policy_obs(critic, unit, self._noise_scale), critic

    def _step(self, actions: torch.Tensor) -> None:
        cfg, out, p = self.cfg, self._out, self.physics
        self.last_action.copy_(self.action)
        self.action.copy_(torch.clamp(actions.to(_F64), -1.0, 1.0))
        ctrl = self._idx.default_joint_pos + cfg.action_scale * self.action
        p.ctrl[:, self._actuators] = ctrl.to(torch.float32)
        self.phase.copy_(T.advance_phase(self.phase, self._phase_delta))
        p.step(cfg.decimation)
        self.episode_step += 1

        q, qpos, qvel = self._read()
        obs, critic = self._observe(q)
        if cfg.obs.add_noise:
            self.rng.advance(NOISE_STREAM)
        raw = T.raw_rewards(
            q,
            self.command,
            self.action,
            self.last_action,
            self.phase,
            self._alive,
            cfg,
            self._pose_weights,
        )
        scale = self.penalty_scale if cfg.curriculum.enabled else 1.0
        terms, total = T.weigh(raw, T.scaled_weights(self._weights, self._is_penalty, scale))
        terms32 = torch.stack(terms, dim=1).to(torch.float32)
        reward = total.to(torch.float32)
        min_height = cfg.termination_min_height
        terminated = T.terminated(q, qpos, qvel, self._idx, self._min_up_z, min_height)
        broken = T.broken(critic, reward)  # never hand NaN to the learner: zero, end the episode
        rows = broken[:, None]
        out.final_obs.copy_(obs.masked_fill(rows, 0.0))
        out.final_critic_obs.copy_(critic.masked_fill(rows, 0.0))
        out.reward.copy_(reward.masked_fill(broken, 0.0))
        self._terms.copy_(terms32.masked_fill(rows, 0.0))
        terminated = terminated | broken
        truncated = T.truncated(self.episode_step, self.max_episode_steps, terminated)
        out.terminated.copy_(terminated)
        out.truncated.copy_(truncated)
        self.episode_return += out.reward.to(_F64)
        out.episode_return.copy_(self.episode_return)
        out.episode_length.copy_(self.episode_step)
        out.obs.copy_(out.final_obs)
        out.critic_obs.copy_(out.final_critic_obs)
        done = terminated | truncated
        self._add_metrics(done)
        self._reset_rows(done)
        self._update_curriculum(done)

    def _reset_rows(self, done: torch.Tensor) -> None:
        """New episodes where `done`: the reset draw, the physics, the task state and the first
        observations (every env computed, the rows of `done` kept)."""
        cfg, out, rows = self.cfg, self._out, done[:, None]
        unit = self.rng.peek(RESET_STREAM, RESET_VALUES)
        draw = T.draw_reset(unit, self._ranges, cfg.reset, cfg.commands)
        self.rng.advance(RESET_STREAM, done)
        self.physics.set_gain_scales(done, draw.kp_scale, draw.kd_scale)
        self.physics.reset_worlds(done, draw.qpos, draw.qvel)
        self.command.copy_(torch.where(rows, draw.command, self.command))
        self.phase.copy_(torch.where(rows, draw.phase, self.phase))
        self.action.masked_fill_(rows, 0.0)
        self.last_action.masked_fill_(rows, 0.0)
        self.episode_return.masked_fill_(done, 0.0)
        self.episode_step.masked_fill_(done, 0)
        obs, critic = self._observe(self._read()[0])
        if cfg.obs.add_noise:
            self.rng.advance(NOISE_STREAM, done)
        out.obs.copy_(torch.where(rows, obs, out.obs))
        out.critic_obs.copy_(torch.where(rows, critic, out.critic_obs))

    def _add_metrics(self, done: torch.Tensor) -> None:
        out, f = self._out, done.to(_F64)
        step_sums = torch.cat(
            (
                self._terms.to(_F64).mean(dim=0),
                out.reward.to(_F64).mean().reshape(1),
                torch.ones(1, dtype=_F64, device=self._device),
                f.sum().reshape(1),
                (out.terminated.to(_F64) * f).sum().reshape(1),
                (out.episode_return.to(_F64) * f).sum().reshape(1),
                (out.episode_length.to(_F64) * f).sum().reshape(1),
            )
        )
        self.sums += step_sums

    def _update_curriculum(self, done: torch.Tensor) -> None:
        f = done.to(_F64)
        scale, mean = T.curriculum_step(
            self.penalty_scale,
            self.mean_episode_length,
            f.sum(),
            (self._out.episode_length.to(_F64) * f).sum(),
            self._window,
            self.cfg.curriculum,
        )
        self.penalty_scale.copy_(scale)
        self.mean_episode_length.copy_(mean)
