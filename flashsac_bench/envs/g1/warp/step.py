"""The control step of the G1 walk on MuJoCo Warp (`g1.warp.walk_warp`), as its parts.

No part synchronizes with the host, and no shape depends on the data: every env is computed and
the rows that reset are selected with `where`. A control step is five parts in a fixed order:
the task's torch ops before the physics (`_act`), the physics substeps (Warp), the task's ops on
the new state (`_score`: observations, rewards, terminations, metrics, the reset draws of the
envs that ended), the stages of the reset worlds (Warp), and the reset envs' first observations
(`_begin`). The env runs them eagerly (`_step`) or replays the three torch parts as CUDA graphs
around Warp's own (`G1WalkWarp.capture`), so every part reads and writes the env's tensors in
place.
"""

from __future__ import annotations

import torch

from flashsac_bench.config.task import TaskConfig
from flashsac_bench.envs.contract.api import DeviceEnvStep
from flashsac_bench.envs.g1 import task as T
from flashsac_bench.envs.g1.task import NOISE_STREAM, NOISE_VALUES, RESET_STREAM, RESET_VALUES
from flashsac_bench.envs.g1.warp.env_rng_torch import TorchEnvStreams
from flashsac_bench.envs.g1.warp.physics import WarpPhysics

F64 = torch.float64


class WarpWalkStep:
    """The step's parts over the env's tensors (G1WalkWarp builds them: `_build`)."""

    cfg: TaskConfig
    max_episode_steps: int
    _device: torch.device
    _physics: WarpPhysics
    _out: DeviceEnvStep
    rng: TorchEnvStreams
    # The model's indices and the reset ranges, on the device.
    _idx: T.TaskIndex
    _ranges: T.ResetRanges
    _actuators: slice | torch.Tensor
    # Reward weights, penalty flags, pose weights, noise scales; constants of the task.
    _weights: torch.Tensor
    _is_penalty: torch.Tensor
    _pose_weights: torch.Tensor
    _noise_scale: torch.Tensor
    _phase_delta: float
    _min_up_z: float
    _window: int
    _alive: torch.Tensor
    # The envs of this step that ended, and the step's reward terms.
    _done: torch.Tensor
    _terms: torch.Tensor
    # The task's per-env state and the global state (`walk_warp`'s _TASK_STATE, _GLOBAL_STATE).
    action: torch.Tensor
    last_action: torch.Tensor
    command: torch.Tensor
    phase: torch.Tensor
    episode_step: torch.Tensor
    episode_return: torch.Tensor
    penalty_scale: torch.Tensor
    mean_episode_length: torch.Tensor
    sums: torch.Tensor

    def _read(self) -> tuple[T.Quantities, torch.Tensor, torch.Tensor]:
        """The task's quantities, and qpos / qvel, of every env, float64."""
        p = self._physics
        qpos, qvel = p.qpos.to(F64), p.qvel.to(F64)
        q = T.read(qpos, qvel, p.sensordata.to(F64), self._idx, self.cfg.obs.gravity_frame)
        return q, qpos, qvel

    def _observe(self, q: T.Quantities) -> tuple[torch.Tensor, torch.Tensor]:
        """(policy obs, critic obs), float32, of every env; draws the noise of every env."""
        ocfg = self.cfg.obs
        critic = T.critic_obs(q, self.action, self.command, self.phase, ocfg).to(torch.float32)
        unit = self.rng.peek(NOISE_STREAM, NOISE_VALUES) if ocfg.add_noise else None
        return T.policy_obs(critic, unit, self._noise_scale), critic

    def _step(self, actions: torch.Tensor) -> None:
        """One control step, as its five parts (the module's docstring)."""
        self._act(actions)
        self._physics.step(self.cfg.decimation)
        self._score()
        self._physics.stages()
        self._begin()

    def _act(self, actions: torch.Tensor) -> None:
        """The actions into the task state and the servo targets; the gait phase advances."""
        cfg, p = self.cfg, self._physics
        self.last_action.copy_(self.action)
        self.action.copy_(torch.clamp(actions.to(F64), -1.0, 1.0))
        ctrl = self._idx.default_joint_pos + cfg.action_scale * self.action
        p.ctrl[:, self._actuators] = ctrl.to(torch.float32)
        self.phase.copy_(T.advance_phase(self.phase, self._phase_delta))

    def _score(self) -> None:
        """The step's outputs from the new physics state (the true next observations, rewards,
        terminations, truncations), the metric sums, and the reset draws written into the
        envs that ended (`_done`); their physics stages follow."""
        cfg, out = self.cfg, self._out
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
        self.episode_return += out.reward.to(F64)
        out.episode_return.copy_(self.episode_return)
        out.episode_length.copy_(self.episode_step)
        out.obs.copy_(out.final_obs)
        out.critic_obs.copy_(out.final_critic_obs)
        self._done.copy_(terminated | truncated)
        self._add_metrics(self._done)
        self._reset_draw()

    def _begin(self) -> None:
        """After the reset worlds' stages: their first observations; the curriculum."""
        self._reset_observe()
        self._update_curriculum(self._done)

    def _reset_draw(self) -> None:
        """New episodes where `_done`: the reset draw into the physics state (its stages are
        the next part) and the task state (every env computed, the rows of `_done` kept)."""
        cfg, done = self.cfg, self._done
        rows = done[:, None]
        unit = self.rng.peek(RESET_STREAM, RESET_VALUES)
        draw = T.draw_reset(unit, self._ranges, cfg.reset, cfg.commands)
        self.rng.advance(RESET_STREAM, done)
        self._physics.set_gain_scales(done, draw.kp_scale, draw.kd_scale)
        self._physics.write_worlds(done, draw.qpos, draw.qvel)
        self.command.copy_(torch.where(rows, draw.command, self.command))
        self.phase.copy_(torch.where(rows, draw.phase, self.phase))
        self.action.masked_fill_(rows, 0.0)
        self.last_action.masked_fill_(rows, 0.0)
        self.episode_return.masked_fill_(done, 0.0)
        self.episode_step.masked_fill_(done, 0)

    def _reset_observe(self) -> None:
        """The first observations of the envs of `_done` (their stages computed)."""
        out, done = self._out, self._done
        rows = done[:, None]
        obs, critic = self._observe(self._read()[0])
        if self.cfg.obs.add_noise:
            self.rng.advance(NOISE_STREAM, done)
        out.obs.copy_(torch.where(rows, obs, out.obs))
        out.critic_obs.copy_(torch.where(rows, critic, out.critic_obs))

    def _add_metrics(self, done: torch.Tensor) -> None:
        out, f = self._out, done.to(F64)
        step_sums = torch.cat(
            (
                self._terms.to(F64).mean(dim=0),
                out.reward.to(F64).mean().reshape(1),
                torch.ones(1, dtype=F64, device=self._device),
                f.sum().reshape(1),
                (out.terminated.to(F64) * f).sum().reshape(1),
                (out.episode_return.to(F64) * f).sum().reshape(1),
                (out.episode_length.to(F64) * f).sum().reshape(1),
            )
        )
        self.sums += step_sums

    def _update_curriculum(self, done: torch.Tensor) -> None:
        f = done.to(F64)
        scale, mean = T.curriculum_step(
            self.penalty_scale,
            self.mean_episode_length,
            f.sum(),
            (self._out.episode_length.to(F64) * f).sum(),
            self._window,
            self.cfg.curriculum,
        )
        self.penalty_scale.copy_(scale)
        self.mean_episode_length.copy_(mean)
