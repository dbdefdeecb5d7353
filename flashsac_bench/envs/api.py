"""The env contract the runner programs against (see `flashsac_bench.envs.make_env`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# Allocates one output array; the runner passes one backed by pinned (page-locked) memory.
ArrayFactory = Callable[[tuple[int, ...], np.dtype], np.ndarray]


def default_array_factory(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    return np.empty(shape, dtype)


@dataclass(frozen=True)
class EnvStep:
    """What one vector step returns. The arrays are allocated once and overwritten in place by
    every step: copy what must outlive the next call.

    obs / critic_obs: float32 (N, 98) / (N, 101), the observation for the NEXT action (after the
        autoreset of finished envs).
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
