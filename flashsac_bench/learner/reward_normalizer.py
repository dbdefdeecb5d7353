"""Return-based reward scaling (official FlashSAC's), as device tensors.

Per env: G <- gamma * (1 - done) * G + r  (done = terminated or truncated of the transition);
G_max <- max(G_max, max|G|); a parallel-Welford RunningMeanStd over every step's G of all envs.
Rewards are stored raw and divided at sample time by max(sqrt(Var G + 1e-8), G_max / g_max),
which keeps normalized returns inside the critic's [-g_max, g_max] support.
"""

from __future__ import annotations

import torch

VAR_EPS = 1e-8


class RewardNormalizer:
    def __init__(self, num_envs: int, gamma: float, g_max: float, enabled: bool, device) -> None:
        self.gamma = gamma
        self.g_max = g_max
        self.enabled = enabled
        self.returns = torch.zeros(num_envs, dtype=torch.float32, device=device)
        self.returns_abs_max = torch.zeros((), dtype=torch.float32, device=device)
        # float64 statistics: the count reaches 1e9+ in long runs.
        self.mean = torch.zeros((), dtype=torch.float64, device=device)
        self.var = torch.ones((), dtype=torch.float64, device=device)
        self.count = torch.full((), 1e-4, dtype=torch.float64, device=device)

    @torch.no_grad()
    def update(self, rewards: torch.Tensor, dones: torch.Tensor) -> None:
        """One vector env step: rewards [N] raw, dones [N] (terminated | truncated)."""
        g = self.gamma * (1.0 - dones.to(torch.float32)) * self.returns + rewards
        self.returns.copy_(g)
        self.returns_abs_max.copy_(torch.maximum(self.returns_abs_max, g.abs().max()))
        g64 = g.to(torch.float64)
        batch_var, batch_mean = torch.var_mean(g64, correction=0)
        batch_count = float(g.numel())
        delta = batch_mean - self.mean
        total = self.count + batch_count
        m2 = self.var * self.count + batch_var * batch_count
        m2 = m2 + delta * delta * self.count * batch_count / total
        self.mean.copy_(self.mean + delta * batch_count / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def divisor(self) -> torch.Tensor:
        """0-d float32 reward divisor (1 when disabled). Pure device math: graph-safe."""
        if not self.enabled:
            return torch.ones((), dtype=torch.float32, device=self.returns.device)
        std = torch.sqrt(self.var + VAR_EPS).to(torch.float32)
        return torch.maximum(std, self.returns_abs_max / self.g_max)

    def tensors(self) -> dict[str, torch.Tensor]:
        return {
            "returns": self.returns,
            "returns_abs_max": self.returns_abs_max,
            "mean": self.mean,
            "var": self.var,
            "count": self.count,
        }
