"""Fake envs that run without learning anything, for runner.stopping's not-learning rule.

`NanRewardEnv`: a FakeEnv whose rewards are NaN, so every critic loss is NaN and the learner's
finite guard skips every update. `NanCriticObsEnv`: from its `start`-th step on, its critic
observations are NaN (the policy's stay finite): every update whose batch holds such a row is
skipped, while the reward statistics stay finite (a checkpoint of it can be resumed).
`DeadEnv`: a FakeEnv that zeroes every row and ends every episode at its first step, as an env
does with rows it cannot compute (G1's shards: non-finite physics or rewards).
"""

from __future__ import annotations

import numpy as np

from flashsac_bench.envs.contract.api import EnvStep
from tests.fakes.fake_env import FakeEnv


class NanRewardEnv(FakeEnv):
    def step(self, actions: np.ndarray) -> EnvStep:
        out = super().step(actions)
        out.reward[:] = np.nan
        return out


class NanCriticObsEnv(FakeEnv):
    start = 0

    def step(self, actions: np.ndarray) -> EnvStep:
        out = super().step(actions)
        self.steps_taken = getattr(self, "steps_taken", 0) + 1
        if self.steps_taken > self.start:
            out.final_critic_obs[:] = np.nan
        return out


class DeadEnv(FakeEnv):
    def step(self, actions: np.ndarray) -> EnvStep:
        out = super().step(actions)
        for arr in (out.final_obs, out.final_critic_obs, out.reward, *out.reward_terms.values()):
            arr[:] = 0.0
        out.terminated[:] = True
        out.truncated[:] = False
        out.episode_return[:] = 0.0
        out.episode_length[:] = 1
        self._reset_envs(np.ones(self.num_envs, bool))
        return out


def make_nan_reward_env(task, backend, num_envs: int, seed: int) -> NanRewardEnv:
    return NanRewardEnv(num_envs, seed)


def make_nan_critic_obs_env(task, backend, num_envs: int, seed: int, start: int = 0):
    env = NanCriticObsEnv(num_envs, seed)
    env.start = start
    return env


def make_dead_env(task, backend, num_envs: int, seed: int) -> DeadEnv:
    return DeadEnv(num_envs, seed)
