"""Everything an update cycle reads and writes, as fixed device tensors.

All writes are in place (copy_), so tensor addresses never change: a captured CUDA graph stays
valid across iterations and `load_state_dict` can restore a checkpoint under it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from flashsac_bench.learner.adam import AdamState
from flashsac_bench.learner.exploration import ZetaNoise
from flashsac_bench.learner.reward_normalizer import RewardNormalizer
from flashsac_bench.learner.rng import CounterRNG

# Metric slots of one cycle (sums over the cycle's finite steps unless noted "last").
METRICS = (
    "critic_loss",
    "q_mean",
    "critic_skipped",
    "actor_loss",
    "entropy",
    "temperature_loss",
    "temperature",  # last
    "actor_skipped",
    "reward_scale",  # last
    "critic_lr",  # last
    "actor_lr",  # last
)
METRIC_INDEX = {name: i for i, name in enumerate(METRICS)}

# Every 0-d / 1-element piece of state lives in ONE small vector (`LearnerState.scalars`).
# Compiled update steps only READ it and return the next vector; the caller copies it back.
# Why: Inductor may fuse the write of a broadcast-read scalar into a multi-block kernel, and
# blocks that run later then read the already-updated value. Keeping these writes out of
# compiled graphs rules that out.
SCALARS = (
    "critic.adam.step",
    "actor.adam.step",
    "temperature.adam.step",
    "critic.sched_step",
    "actor.sched_step",
    "temperature.log_temp",
    "temperature.adam.exp_avg",
    "temperature.adam.exp_avg_sq",
)
SCALAR_INDEX = {name: i for i, name in enumerate(SCALARS)}
METRICS_OFFSET = len(SCALARS)
NUM_SCALARS = len(SCALARS) + len(METRICS)


@dataclass
class LearnerState:
    actor_params: torch.Tensor
    actor_buffers: torch.Tensor
    actor_adam: AdamState
    critic_params: torch.Tensor
    critic_buffers: torch.Tensor
    critic_adam: AdamState
    target_params: torch.Tensor
    target_buffers: torch.Tensor
    log_temp: torch.Tensor
    temp_adam: AdamState
    # Scheduler steps advance on every update (also skipped ones), Adam steps only on taken ones.
    critic_sched_step: torch.Tensor  # view into scalars
    actor_sched_step: torch.Tensor  # view into scalars
    reward_normalizer: RewardNormalizer
    rng: CounterRNG
    explore: ZetaNoise
    metrics: torch.Tensor  # view of scalars[METRICS_OFFSET:]
    scalars: torch.Tensor  # [NUM_SCALARS] float32; the fields above marked as views alias it

    def tensors(self) -> dict[str, torch.Tensor]:
        """Every persistent tensor by a stable name (snapshots, checkpoints, comparisons)."""
        out = {
            "actor.params": self.actor_params,
            "actor.buffers": self.actor_buffers,
            "critic.params": self.critic_params,
            "critic.buffers": self.critic_buffers,
            "target.params": self.target_params,
            "target.buffers": self.target_buffers,
            "temperature.log_temp": self.log_temp,
            "critic.sched_step": self.critic_sched_step,
            "actor.sched_step": self.actor_sched_step,
            "metrics": self.metrics,
        }
        for prefix, adam in (
            ("actor.adam", self.actor_adam),
            ("critic.adam", self.critic_adam),
            ("temperature.adam", self.temp_adam),
        ):
            out.update({f"{prefix}.{k}": v for k, v in adam.tensors().items()})
        out.update({f"reward.{k}": v for k, v in self.reward_normalizer.tensors().items()})
        out.update({f"rng.{k}": v for k, v in self.rng.tensors().items()})
        out.update({f"explore.{k}": v for k, v in self.explore.tensors().items()})
        return out

    def snapshot(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.tensors().items()}

    def restore(self, snap: dict[str, torch.Tensor]) -> None:
        tensors = self.tensors()
        missing = sorted(set(tensors) - set(snap))
        unexpected = sorted(set(snap) - set(tensors))
        if missing or unexpected:
            raise KeyError(f"learner state mismatch: missing {missing}, unexpected {unexpected}")
        with torch.no_grad():
            for k, v in tensors.items():
                if v.shape != snap[k].shape:
                    raise ValueError(f"{k}: checkpoint shape {tuple(snap[k].shape)} != {v.shape}")
                v.copy_(snap[k])
