"""The env contract the runner, evaluation and export program against (`make_env` builds one)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class EnvStep:
    """What one vector step returns. The arrays are allocated once and overwritten in place by
    every step: copy what must outlive the next call.

    obs / critic_obs: float32 (N, obs_dim) / (N, critic_obs_dim), the observation for the NEXT
        action (after the autoreset of finished envs).
    final_obs / final_critic_obs: the true next observation of THIS transition (before any
        reset); equal to obs / critic_obs where the env did not finish.
    reward: float32 (N,), the sum of reward_terms.
    terminated: bool (N,), a failure (tilt, height, non-finite state): do not bootstrap.
    truncated: bool (N,), the time limit hit on a step that did not also terminate; terminated
        wins, so terminated & truncated is never true.
    reward_terms: name -> float32 (N,), each term already weighted (curriculum and ctrl_dt too).
    episode_return: float32 (N,), the undiscounted return of the episode so far; the final one
        where terminated | truncated.
    episode_length: int32 (N,), steps of the episode so far, the final one where done.
    """

    obs: np.ndarray
    critic_obs: np.ndarray
    final_obs: np.ndarray
    final_critic_obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    reward_terms: dict[str, np.ndarray]
    episode_return: np.ndarray
    episode_length: np.ndarray

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], terms: Sequence[str]) -> EnvStep:
        """Views of a shard layout's arrays (`envs.shards`): each field under its own name, the
        reward terms under "term/<name>"."""
        return cls(
            obs=arrays["obs"],
            critic_obs=arrays["critic_obs"],
            final_obs=arrays["final_obs"],
            final_critic_obs=arrays["final_critic_obs"],
            reward=arrays["reward"],
            terminated=arrays["terminated"],
            truncated=arrays["truncated"],
            reward_terms={name: arrays[f"term/{name}"] for name in terms},
            episode_return=arrays["episode_return"],
            episode_length=arrays["episode_length"],
        )


@runtime_checkable
class VecEnv(Protocol):
    """N autoresetting envs stepped together (what `make_env` and the env-factory hook return).

    `step` takes float actions (N, action_dim) in [-1, 1] (values outside are clipped) and returns
    the EnvStep described above. `get_state` returns everything needed to continue
    bit-identically (picklable: it goes into checkpoints); `set_state` restores it. `metrics`
    returns scalar means since its previous call. `close` frees what the env started (threads,
    worker processes, shared memory) and may be called more than once.
    """

    num_envs: int
    obs_dim: int
    critic_obs_dim: int
    action_dim: int
    max_episode_steps: int

    def reset(self) -> tuple[np.ndarray, np.ndarray]: ...

    def step(self, actions: np.ndarray) -> EnvStep: ...

    def metrics(self) -> dict[str, float]: ...

    def get_state(self) -> dict[str, Any]: ...

    def set_state(self, state: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class TaskEnv(VecEnv, Protocol):
    """What evaluation uses beyond VecEnv: the physics pose of every env (rendering) and the
    penalty-curriculum scale (so an evaluation can use the training env's)."""

    qpos: np.ndarray  # (N, nq), the state after the last step or reset
    penalty_scale: float
