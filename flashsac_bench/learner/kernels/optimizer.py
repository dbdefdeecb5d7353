"""The whole optimizer step of one network in ONE kernel: Adam, the row-wise weight projection,
Polyak (critic) and the finite-flag gating, over the flat parameter vector.

Reference (`reference`, what update.optimizer_step runs on the CPU): learner.adam's Adam
arithmetic, the Projector's row factors, torch.lerp's Polyak, every next value gated by `ok`.
Inductor splits it into a reduction per row length (the norms of the Adam candidate), then a
pointwise pass that recomputes Adam and writes; here each program owns rows of the flat vector
(`Projector.row_table`): it reads a row, computes the Adam candidate and its squared norm, then
recomputes it (the row is cached) and writes the projected, gated values. Rows longer than
BLOCK are walked in BLOCK chunks; the norm sums BLOCK lanes then the lanes, in a fixed order.
Every lane is masked to its row (`off + lanes < length`) and to the vector (`at < numel`, so a
wrong row table cannot reach past the tensors); offsets are int64.

The op writes into its `out_*` tensors, which may be the inputs themselves (the eager and
cudagraph paths write the state in place; under torch.compile the op is functionalized and
reinplaced into the state) or fresh tensors (the compile path's pure updates).
"""

from __future__ import annotations

import torch

from flashsac_bench.learner.adam import AdamConfig, adam_apply
from flashsac_bench.learner.kernels import HAVE_TRITON, register, require
from flashsac_bench.learner.projection import Projector

BLOCK = 256  # elements per chunk of a row
NUM_WARPS = 4


def reference(
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
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(params, exp_avg, exp_avg_sq, target or None) after Adam, the projection and Polyak,
    each the old value where not `ok`."""
    new_params, m, v = adam_apply(params, grad, exp_avg, exp_avg_sq, step_size, bc2_sqrt, cfg)
    new_params = projector(new_params)
    # Polyak on parameters only (BN running buffers are not averaged).
    moved = None if target is None else torch.where(ok, torch.lerp(target, new_params, tau), target)
    return (
        torch.where(ok, new_params, params),
        torch.where(ok, m, exp_avg),
        torch.where(ok, v, exp_avg_sq),
        moved,
    )


def step(
    projector: Projector,
    cfg: AdamConfig,
    tau: float,
    *tensors: torch.Tensor | None,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None] | None = None,
    after: list[torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """`reference` as the fused op (the same `tensors`: params, grad, exp_avg, exp_avg_sq,
    target or None, step_size, bc2_sqrt, ok), written into `out` (params, exp_avg,
    exp_avg_sq, target; the inputs themselves to write in place) or into fresh tensors.

    `after`: every other result of the update that reads a tensor the op overwrites in place.
    The op takes them as (unused) inputs, so compiled code computes them before it: Inductor
    may otherwise compute a value it inlined lazily (a metric that reads a bias, say) after
    the op has overwritten what it reads."""
    params, grad, exp_avg, exp_avg_sq, target, step_size, bc2_sqrt, ok = tensors
    assert params is not None and exp_avg is not None and exp_avg_sq is not None  # only target
    assert ok is not None
    if out is None:
        fresh = torch.empty_like
        out = (
            fresh(params),
            fresh(exp_avg),
            fresh(exp_avg_sq),
            None if target is None else fresh(target),
        )
    rows, consts = projector.row_table()
    torch.ops.flashsac.adam_project_(
        *out,
        *tensors[:5],
        rows,
        consts,
        step_size,
        bc2_sqrt,
        # The flag as 1.0 / 0.0: compiled code then materializes it as fp32, never as a bool
        # output of a fused kernel (the one kernel kind that only this op made Inductor emit,
        # and the one Triton 3.6 failed to build on the GPU with torch 2.11).
        ok.to(torch.float32),
        float(1.0 - cfg.beta1),
        float(cfg.beta2),
        float(1.0 - cfg.beta2),
        float(cfg.eps),
        float(tau),
        list(after or ()),
    )
    return out


def adam_project_reference(
    out_params: torch.Tensor,
    out_exp_avg: torch.Tensor,
    out_exp_avg_sq: torch.Tensor,
    out_target: torch.Tensor | None,
    params: torch.Tensor,
    grad: torch.Tensor,
    exp_avg: torch.Tensor,
    exp_avg_sq: torch.Tensor,
    target: torch.Tensor | None,
    rows: torch.Tensor,
    consts: torch.Tensor,
    step_size: torch.Tensor,
    bc2_sqrt: torch.Tensor,
    ok: torch.Tensor,
    one_minus_beta1: float,
    beta2: float,
    one_minus_beta2: float,
    eps: float,
    tau: float,
    after: list[torch.Tensor],
) -> None:
    """The default implementation: the reference's arithmetic on the row table (the CPU's
    without the interpreter; the learner runs `reference` itself on the CPU)."""
    m = torch.lerp(exp_avg, grad, one_minus_beta1)
    v = exp_avg_sq * beta2 + one_minus_beta2 * grad * grad
    new = params - step_size * m / (v.sqrt() / bc2_sqrt + eps)
    starts, lengths = rows.long().unbind(-1)
    row_of = torch.repeat_interleave(torch.arange(len(starts), device=rows.device), lengths)
    sums = new.new_zeros(len(starts)).index_add_(0, row_of, new * new)
    numer, inner, floor = consts.unbind(-1)
    norm = torch.sqrt(sums + inner).clamp_min(floor)
    factor = torch.where(numer > 0, numer / norm, 1.0)
    new = new * factor[row_of]
    flag = ok != 0  # the finite flag, 1.0 / 0.0
    if out_target is not None:
        assert target is not None  # out_target is the target's next value
        out_target.copy_(torch.where(flag, torch.lerp(target, new, tau), target))
    out_params.copy_(torch.where(flag, new, params))
    out_exp_avg.copy_(torch.where(flag, m, exp_avg))
    out_exp_avg_sq.copy_(torch.where(flag, v, exp_avg_sq))


# Declared with the decorator over a function that calls the reference arithmetic (the interop
# cross-check re-executes this module with the decorator stubbed).
@torch.library.custom_op(
    "flashsac::adam_project_",
    mutates_args=("out_params", "out_exp_avg", "out_exp_avg_sq", "out_target"),
)
def adam_project_(
    out_params: torch.Tensor,
    out_exp_avg: torch.Tensor,
    out_exp_avg_sq: torch.Tensor,
    out_target: torch.Tensor | None,
    params: torch.Tensor,
    grad: torch.Tensor,
    exp_avg: torch.Tensor,
    exp_avg_sq: torch.Tensor,
    target: torch.Tensor | None,
    rows: torch.Tensor,
    consts: torch.Tensor,
    step_size: torch.Tensor,
    bc2_sqrt: torch.Tensor,
    ok: torch.Tensor,
    one_minus_beta1: float,
    beta2: float,
    one_minus_beta2: float,
    eps: float,
    tau: float,
    after: list[torch.Tensor],
) -> None:
    adam_project_reference(
        out_params, out_exp_avg, out_exp_avg_sq, out_target, params, grad, exp_avg, exp_avg_sq,
        target, rows, consts, step_size, bc2_sqrt, ok, one_minus_beta1, beta2, one_minus_beta2,
        eps, tau, after,
    )  # fmt: skip


@adam_project_.register_fake
def _(*args, **kwargs) -> None:
    return None


if HAVE_TRITON:
    import triton
    import triton.language as tl

    @triton.jit
    def _lerp(a, b, w):
        """torch.lerp's formula (its two branches keep |error| small near either end)."""
        return tl.where(w < 0.5, a + w * (b - a), b - (b - a) * (1.0 - w))

    @triton.jit
    def _adam(p_ptr, g_ptr, m_ptr, v_ptr, at, mask, step_size, bc2_sqrt, one_minus_beta1, beta2,
              one_minus_beta2, eps):  # fmt: skip
        """One chunk's (params, exp_avg, exp_avg_sq) and their Adam candidates."""
        p = tl.load(p_ptr + at, mask=mask, other=0.0)
        g = tl.load(g_ptr + at, mask=mask, other=0.0)
        m = tl.load(m_ptr + at, mask=mask, other=0.0)
        v = tl.load(v_ptr + at, mask=mask, other=0.0)
        m2 = _lerp(m, g, one_minus_beta1)
        v2 = v * beta2 + one_minus_beta2 * g * g
        denom = tl.div_rn(tl.sqrt_rn(v2), bc2_sqrt) + eps
        return p, m, v, p - tl.div_rn(step_size * m2, denom), m2, v2

    @triton.jit
    def adam_project_kernel(
        p_ptr,
        g_ptr,
        m_ptr,
        v_ptr,
        t_ptr,
        out_p_ptr,
        out_m_ptr,
        out_v_ptr,
        out_t_ptr,
        rows_ptr,
        consts_ptr,
        step_size_ptr,
        bc2_sqrt_ptr,
        ok_ptr,
        numel,
        one_minus_beta1,
        beta2,
        one_minus_beta2,
        eps,
        tau,
        HAS_TARGET: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        row = tl.program_id(0).to(tl.int64)
        start = tl.load(rows_ptr + 2 * row).to(tl.int64)
        length = tl.load(rows_ptr + 2 * row + 1)
        numer = tl.load(consts_ptr + 3 * row)
        inner = tl.load(consts_ptr + 3 * row + 1)
        floor = tl.load(consts_ptr + 3 * row + 2)
        step_size = tl.load(step_size_ptr)
        bc2_sqrt = tl.load(bc2_sqrt_ptr)
        ok = tl.load(ok_ptr) != 0.0
        lanes = tl.arange(0, BLOCK)
        squares = tl.zeros([BLOCK], dtype=tl.float32)
        for off in range(0, length, BLOCK):
            at = start + off + lanes
            mask = (off + lanes < length) & (at < numel)
            _, _, _, new, _, _ = _adam(
                p_ptr, g_ptr, m_ptr, v_ptr, at, mask,
                step_size, bc2_sqrt, one_minus_beta1, beta2, one_minus_beta2, eps,
            )  # fmt: skip
            squares += tl.where(mask, new * new, 0.0)
        norm = tl.maximum(tl.sqrt_rn(tl.sum(squares, axis=0) + inner), floor)
        factor = tl.where(numer > 0.0, tl.div_rn(numer, norm), 1.0)
        for off in range(0, length, BLOCK):
            at = start + off + lanes
            mask = (off + lanes < length) & (at < numel)
            p, m, v, new, m2, v2 = _adam(
                p_ptr, g_ptr, m_ptr, v_ptr, at, mask,
                step_size, bc2_sqrt, one_minus_beta1, beta2, one_minus_beta2, eps,
            )  # fmt: skip
            new = new * factor
            if HAS_TARGET:
                t = tl.load(t_ptr + at, mask=mask, other=0.0)
                tl.store(out_t_ptr + at, tl.where(ok, _lerp(t, new, tau), t), mask=mask)
            tl.store(out_p_ptr + at, tl.where(ok, new, p), mask=mask)
            tl.store(out_m_ptr + at, tl.where(ok, m2, m), mask=mask)
            tl.store(out_v_ptr + at, tl.where(ok, v2, v), mask=mask)

    def launch(kernel, out_params, out_exp_avg, out_exp_avg_sq, out_target, params, grad,
               exp_avg, exp_avg_sq, target, rows, consts, step_size, bc2_sqrt, ok,
               one_minus_beta1, beta2, one_minus_beta2, eps, tau, after=()) -> None:  # fmt: skip
        """Launch `kernel` (adam_project_kernel) after checking every tensor it indexes."""
        has_target = target is not None
        if has_target != (out_target is not None):
            raise ValueError("target and out_target: both tensors or both None")
        dev, n = params.device, params.numel()
        flat = [
            ("params", params), ("grad", grad), ("exp_avg", exp_avg), ("exp_avg_sq", exp_avg_sq),
            ("out_params", out_params), ("out_exp_avg", out_exp_avg),
            ("out_exp_avg_sq", out_exp_avg_sq),
        ]  # fmt: skip
        if has_target:
            flat += [("target", target), ("out_target", out_target)]
        for name, t in flat:
            require(name, t, dev, torch.float32, (n,))
        if n >= 2**31:
            raise ValueError(f"a flat vector of {n} elements needs a wider row table")
        require("rows", rows, dev, torch.int32, (rows.shape[0], 2))
        require("consts", consts, dev, torch.float32, (rows.shape[0], 3))
        for name, t in (("step_size", step_size), ("bc2_sqrt", bc2_sqrt), ("ok", ok)):
            require(name, t, dev, torch.float32, tuple(t.shape))
            if t.numel() != 1:
                raise ValueError(f"fused kernel argument {name!r}: one element, not {t.numel()}")
        if rows.shape[0] == 0:
            return
        kernel[(rows.shape[0],)](
            params,
            grad,
            exp_avg,
            exp_avg_sq,
            target if has_target else params,
            out_params,
            out_exp_avg,
            out_exp_avg_sq,
            out_target if has_target else out_params,
            rows,
            consts,
            step_size,
            bc2_sqrt,
            ok,
            n,
            one_minus_beta1,
            beta2,
            one_minus_beta2,
            eps,
            tau,
            HAS_TARGET=has_target,
            BLOCK=BLOCK,
            num_warps=NUM_WARPS,
            enable_fp_fusion=False,
        )

    def _adam_project_kernel(*args) -> None:
        launch(adam_project_kernel, *args)

    register(adam_project_, _adam_project_kernel, adam_project_reference)
