from __future__ import annotations

from dataclasses import dataclass

from flashsac_bench.config.errors import ConfigError

MAX_UPDATES_PER_STEP = 1024


@dataclass
class UpdateConfig:
    """How many updates one iteration runs (group `update`: u2, u8)."""

    name: str = "u2"
    # Critic updates per iteration (one env step of every env per iteration).
    updates_per_step: int = 2
    # Actor + temperature update on every `policy_frequency`-th critic update.
    policy_frequency: int = 2
    # Polyak target update on every `target_frequency`-th critic update.
    target_frequency: int = 1

    def __post_init__(self) -> None:
        for key in ("updates_per_step", "policy_frequency", "target_frequency"):
            if getattr(self, key) < 1:
                raise ConfigError(f"update.{key} must be >= 1, got {getattr(self, key)}")
        # Every update is unrolled into one cycle (and one captured graph): bounded.
        if self.updates_per_step > MAX_UPDATES_PER_STEP:
            raise ConfigError(
                f"update.updates_per_step must be <= {MAX_UPDATES_PER_STEP}, got "
                f"{self.updates_per_step}"
            )

    @property
    def actor_update_indices(self) -> list[int]:
        return [u for u in range(self.updates_per_step) if u % self.policy_frequency == 0]

    @property
    def critic_updates(self) -> int:
        return self.updates_per_step

    @property
    def actor_updates(self) -> int:
        return len(self.actor_update_indices)
