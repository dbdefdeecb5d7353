"""The distributional critic's head, fused: the categorical TD target from the target critic's
logits, and the cross-entropy of the online critic's logits against it (forward and backward).

References (`td_target_reference`, `cross_entropy_reference`; the learner's CPU path runs the
same functions of learner.distributional): log-softmax per member, the expected value
q = sum softmax * support, the member with the smaller q, its distribution shifted by the
reward, the discount and the entropy bonus and split back onto the support
(distributional.categorical_projection); the loss is the mean over members and rows of
-sum target * log_softmax.

Kernels: one program per row. `td_target_kernel` does everything from the two members'
logits to the projected target (the [K, K] split weights in CHUNK-column tiles);
`cross_entropy_kernel` writes each row's loss, q and log-sum-exp; `cross_entropy_backward_kernel`
writes the gradient w.r.t. the logits from them. Rows reduce their K atoms in one fixed order.
"""

from __future__ import annotations

import torch

from flashsac_bench.learner.distributional import categorical_projection, select_min_q
from flashsac_bench.learner.kernels import HAVE_TRITON

BLOCK_K = 128  # atoms per row (K <= BLOCK_K)
CHUNK = 32  # target atoms per tile of the split weights
NUM_WARPS = 4


def td_target_reference(
    logits: torch.Tensor,
    support: torch.Tensor,
    rewards: torch.Tensor,
    bootstrap: torch.Tensor,
    gamma: float,
    bonus: torch.Tensor,
    v_min: float,
    v_max: float,
) -> torch.Tensor:
    """The target distribution [B, K] from the target critic's next-state logits [E, B, K]
    (the shift's arguments in categorical_projection's order)."""
    log_probs = torch.log_softmax(logits, dim=-1)
    q = (torch.exp(log_probs) * support).sum(-1)
    probs = torch.exp(select_min_q(q, log_probs))
    return categorical_projection(probs, rewards, bootstrap, gamma, bonus, v_min, v_max)


def cross_entropy_reference(
    logits: torch.Tensor, target: torch.Tensor, support: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, mean q) of the online critic's logits [E, B, K] against the target [B, K]."""
    log_probs = torch.log_softmax(logits, dim=-1)
    q = (torch.exp(log_probs) * support).sum(-1)
    return -(target.unsqueeze(0) * log_probs).sum(-1).mean(), q.mean()


def td_target(logits, support, rewards, bootstrap, gamma, bonus, v_min, v_max) -> torch.Tensor:
    """td_target_reference as the fused op."""
    return torch.ops.flashsac.td_target(
        logits, support, rewards, bootstrap, float(gamma), bonus, float(v_min), float(v_max)
    )


def cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, support: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """cross_entropy_reference as the fused ops (differentiable w.r.t. the logits)."""
    ce, q, _ = CrossEntropyRows.apply(logits, target, support)
    return ce.mean(), q.mean()


class CrossEntropyRows(torch.autograd.Function):
    """Each row's (cross-entropy, q, log-sum-exp) with the fused backward (an autograd.Function
    with setup_context, so torch.func.grad can differentiate it)."""

    @staticmethod
    def forward(logits, target, support):
        return torch.ops.flashsac.cross_entropy_rows(logits, target, support)

    @staticmethod
    def setup_context(ctx, inputs, output):
        logits, target, support = inputs
        ctx.save_for_backward(logits, target, support, output[1], output[2])
        ctx.mark_non_differentiable(output[2])

    @staticmethod
    def backward(ctx, grad_ce, grad_q, grad_lse):
        logits, target, support, q, lse = ctx.saved_tensors
        zeros = torch.zeros_like
        grad_ce = zeros(q) if grad_ce is None else grad_ce
        grad_q = zeros(q) if grad_q is None else grad_q
        with torch.no_grad():  # the backward op itself is not differentiated
            grad = torch.ops.flashsac.cross_entropy_rows_backward(
                grad_ce, grad_q, logits, target, support, q, lse
            )
        return grad, None, None


# CPU: the reference itself (the op's plumbing tests).
_td_target = torch.library.custom_op("flashsac::td_target", td_target_reference, mutates_args=())


@_td_target.register_fake
def _(logits, support, rewards, bootstrap, gamma, bonus, v_min, v_max):
    return logits.new_empty(logits.shape[1:])


@torch.library.custom_op("flashsac::cross_entropy_rows", mutates_args=())
def _cross_entropy_rows(
    logits: torch.Tensor, target: torch.Tensor, support: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """CPU: the reference's arithmetic per row: (cross-entropy, q, log-sum-exp), each [E, B]."""
    lse = torch.logsumexp(logits, dim=-1)
    log_probs = logits - lse.unsqueeze(-1)
    q = (torch.exp(log_probs) * support).sum(-1)
    return -(target.unsqueeze(0) * log_probs).sum(-1), q, lse


@_cross_entropy_rows.register_fake
def _(logits, target, support):
    rows = logits.new_empty(logits.shape[:-1])
    return rows, torch.empty_like(rows), torch.empty_like(rows)


@torch.library.custom_op("flashsac::cross_entropy_rows_backward", mutates_args=())
def _cross_entropy_rows_backward(
    grad_ce: torch.Tensor,
    grad_q: torch.Tensor,
    logits: torch.Tensor,
    target: torch.Tensor,
    support: torch.Tensor,
    q: torch.Tensor,
    lse: torch.Tensor,
) -> torch.Tensor:
    """CPU: d/dlogits of grad_ce . ce + grad_q . q, with p = softmax(logits):
    grad_ce * (p * sum(target) - target) + grad_q * p * (support - q)."""
    p = torch.exp(logits - lse.unsqueeze(-1))
    mass = target.sum(-1)
    ce = grad_ce.unsqueeze(-1) * (p * mass.unsqueeze(-1) - target.unsqueeze(0))
    return ce + grad_q.unsqueeze(-1) * p * (support - q.unsqueeze(-1))


@_cross_entropy_rows_backward.register_fake
def _(grad_ce, grad_q, logits, target, support, q, lse):
    return logits.new_empty(logits.shape)


def _rows(t: torch.Tensor) -> torch.Tensor:
    """t with unit stride along its last dim (the kernels index atoms contiguously)."""
    return t if t.stride(-1) == 1 else t.contiguous()


if HAVE_TRITON:
    import triton
    import triton.language as tl

    @triton.jit
    def _softmax_row(logits_ptr, atoms, mask):
        """(log-sum-exp, softmax) of one row of logits."""
        x = tl.load(logits_ptr + atoms, mask=mask, other=-float("inf"))
        top = tl.max(x, axis=0)
        e = tl.where(mask, tl.exp(x - top), 0.0)
        lse = top + tl.log(tl.sum(e, axis=0))
        return x, lse, tl.where(mask, tl.exp(x - lse), 0.0)

    @triton.jit
    def td_target_kernel(
        logits_ptr,
        stride_e,
        stride_b,
        support_ptr,
        rewards_ptr,
        bootstrap_ptr,
        bonus_ptr,
        out_ptr,
        K,
        gamma,
        v_min,
        v_max,
        dz,
        MEMBERS: tl.constexpr,
        BLOCK_K: tl.constexpr,
        CHUNK: tl.constexpr,
    ):
        row = tl.program_id(0)
        atoms = tl.arange(0, BLOCK_K)
        mask = atoms < K
        z = tl.load(support_ptr + atoms, mask=mask, other=0.0)
        best_q = tl.full([], float("inf"), tl.float32)
        probs = tl.zeros([BLOCK_K], dtype=tl.float32)
        for e in tl.static_range(MEMBERS):
            _, _, p = _softmax_row(logits_ptr + e * stride_e + row * stride_b, atoms, mask)
            q = tl.sum(p * z, axis=0)
            probs = tl.where(q < best_q, p, probs)  # ties keep the first member (argmin's)
            best_q = tl.minimum(q, best_q)
        r = tl.load(rewards_ptr + row)
        scale = tl.load(bootstrap_ptr + row) * gamma
        tz = r + scale * (z - tl.load(bonus_ptr + row))
        b = tl.div_rn(tl.minimum(tl.maximum(tz, v_min), v_max) - v_min, dz)
        for start in tl.static_range(0, BLOCK_K, CHUNK):
            to = start + tl.arange(0, CHUNK)
            w = tl.maximum(1.0 - tl.abs(b[:, None] - to[None, :].to(tl.float32)), 0.0)
            m = tl.sum(probs[:, None] * w, axis=0)
            tl.store(out_ptr + row * K + to, m, mask=to < K)

    @triton.jit
    def _row(logits_ptr, stride_e, stride_b, target_ptr, support_ptr, B, K, BLOCK_K: tl.constexpr):
        """This program's row of [E, B] rows: (its index, its logits, atoms, mask, its target
        row, the support)."""
        pid = tl.program_id(0)
        atoms = tl.arange(0, BLOCK_K)
        mask = atoms < K
        row = pid % B
        m = tl.load(target_ptr + row * K + atoms, mask=mask, other=0.0)
        z = tl.load(support_ptr + atoms, mask=mask, other=0.0)
        return pid, logits_ptr + (pid // B) * stride_e + row * stride_b, atoms, mask, m, z

    @triton.jit
    def cross_entropy_kernel(
        logits_ptr, stride_e, stride_b, target_ptr, support_ptr, ce_ptr, q_ptr, lse_ptr, B, K,
        BLOCK_K: tl.constexpr,
    ):  # fmt: skip
        pid, logits_row, atoms, mask, m, z = _row(
            logits_ptr, stride_e, stride_b, target_ptr, support_ptr, B, K, BLOCK_K
        )
        x, lse, p = _softmax_row(logits_row, atoms, mask)
        ce = -tl.sum(m * tl.where(mask, x - lse, 0.0), axis=0)
        tl.store(ce_ptr + pid, ce)
        tl.store(q_ptr + pid, tl.sum(p * z, axis=0))
        tl.store(lse_ptr + pid, lse)

    @triton.jit
    def cross_entropy_backward_kernel(
        grad_ce_ptr, grad_q_ptr, logits_ptr, stride_e, stride_b, target_ptr, support_ptr, q_ptr,
        lse_ptr, out_ptr, B, K, BLOCK_K: tl.constexpr,
    ):  # fmt: skip
        pid, logits_row, atoms, mask, m, z = _row(
            logits_ptr, stride_e, stride_b, target_ptr, support_ptr, B, K, BLOCK_K
        )
        x = tl.load(logits_row + atoms, mask=mask, other=0.0)
        p = tl.where(mask, tl.exp(x - tl.load(lse_ptr + pid)), 0.0)
        mass = tl.sum(m, axis=0)
        grad = tl.load(grad_ce_ptr + pid) * (p * mass - m)
        grad += tl.load(grad_q_ptr + pid) * p * (z - tl.load(q_ptr + pid))
        tl.store(out_ptr + pid * K + atoms, grad, mask=mask)

    def launch_td_target(kernel, logits, support, rewards, bootstrap, gamma, bonus, v_min, v_max):
        """Launch `kernel` (td_target_kernel or its interpreted twin); returns the target."""
        logits = _rows(logits)
        members, batch, k = logits.shape
        if k > BLOCK_K:
            raise ValueError(f"the fused TD target takes at most {BLOCK_K} atoms, not {k}")
        out = logits.new_empty((batch, k))
        kernel[(batch,)](
            logits,
            logits.stride(0),
            logits.stride(1),
            support.contiguous(),
            rewards.contiguous(),
            bootstrap.contiguous(),
            bonus.contiguous(),
            out,
            k,
            gamma,
            v_min,
            v_max,
            (v_max - v_min) / (k - 1),
            MEMBERS=members,
            BLOCK_K=BLOCK_K,
            CHUNK=CHUNK,
            num_warps=NUM_WARPS,
        )
        return out

    def launch_cross_entropy(kernel, logits, target, support):
        logits = _rows(logits)
        members, batch, k = logits.shape
        if k > BLOCK_K:
            raise ValueError(f"the fused cross-entropy takes at most {BLOCK_K} atoms, not {k}")
        ce, q, lse = (logits.new_empty((members, batch)) for _ in range(3))
        kernel[(members * batch,)](
            logits, logits.stride(0), logits.stride(1), target.contiguous(), support.contiguous(),
            ce, q, lse, batch, k,
            BLOCK_K=BLOCK_K, num_warps=NUM_WARPS,
        )  # fmt: skip
        return ce, q, lse

    def launch_cross_entropy_backward(kernel, grad_ce, grad_q, logits, target, support, q, lse):
        logits = _rows(logits)
        members, batch, k = logits.shape
        out = logits.new_empty((members, batch, k))
        kernel[(members * batch,)](
            grad_ce.contiguous(), grad_q.contiguous(), logits, logits.stride(0), logits.stride(1),
            target.contiguous(), support.contiguous(), q.contiguous(), lse.contiguous(), out,
            batch, k, BLOCK_K=BLOCK_K, num_warps=NUM_WARPS,
        )  # fmt: skip
        return out

    @_td_target.register_kernel("cuda")
    def _(*args):
        return launch_td_target(td_target_kernel, *args)

    @_cross_entropy_rows.register_kernel("cuda")
    def _(*args):
        return launch_cross_entropy(cross_entropy_kernel, *args)

    @_cross_entropy_rows_backward.register_kernel("cuda")
    def _(*args):
        return launch_cross_entropy_backward(cross_entropy_backward_kernel, *args)
