"""The optimizer tail of one network: Adam + finite gate + weight projection + Polyak.

After the gradient of a flat parameter vector is known, every update ends the same way:

    m', v', p' = Adam(p, g, m, v)          (elementwise, the 0-d scalars from adam.adam_hyper)
    p'' = project(p')                      (row-wise unit norms, learner.projection)
    target' = lerp(target, p'', tau)       (critic only, when the update moves the target)
    written only if ok (loss and gradient finite)

`tail_candidate` is that math as plain tensor ops, out of place: what the non-fused paths run
(inside the compiled step). With
`path.fused_optimizer` the update returns the gradient and a 3-element `hyper` vector instead,
and `OptimizerTail` applies the tail in place, after the compiled step: on CUDA as ONE Triton
kernel per network (learner.triton_tail, one program per projection row), elsewhere as
`tail_candidate` + copies (the reference the kernel is tested against).
"""

from __future__ import annotations

import torch

from flashsac_bench.learner.adam import AdamConfig, adam_apply
from flashsac_bench.learner.projection import Projector

# The fused tail's scalar inputs, in this order (one small device vector, no host sync).
HYPER = ("step_size", "bc2_sqrt", "ok")


def make_hyper(step_size: torch.Tensor, bc2_sqrt: torch.Tensor, ok: torch.Tensor) -> torch.Tensor:
    """[lr / bias_correction1, sqrt(bias_correction2), 1.0 if the step is finite else 0.0]."""
    return torch.stack(
        [step_size.reshape(()), bc2_sqrt.reshape(()), ok.to(torch.float32).reshape(())]
    )


def tail_candidate(
    projector: Projector,
    cfg: AdamConfig,
    tau: float,
    params: torch.Tensor,
    grad: torch.Tensor,
    exp_avg: torch.Tensor,
    exp_avg_sq: torch.Tensor,
    target: torch.Tensor | None,
    step_size: torch.Tensor,
    bc2_sqrt: torch.Tensor,
    ok: torch.Tensor,
) -> tuple[torch.Tensor, ...]:
    """Gated next (params, exp_avg, exp_avg_sq[, target]), out of place: today's math."""
    new_params, m, v = adam_apply(params, grad, exp_avg, exp_avg_sq, step_size, bc2_sqrt, cfg)
    new_params = projector(new_params)
    out = (
        torch.where(ok, new_params, params),
        torch.where(ok, m, exp_avg),
        torch.where(ok, v, exp_avg_sq),
    )
    if target is None:
        return out
    # Polyak on parameters only (BN running buffers are not averaged).
    return (*out, torch.where(ok, torch.lerp(target, new_params, tau), target))


class OptimizerTail:
    """Applies the tail of one network in place: `tail(params, grad, m, v, target, hyper)`.

    backend "triton": the fused kernel (CUDA, or Triton's interpreter on CPU tensors);
    "torch": `tail_candidate` then copies (any device; the reference).
    """

    def __init__(
        self,
        projector: Projector,
        cfg: AdamConfig,
        tau: float,
        device: torch.device | str,
        backend: str = "torch",
    ) -> None:
        if backend not in ("torch", "triton"):
            raise ValueError(f"optimizer tail backend must be 'torch' or 'triton', got {backend!r}")
        self.projector, self.cfg, self.tau, self.backend = projector, cfg, tau, backend
        if backend == "triton":
            from flashsac_bench.learner.triton_tail import RowTable

            self.rows = RowTable.build(projector, device)

    def __call__(
        self,
        params: torch.Tensor,
        grad: torch.Tensor,
        exp_avg: torch.Tensor,
        exp_avg_sq: torch.Tensor,
        target: torch.Tensor | None,
        hyper: torch.Tensor,
    ) -> None:
        if self.backend == "triton":
            from flashsac_bench.learner.triton_tail import fused_tail

            fused_tail(
                self.rows, self.cfg, self.tau, params, grad, exp_avg, exp_avg_sq, target, hyper
            )
            return
        new = tail_candidate(
            self.projector,
            self.cfg,
            self.tau,
            params,
            grad,
            exp_avg,
            exp_avg_sq,
            target,
            hyper[0],
            hyper[1],
            hyper[2] != 0,
        )
        dsts = [params, exp_avg, exp_avg_sq] + ([] if target is None else [target])
        torch._foreach_copy_(dsts, list(new))
