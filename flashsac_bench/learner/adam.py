"""Adam on one flat parameter vector, gated by an on-device finite flag.

The arithmetic is torch.optim.Adam's (betas, eps, bias corrections; no weight decay, no
amsgrad). Being plain tensor ops, it fuses with the projection and Polyak update under
Inductor, and a non-finite step is skipped with torch.where instead of a host `if`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class AdamConfig:
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8


@dataclass
class AdamState:
    exp_avg: torch.Tensor
    exp_avg_sq: torch.Tensor
    step: torch.Tensor  # float32 0-d (a view into LearnerState.scalars): steps taken

    @classmethod
    def zeros_like(cls, params: torch.Tensor, step: torch.Tensor) -> AdamState:
        return cls(torch.zeros_like(params), torch.zeros_like(params), step)

    def tensors(self) -> dict[str, torch.Tensor]:
        return {"exp_avg": self.exp_avg, "exp_avg_sq": self.exp_avg_sq, "step": self.step}


def adam_candidate(
    params: torch.Tensor,
    grad: torch.Tensor,
    state: AdamState,
    lr: torch.Tensor,
    cfg: AdamConfig,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(new_params, new_exp_avg, new_exp_avg_sq, new_step) of one Adam step, out of place."""
    step = state.step + 1.0
    exp_avg = torch.lerp(state.exp_avg, grad, 1.0 - cfg.beta1)
    exp_avg_sq = state.exp_avg_sq * cfg.beta2 + (1.0 - cfg.beta2) * grad * grad
    bias_correction1 = 1.0 - torch.pow(cfg.beta1, step)
    bias_correction2 = 1.0 - torch.pow(cfg.beta2, step)
    denom = exp_avg_sq.sqrt() / bias_correction2.sqrt() + cfg.eps
    new_params = params - (lr / bias_correction1) * exp_avg / denom
    return new_params, exp_avg, exp_avg_sq, step


def is_finite(loss: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """0-d bool: the loss and every gradient element are finite (stays on the device)."""
    return torch.isfinite(loss) & torch.isfinite(grad).all()
