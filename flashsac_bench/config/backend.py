from __future__ import annotations

from dataclasses import dataclass

from flashsac_bench.config.errors import ConfigError


@dataclass
class BackendConfig:
    """Physics backend that steps the envs (group `backend`)."""

    name: str = "mujoco"
    # Native worker threads stepping the envs; 0 = one per available CPU core.
    num_threads: int = 0

    def __post_init__(self) -> None:
        if self.name != "mujoco":
            raise ConfigError(
                f"backend.name must be 'mujoco' (the only backend), got {self.name!r}"
            )
        if self.num_threads < 0:
            raise ConfigError(f"backend.num_threads must be >= 0, got {self.num_threads}")
