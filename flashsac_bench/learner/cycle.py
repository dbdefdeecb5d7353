"""One iteration's update cycle: sample, then the planned critic / actor updates, in order.

The same function runs on every path; only the two step callables differ (plain functions or
their torch.compile'd versions), and the cudagraph path captures one call of it as a graph.
All randomness (row indices, next-action noise, actor noise) is drawn up front from the
counter RNG, so the paths consume identical numbers in identical order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from flashsac_bench.config.update import UpdateConfig
from flashsac_bench.learner.replay import ReplayRing
from flashsac_bench.learner.state import METRIC_INDEX, LearnerState

STREAM_INDEX, STREAM_NEXT_NOISE, STREAM_ACTOR_NOISE = 1, 2, 3

CriticStep = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], None]
ActorStep = Callable[[torch.Tensor, torch.Tensor], None]


@dataclass(frozen=True)
class Op:
    kind: str  # "critic" | "actor"
    update: int  # critic update index within the cycle (its batch slice)
    actor_index: int = -1  # which actor-noise slice
    update_target: bool = False


def plan_cycle(update: UpdateConfig) -> tuple[Op, ...]:
    """UniLab's order: critic u, then actor + temperature when u % policy_frequency == 0
    (before the critic with policy_before_critic); Polyak when u % target_frequency == 0."""
    ops: list[Op] = []
    actor_index = 0
    for u in range(update.updates_per_step):
        critic = Op("critic", u, update_target=u % update.target_frequency == 0)
        actor = None
        if u % update.policy_frequency == 0:
            actor = Op("actor", u, actor_index=actor_index)
            actor_index += 1
        ops += [actor, critic] if update.policy_before_critic and actor else [critic]
        if actor and not update.policy_before_critic:
            ops.append(actor)
    return tuple(ops)


@dataclass
class CycleBuffers:
    """Static inputs of the cycle: the sampled rows of every update, gathered in place."""

    batch: torch.Tensor  # [updates * B, width]

    @classmethod
    def allocate(cls, updates: int, batch_size: int, width: int, device) -> CycleBuffers:
        return cls(torch.zeros(updates * batch_size, width, dtype=torch.float32, device=device))


def run_cycle(
    state: LearnerState,
    ring: ReplayRing,
    buffers: CycleBuffers,
    ops: tuple[Op, ...],
    batch_size: int,
    action_dim: int,
    reward_divisor: Callable[[], torch.Tensor],
    critic_step: CriticStep,
    actor_step: ActorStep,
) -> None:
    n_updates = buffers.batch.shape[0] // batch_size
    n_actor = sum(op.kind == "actor" for op in ops)
    rng = state.rng
    idx = rng.index(STREAM_INDEX, n_updates * batch_size, ring.size)
    torch.index_select(ring.storage, 0, idx, out=buffers.batch)
    eps_next = rng.normal(STREAM_NEXT_NOISE, (n_updates, batch_size, action_dim))
    eps_actor = rng.normal(STREAM_ACTOR_NOISE, (max(n_actor, 1), batch_size, action_dim))
    divisor = reward_divisor()
    state.metrics.zero_()
    state.metrics[METRIC_INDEX["reward_scale"]] = divisor
    for op in ops:
        rows = buffers.batch[op.update * batch_size : (op.update + 1) * batch_size]
        if op.kind == "critic":
            critic_step(rows, eps_next[op.update], divisor, op.update_target)
        else:
            actor_step(rows, eps_actor[op.actor_index])
