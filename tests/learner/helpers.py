"""Tiny learners and synthetic replay contents for the CPU learner tests."""

from __future__ import annotations

import torch

from flashsac_bench.config.learner import LearnerConfig
from flashsac_bench.config.path import PathConfig
from flashsac_bench.config.update import UpdateConfig
from flashsac_bench.learner.learner import Dims, FlashSACLearner

# Every dimension differs (obs 5, critic 7, act 3 (2 heads: 6), in 10, hidden 12/48 and 20/80,
# atoms 11, batch 8, joint batch 16), so a tensor's shape tells which layer or batch it belongs to.
DIMS = Dims(obs=5, critic_obs=7, action=3)
BATCH = 8
NUM_ENVS = 4


def tiny_config(**overrides) -> LearnerConfig:
    base = dict(actor_hidden_dim=12, critic_hidden_dim=20, num_atoms=11, expansion=4)
    base.update(overrides)
    return LearnerConfig(**base)


def tiny_learner(
    path: str = "eager",
    updates_per_step: int = 2,
    policy_frequency: int = 2,
    seed: int = 0,
    fill_steps: int = 8,
    gemm_align: int = 1,
    path_options: dict | None = None,
    **cfg_overrides,
) -> FlashSACLearner:
    learner = FlashSACLearner(
        tiny_config(**cfg_overrides),
        UpdateConfig(updates_per_step=updates_per_step, policy_frequency=policy_frequency),
        DIMS,
        num_envs=NUM_ENVS,
        batch_size=BATCH,
        replay_capacity=64,
        path=PathConfig(name=path, **(path_options or {})),
        seed=seed,
        gemm_align=gemm_align,
    )
    fill_ring(learner, fill_steps)
    return learner


def fill_ring(learner: FlashSACLearner, steps: int, seed: int = 123) -> None:
    g = torch.Generator().manual_seed(seed)
    n, d = NUM_ENVS, learner.dims
    for _ in range(steps):
        rewards = torch.randn(n, generator=g)
        terminated = (torch.rand(n, generator=g) < 0.2).float()
        learner.ring.insert(
            obs=torch.randn(n, d.obs, generator=g),
            critic_obs=torch.randn(n, d.critic_obs, generator=g),
            next_obs=torch.randn(n, d.obs, generator=g),
            next_critic_obs=torch.randn(n, d.critic_obs, generator=g),
            actions=torch.rand(n, d.action, generator=g) * 2 - 1,
            rewards=rewards,
            terminated=terminated,
            truncated=torch.zeros(n),
        )
        learner.update_reward_stats(rewards, terminated)


def state_diff(a: FlashSACLearner, b: FlashSACLearner) -> dict[str, float]:
    ta, tb = a.state.tensors(), b.state.tensors()
    return {k: (ta[k].double() - tb[k].double()).abs().max().item() for k in ta}
