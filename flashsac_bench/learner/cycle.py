"""One iteration's updates, as every path runs them: the plan (`plan_cycle`: UniLab's order of
critic and actor updates), every batch and noise tensor drawn up front from the counter RNG
(`Cycle.sample`), then each planned update handed to the path that runs the cycle
(learner.paths: eager, compiled, captured), which calls THE update definition (learner.update).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

import torch

from flashsac_bench.config.update import UpdateConfig
from flashsac_bench.learner.replay import ReplayRing
from flashsac_bench.learner.rng import index_bits, index_from_bits, normal_bits, normal_from_bits
from flashsac_bench.learner.state import METRIC_INDEX, LearnerState
from flashsac_bench.learner.update import UpdateStatics

# The counter RNG's streams of a cycle's draws (the acting streams: learner.exploration).
STREAM_INDEX, STREAM_NEXT_NOISE, STREAM_ACTOR_NOISE = 1, 2, 3


@dataclass(frozen=True)
class Op:
    """One planned update of a cycle: a critic update on batch slice `batch`, or an actor +
    temperature update on that slice with actor-noise slice `actor_index`."""

    kind: str  # "critic" | "actor"
    batch: int  # the batch slice (the critic update's index within the cycle)
    actor_index: int = -1
    update_target: bool = False  # critic: Polyak after this update


def plan_cycle(update: UpdateConfig) -> tuple[Op, ...]:
    """UniLab's order: critic u (Polyak after it), then actor + temperature when
    u % policy_frequency == 0."""
    ops: list[Op] = []
    actor_index = 0
    for u in range(update.updates_per_step):
        ops.append(Op("critic", u, update_target=True))
        if u % update.policy_frequency == 0:
            ops.append(Op("actor", u, actor_index=actor_index))
            actor_index += 1
    return tuple(ops)


class Draws(NamedTuple):
    """Every random input of one cycle."""

    batch: torch.Tensor  # [updates * B, width] sampled rows
    eps_next: torch.Tensor  # [updates, B, A] next-action noise of every critic update
    eps_actor: torch.Tensor  # [actor updates (>= 1), B, A] noise of every actor update


class UpdatePath(Protocol):
    """How one update runs (learner.paths): each call writes its result into the state."""

    def critic(
        self, rows: torch.Tensor, eps_next: torch.Tensor, divisor: torch.Tensor, update_target: bool
    ) -> None: ...

    def actor(self, rows: torch.Tensor, eps: torch.Tensor) -> None: ...


class Cycle:
    """One iteration's updates: every draw up front, then the planned updates in order."""

    def __init__(
        self,
        statics: UpdateStatics,
        state: LearnerState,
        ring: ReplayRing,
        plan: tuple[Op, ...],
        batch_size: int,
    ) -> None:
        self.statics, self.state, self.ring, self.plan = statics, state, ring, plan
        self.batch_size = batch_size
        self.n_updates = sum(op.kind == "critic" for op in plan)
        self.n_actor = sum(op.kind == "actor" for op in plan)
        # The sampled rows of every update, gathered in place (a static input of every path).
        self.batch = torch.zeros(
            self.n_updates * batch_size,
            statics.rows.width,
            dtype=torch.float32,
            device=ring.storage.device,
        )

    def sample(self) -> Draws:
        """A cycle's draws, in the order every path makes them: the rows of every update
        (into self.batch), the next-action noise of every critic update, the noise of every
        actor update."""
        B, A = self.batch_size, self.statics.rows.action_dim
        rows = self.n_updates * B
        next_shape, actor_shape = (self.n_updates, B, A), (max(self.n_actor, 1), B, A)
        idx_bits, next_bits, actor_bits = self.state.rng.bits(
            (
                (STREAM_INDEX, index_bits(rows)),
                (STREAM_NEXT_NOISE, normal_bits(next_shape)),
                (STREAM_ACTOR_NOISE, normal_bits(actor_shape)),
            )
        )
        idx = index_from_bits(idx_bits, rows, self.ring.size)
        torch.index_select(self.ring.storage, 0, idx, out=self.batch)
        return Draws(
            self.batch,
            normal_from_bits(next_bits, next_shape),
            normal_from_bits(actor_bits, actor_shape),
        )

    def run(self, path: UpdatePath) -> None:
        """Draw, then run every planned update on `path`."""
        draws = self.sample()
        s, B = self.state, self.batch_size
        divisor = s.reward_normalizer.divisor()
        s.metrics.zero_()
        s.metrics[METRIC_INDEX["reward_scale"]] = divisor
        for op in self.plan:
            rows = draws.batch[op.batch * B : (op.batch + 1) * B]
            if op.kind == "critic":
                path.critic(rows, draws.eps_next[op.batch], divisor, op.update_target)
            else:
                path.actor(rows, draws.eps_actor[op.actor_index])
