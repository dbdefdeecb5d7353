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


def adam_hyper(
    lr: torch.Tensor, step: torch.Tensor, cfg: AdamConfig
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(step_size = lr / bias_correction1, sqrt(bias_correction2), next step) of one step:
    its 0-d part, computed once per step instead of once per element."""
    step = step + 1.0
    bias_correction1 = 1.0 - torch.pow(cfg.beta1, step)
    bias_correction2 = 1.0 - torch.pow(cfg.beta2, step)
    return lr / bias_correction1, bias_correction2.sqrt(), step


def adam_apply(
    params: torch.Tensor,
    grad: torch.Tensor,
    exp_avg: torch.Tensor,
    exp_avg_sq: torch.Tensor,
    step_size: torch.Tensor,
    bc2_sqrt: torch.Tensor,
    cfg: AdamConfig,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The elementwise part: (new_params, new_exp_avg, new_exp_avg_sq), out of place."""
    exp_avg = torch.lerp(exp_avg, grad, 1.0 - cfg.beta1)
    exp_avg_sq = exp_avg_sq * cfg.beta2 + (1.0 - cfg.beta2) * grad * grad
    denom = exp_avg_sq.sqrt() / bc2_sqrt + cfg.eps
    new_params = params - step_size * exp_avg / denom
    return new_params, exp_avg, exp_avg_sq


def adam_candidate(
    params: torch.Tensor,
    grad: torch.Tensor,
    state: AdamState,
    lr: torch.Tensor,
    cfg: AdamConfig,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(new_params, new_exp_avg, new_exp_avg_sq, new_step) of one Adam step, out of place."""
    step_size, bc2_sqrt, step = adam_hyper(lr, state.step, cfg)
    new_params, exp_avg, exp_avg_sq = adam_apply(
        params, grad, state.exp_avg, state.exp_avg_sq, step_size, bc2_sqrt, cfg
    )
    return new_params, exp_avg, exp_avg_sq, step


def is_finite(loss: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """0-d bool: the loss and every gradient element are finite (stays on the device).

    x * 0 is 0 for a finite x and NaN for inf or NaN, so the sum of them is 0 exactly when
    every element is finite: one reduction (an `isfinite` is several ops in eager)."""
    return (grad * 0.0).sum() + loss * 0.0 == 0.0
