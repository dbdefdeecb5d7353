"""A tiny Gymnasium env with known episode lengths, registered on import as TINY_ID.

Its id names this module ("tests.fakes.tiny_gym_env:FlashsacTiny-v0"), so gymnasium.make
imports the module, and with it the registration, in any process (also in the spawned workers
of task.vectorization=async).

The observation is [step in the episode, episode number, the action's two entries]: its final
observation says where the episode ended, its first one that a new episode began. The reward
of step t (1-based) is t. Env i of a vector env is seeded seed + i, and seed % 3 fixes how its
episodes end: 0, at the time limit (TIME_LIMIT steps, truncated); 1, terminated at step
TERMINATE_AT; 2, terminated at step TIME_LIMIT, where the time limit truncates too.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

TINY_ID = "tests.fakes.tiny_gym_env:FlashsacTiny-v0"
TIME_LIMIT = 5
TERMINATE_AT = 3
# Action bounds unlike [-1, 1] in both entries (the adapter maps the policy's actions on them).
ACTION_LOW = np.array([-2.0, 0.0], np.float32)
ACTION_HIGH = np.array([2.0, 10.0], np.float32)


def episode_end(seed: int) -> tuple[int, bool, bool]:
    """(length, terminated, truncated as the env contract reports it) of env seeded `seed`:
    terminated wins where both happen."""
    kind = seed % 3
    if kind == 0:
        return TIME_LIMIT, False, True
    return (TERMINATE_AT if kind == 1 else TIME_LIMIT), True, False


class TinyEnv(gym.Env[np.ndarray, np.ndarray]):
    observation_space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float64)
    action_space = gym.spaces.Box(ACTION_LOW, ACTION_HIGH, dtype=np.float32)

    def __init__(self) -> None:
        self.t = 0
        self.episode = -1
        self.terminate_at: int | None = None
        self.last_action = np.zeros(2)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            kind = seed % 3
            self.terminate_at = {0: None, 1: TERMINATE_AT, 2: TIME_LIMIT}[kind]
        self.t = 0
        self.episode += 1
        self.last_action = np.zeros(2)
        return self._obs(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.t += 1
        self.last_action = np.asarray(action, np.float64)
        terminated = self.terminate_at is not None and self.t >= self.terminate_at
        return self._obs(), float(self.t), terminated, False, {}

    def _obs(self) -> np.ndarray:
        return np.array([self.t, self.episode, *self.last_action], np.float64)


gym.register(id="FlashsacTiny-v0", entry_point=TinyEnv, max_episode_steps=TIME_LIMIT)
