from __future__ import annotations

from dataclasses import dataclass

from flashsac_bench.config.values import INT_MAX, ranged, require_bounded

# Every update is unrolled into one cycle (and one captured graph): bounded.
MAX_UPDATES_PER_STEP = 1024


@dataclass
class UpdateConfig:
    """How many updates one iteration runs (group `update`: u2, u8). The target network
    follows every critic update (Polyak, learner.tau), as UniLab's does."""

    # Critic updates per iteration (one env step of every env per iteration).
    updates_per_step: int = ranged(2, low=1, high=MAX_UPDATES_PER_STEP)
    # Actor + temperature update on every `policy_frequency`-th critic update.
    policy_frequency: int = ranged(2, low=1, high=INT_MAX)

    def __post_init__(self) -> None:
        require_bounded(self, "update.")

    @property
    def name(self) -> str:
        """The ratio's label, u<updates_per_step> (u2, u8, u16): what run dirs and tables say."""
        return f"u{self.updates_per_step}"

    @property
    def actor_update_indices(self) -> list[int]:
        return [u for u in range(self.updates_per_step) if u % self.policy_frequency == 0]

    @property
    def critic_updates(self) -> int:
        return self.updates_per_step

    @property
    def actor_updates(self) -> int:
        return len(self.actor_update_indices)
