"""Categorical (C51-style) TD target of FlashSAC's distributional critic."""

from __future__ import annotations

import math

import torch


def target_entropy(action_dim: int, sigma: float) -> float:
    """0.5 * |A| * ln(2 pi e sigma^2): the entropy of a per-dimension Normal(., sigma)."""
    return 0.5 * action_dim * math.log(2.0 * math.pi * math.e * sigma * sigma)


def select_min_q(q: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
    """Per sample, the WHOLE distribution [B, K] of the member with the smaller expected value.

    q [E, B], log_probs [E, B, K]. Ties pick the first member (argmin's convention).
    """
    member = torch.argmin(q, dim=0)  # [B]
    index = member.view(1, -1, 1).expand(1, *log_probs.shape[1:])
    return torch.gather(log_probs, 0, index).squeeze(0)


def categorical_projection(
    probs: torch.Tensor,
    rewards: torch.Tensor,
    bootstrap: torch.Tensor,
    gamma: float,
    entropy_bonus: torch.Tensor,
    v_min: float,
    v_max: float,
) -> torch.Tensor:
    """Project the shifted next-state distribution back onto the fixed support.

    probs [B, K] sit on z_j = linspace(v_min, v_max, K). Each atom moves to
    z'_j = clamp(r + bootstrap * gamma * (z_j - entropy_bonus), v_min, v_max) -- the entropy term
    (alpha * log pi(a'|s')) is inside the discount, per atom -- and its mass is split linearly
    between the two neighbouring atoms. Written as m_i = sum_j p_j * max(0, 1 - |b_j - i|) with
    b_j = (z'_j - v_min) / dz, which equals the floor/ceil split (an atom exactly on a bin edge
    gives all its mass to that bin; z' = v_max gives it all to the last atom) and, unlike
    scatter_add, is deterministic and fuses into one reduction.
    """
    k = probs.shape[-1]
    support = torch.linspace(v_min, v_max, k, device=probs.device, dtype=probs.dtype)
    dz = (v_max - v_min) / (k - 1)
    shifted = support - entropy_bonus.unsqueeze(-1)
    tz = rewards.unsqueeze(-1) + (bootstrap * gamma).unsqueeze(-1) * shifted
    b = (tz.clamp(v_min, v_max) - v_min) / dz  # [B, K] fractional atom positions
    atoms = torch.arange(k, device=probs.device, dtype=probs.dtype)
    weight = (1.0 - (b.unsqueeze(-1) - atoms).abs()).clamp_min(0.0)  # [B, K(from), K(to)]
    return (probs.unsqueeze(-1) * weight).sum(-2)


def cross_entropy(target: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
    """mean over members and batch of -sum_i m_i log p_i; target [B, K], log_probs [E, B, K]."""
    return -(target.unsqueeze(0) * log_probs).sum(-1).mean()
