from __future__ import annotations

import os
from dataclasses import dataclass

from flashsac_bench.config.errors import ConfigError


@dataclass
class BackendConfig:
    """Physics backend that steps the envs (group `backend`)."""

    name: str = "mujoco"
    # Native worker threads stepping the envs; 0 = one per CPU core this process may run on.
    num_threads: int = 0

    def __post_init__(self) -> None:
        if self.name != "mujoco":
            raise ConfigError(
                f"backend.name must be 'mujoco' (the only backend), got {self.name!r}"
            )
        if self.num_threads < 0:
            raise ConfigError(f"backend.num_threads must be >= 0, got {self.num_threads}")

    def resolved_num_threads(self, num_envs: int) -> int:
        """Worker threads actually used: never more than there are envs."""
        threads = self.num_threads or len(os.sched_getaffinity(0))
        return max(1, min(threads, num_envs))
