"""Zeta-repeated exploration noise (official FlashSAC's).

One Gaussian noise vector per env is held for k ~ Zeta(mu) steps, P(k) ∝ k^-mu, k = 1..k_max
(mu 2, max 16: P(1) ≈ 0.63, E[k] ≈ 2.13). The repeat counter is shared by all envs (they all
resample together, as in the official code); an env that finished an episode also gets fresh
noise (UniLab). Everything is device tensors: acting never syncs with the host.
"""

from __future__ import annotations

import torch

from flashsac_bench.learner.rng import CounterRNG

STREAM_NOISE, STREAM_ZETA, STREAM_RANDOM_ACTION = 101, 102, 103


def zeta_pmf(mu: float, k_max: int) -> torch.Tensor:
    """P(k) for k = 1..k_max (float64)."""
    k = torch.arange(1, k_max + 1, dtype=torch.float64)
    w = k.pow(-mu)
    return w / w.sum()


class ZetaNoise:
    def __init__(self, num_envs: int, action_dim: int, mu: float, k_max: int, rng: CounterRNG):
        device = rng.counter.device
        self.rng = rng
        self.shape = (num_envs, action_dim)
        self.cdf = torch.cumsum(zeta_pmf(mu, k_max), 0).to(torch.float32).to(device)
        self.cdf[-1] = 1.0
        self.noise = torch.zeros(self.shape, dtype=torch.float32, device=device)
        self.count = torch.zeros((), dtype=torch.int64, device=device)
        self.repeat = torch.zeros((), dtype=torch.int64, device=device)  # 0: resample now

    def sample_repeat(self, n: int) -> torch.Tensor:
        """n draws of k ~ Zeta (int64)."""
        u = self.rng.uniform(STREAM_ZETA, (n,))
        return torch.searchsorted(self.cdf, u, right=True) + 1

    def step(self, dones: torch.Tensor | None) -> torch.Tensor:
        """The noise for this action; dones [N] marks envs whose episode just ended."""
        fresh = self.rng.normal(STREAM_NOISE, self.shape)
        resample_all = self.count >= self.repeat
        new_repeat = self.sample_repeat(1).squeeze(0)
        mask = resample_all.expand(self.shape[0])
        if dones is not None:
            mask = mask | dones.to(torch.bool)
        self.noise.copy_(torch.where(mask.unsqueeze(-1), fresh, self.noise))
        self.repeat.copy_(torch.where(resample_all, new_repeat, self.repeat))
        self.count.copy_(torch.where(resample_all, torch.ones_like(self.count), self.count + 1))
        return self.noise

    def tensors(self) -> dict[str, torch.Tensor]:
        return {"noise": self.noise, "count": self.count, "repeat": self.repeat}
