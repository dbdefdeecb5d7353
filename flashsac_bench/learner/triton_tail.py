"""The fused optimizer tail as ONE Triton kernel per network (path.fused_optimizer).

One program per projection row (a weight row, a member's BN affine pair, an RMS gamma, or a
chunk of the unprojected entries): it loads the row's parameters, gradient, Adam moments (and
Polyak target), computes the Adam candidate, the row's norm and projection factor, and stores
everything -- only if the step is finite (`hyper[2]`). A row is at most a few thousand elements
(critic: 2048), so it lives in registers: one read and one write of every state element per
update, in one launch, where the unfused tail takes ~4 kernels that re-read the vectors.

Arithmetic follows `optimizer_tail.tail_candidate` operation by operation, with correctly
rounded division and square root (`div_rn`, `sqrt_rn`, as torch). Two things can differ from
torch at fp32 rounding: the row sum of squares is a tree reduction (torch's order differs), and
the GPU compiler may contract a multiply-add into one FMA (as Inductor's kernels do). Both move
results by a few ulps; tests/learner/test_optimizer_tail.py states the bound.

Registered as the custom op `torch.ops.flashsac.optimizer_tail` (torch.library.triton_op): one
opaque, capturable op. By default the learner calls it eagerly right after the compiled step,
so it is also recorded in the cudagraph path's capture. With path.fused_optimizer_in_graph the
compiled step calls it itself, and Inductor launches the kernel inside its own graph (where
torch's traced launch cannot take the `enable_fp_fusion` option: see the launch below). Triton's
CPU interpreter cannot be traced, so that route is checked on the GPU only
(tests/learner/test_gpu_paths.py); on the CPU the in-graph call runs the torch reference.
"""

# No `from __future__ import annotations` here: torch.library infers the custom op's schema
# from the live annotations (Optional[Tensor] for the target).
from dataclasses import dataclass
from typing import Optional

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

from flashsac_bench.learner.adam import AdamConfig
from flashsac_bench.learner.projection import Projector

FREE_NUMER = -1.0  # row table marker: unprojected row (factor 1)


@dataclass(frozen=True)
class RowTable:
    """Per-row start, length and projection constants of one network's flat vector."""

    start: torch.Tensor  # int64 [rows]
    length: torch.Tensor  # int32 [rows]
    numer: torch.Tensor  # float32 [rows]: target norm, FREE_NUMER for unprojected rows
    inner_eps: torch.Tensor  # float32 [rows]: added under the square root (BN affine)
    floor: torch.Tensor  # float32 [rows]: lower clamp of the norm (F.normalize's eps)
    block: int  # power of two >= every row's length
    numel: int

    @classmethod
    def build(cls, projector: Projector, device: torch.device | str) -> "RowTable":
        longest = max((g.length for g in projector.groups), default=1)
        block = max(16, triton.next_power_of_2(longest))
        start, length, numer, inner, floor = [], [], [], [], []
        for g in projector.groups:
            rows = (g.end - g.start) // g.length
            start += range(g.start, g.end, g.length)
            length += [g.length] * rows
            numer += g.numer.tolist()
            inner += g.inner_eps.tolist()
            floor += g.floor.tolist()
        for a, b in projector.free:
            for s in range(a, b, block):
                start.append(s)
                length.append(min(block, b - s))
                numer.append(FREE_NUMER)
                inner.append(0.0)
                floor.append(0.0)
        covered = sum(length)
        if covered != projector.numel:
            raise ValueError(f"row table covers {covered} of {projector.numel} elements")

        def t(values, dtype):
            return torch.tensor(values, dtype=dtype, device=device)

        return cls(
            t(start, torch.int64),
            t(length, torch.int32),
            t(numer, torch.float32),
            t(inner, torch.float32),
            t(floor, torch.float32),
            block,
            projector.numel,
        )


@triton.jit
def _tail_kernel(
    p_ptr,
    g_ptr,
    m_ptr,
    v_ptr,
    t_ptr,
    start_ptr,
    len_ptr,
    numer_ptr,
    inner_ptr,
    floor_ptr,
    hyper_ptr,
    w1,  # 1 - beta1 (torch.lerp's weight)
    beta2,
    one_minus_beta2,
    eps,
    tau,
    HAS_TARGET: tl.constexpr,
    TAU_SMALL: tl.constexpr,  # tau < 0.5: torch.lerp's first branch
    BLOCK: tl.constexpr,
):
    # Inductor's traced launch passes Python floats as fp64 (Triton's own launch: fp32); the
    # math is fp32 either way.
    w1, beta2, one_minus_beta2 = (
        w1.to(tl.float32),
        beta2.to(tl.float32),
        one_minus_beta2.to(tl.float32),
    )
    eps, tau = eps.to(tl.float32), tau.to(tl.float32)
    row = tl.program_id(0)
    start = tl.load(start_ptr + row)
    n = tl.load(len_ptr + row)
    numer = tl.load(numer_ptr + row)
    inner = tl.load(inner_ptr + row)
    floor = tl.load(floor_ptr + row)
    step_size = tl.load(hyper_ptr)
    bc2_sqrt = tl.load(hyper_ptr + 1)
    ok = tl.load(hyper_ptr + 2) != 0.0
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    idx = start + offs
    p = tl.load(p_ptr + idx, mask=mask, other=0.0)
    g = tl.load(g_ptr + idx, mask=mask, other=0.0)
    m = tl.load(m_ptr + idx, mask=mask, other=0.0)
    v = tl.load(v_ptr + idx, mask=mask, other=0.0)
    # adam.adam_apply, operation by operation.
    m2 = tl.fma(w1, g - m, m)  # torch.lerp(m, g, 1 - beta1): weight < 0.5, one FMA as torch
    v2 = v * beta2 + one_minus_beta2 * g * g
    denom = tl.div_rn(tl.sqrt_rn(v2), bc2_sqrt) + eps
    new = p - tl.div_rn(step_size * m2, denom)
    new = tl.where(mask, new, 0.0)
    # projection.Projector: factor = numer / max(sqrt(sum(x^2) + inner), floor).
    norm = tl.maximum(tl.sqrt_rn(tl.sum(new * new, axis=0) + inner), floor)
    factor = tl.where(numer < 0.0, 1.0, tl.div_rn(numer, norm))
    proj = new * factor
    keep = offs < tl.where(ok, n, 0)  # the finite gate: nothing is stored unless ok
    tl.store(p_ptr + idx, proj, mask=keep)
    tl.store(m_ptr + idx, m2, mask=keep)
    tl.store(v_ptr + idx, v2, mask=keep)
    if HAS_TARGET:
        t = tl.load(t_ptr + idx, mask=mask, other=0.0)
        if TAU_SMALL:  # torch.lerp(t, proj, tau), both branches with torch's FMA
            t2 = tl.fma(tau, proj - t, t)
        else:
            t2 = tl.fma(-(proj - t), 1.0 - tau, proj)
        tl.store(t_ptr + idx, t2, mask=keep)


@triton_op("flashsac::optimizer_tail", mutates_args={"params", "exp_avg", "exp_avg_sq", "target"})
def optimizer_tail(
    params: torch.Tensor,
    grad: torch.Tensor,
    exp_avg: torch.Tensor,
    exp_avg_sq: torch.Tensor,
    target: Optional[torch.Tensor],  # noqa: UP045 - the schema inference's spelling
    hyper: torch.Tensor,
    row_start: torch.Tensor,
    row_length: torch.Tensor,
    row_numer: torch.Tensor,
    row_inner_eps: torch.Tensor,
    row_floor: torch.Tensor,
    block: int,
    beta1: float,
    beta2: float,
    eps: float,
    tau: float,
) -> None:
    """Adam + finite gate + projection + Polyak of one flat vector, in place (one launch)."""
    rows = row_start.shape[0]
    # Real tensors: called eagerly (after a compiled step, or in a capture of it), where the
    # launch takes Triton's options. Anything else (fake / functional tensors) means Inductor
    # is tracing the op into a compiled graph (path.fused_optimizer_in_graph), whose traced
    # launch would take `enable_fp_fusion` for a kernel argument: there the kernel compiles
    # with Triton's default, which may contract a multiply-add into one FMA, as Inductor's own
    # kernels do (a few ulps; the GPU test's bounds).
    launch = {"enable_fp_fusion": False} if type(params) is torch.Tensor else {}
    # Without a target the kernel never touches t_ptr; a separate scratch keeps every pointer
    # argument distinct, so a traced launch sees no aliased inputs.
    t = target if target is not None else torch.empty(1, device=params.device)
    wrap_triton(_tail_kernel)[(rows,)](
        params,
        grad,
        exp_avg,
        exp_avg_sq,
        t,
        row_start,
        row_length,
        row_numer,
        row_inner_eps,
        row_floor,
        hyper,
        1.0 - beta1,
        beta2,
        1.0 - beta2,
        eps,
        tau,
        HAS_TARGET=target is not None,
        TAU_SMALL=tau < 0.5,
        BLOCK=block,
        num_warps=max(1, min(8, block // 256)),
        # No implicit multiply-add contraction: every other op rounds on its own, as torch's.
        **launch,
    )


def fused_tail(
    rows: RowTable,
    cfg: AdamConfig,
    tau: float,
    params: torch.Tensor,
    grad: torch.Tensor,
    exp_avg: torch.Tensor,
    exp_avg_sq: torch.Tensor,
    target: torch.Tensor | None,
    hyper: torch.Tensor,
) -> None:
    for name, x in (("params", params), ("grad", grad), ("exp_avg", exp_avg)):
        if x.numel() != rows.numel or not x.is_contiguous() or x.dtype != torch.float32:
            raise ValueError(f"optimizer tail: {name} must be a contiguous fp32 [{rows.numel}]")
    torch.ops.flashsac.optimizer_tail(
        params,
        grad,
        exp_avg,
        exp_avg_sq,
        target,
        hyper,
        rows.start,
        rows.length,
        rows.numer,
        rows.inner_eps,
        rows.floor,
        rows.block,
        cfg.beta1,
        cfg.beta2,
        cfg.eps,
        tau,
    )
