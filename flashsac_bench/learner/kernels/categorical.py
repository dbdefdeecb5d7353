"""The distributional critic's head, fused: the categorical TD target from the target critic's
logits, and the cross-entropy of the online critic's logits against it (forward and backward).

References (`td_target_reference`, `cross_entropy_reference`; the learner's CPU path runs the
same functions of learner.distributional): log-softmax per member, the expected value
q = sum softmax * support, the member with the smaller q, its distribution shifted by the
reward, the discount and the entropy bonus and split back onto the support
(distributional.categorical_projection); the loss is the mean over members and rows of
-sum target * log_softmax.

Ops (learner.kernels says what an op is here):
- `flashsac::td_target(logits [E, B, K], support [K], rewards [B], bootstrap [B], gamma,
  bonus [B], v_min, v_max) -> [B, K]`: not differentiated (the target is a constant).
- `flashsac::cross_entropy_rows(logits [E, B, K], target [B, K], support [K])
  -> (ce [E, B], q [E, B], dce [E, B, K], dq [E, B, K])`: every row's cross-entropy and
  expected value, and their gradients w.r.t. that row's logits (dce = p * sum(target) - target,
  dq = p * (support - q), p = softmax). Not differentiated itself: `cross_entropy` adds
  sum((logits - logits.detach()) * d) to each value -- exactly 0, with d as its gradient -- so
  the gradient flows through plain ops that every autograd (the engine, torch.func.grad,
  AOTAutograd under torch.compile) differentiates. Each row's values depend on that row's
  logits only, so this is the exact gradient. A custom op's own autograd would not do here:
  the autograd.Function that custom_op generates from register_autograd has no setup_context,
  which torch.func.grad (the learner's gradient under torch.compile) requires, and Dynamo
  traces an autograd.Function's forward inline under torch.func.grad, which leaves only the op.

Kernels: one program per row. `td_target_kernel` does everything from the E members' logits to
the projected target (the [K, K] split weights in CHUNK-column tiles); `cross_entropy_kernel`
writes each row's ce and q and their gradient rows. Rows reduce their K atoms in one fixed
order. Every atom lane is masked by `atoms < K` (2 <= K <= BLOCK_K, checked at launch), every
row index is below the grid's row count, and row offsets are int64.
"""

from __future__ import annotations

import torch

from flashsac_bench.learner.distributional import categorical_projection, select_min_q
from flashsac_bench.learner.kernels import HAVE_TRITON, register, require

BLOCK_K = 128  # atoms per row (K <= BLOCK_K)
CHUNK = 32  # target atoms per tile of the split weights
NUM_WARPS = 4
F32 = torch.float32


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
    """cross_entropy_reference as the fused op, differentiable w.r.t. the logits (the target
    and the support are constants): each value plus sum(delta * its gradient rows), with
    delta = logits - logits.detach() (exactly 0; d delta / d logits = 1)."""
    ce, q, dce, dq = torch.ops.flashsac.cross_entropy_rows(logits.detach(), target, support)
    delta = logits - logits.detach()
    ce = ce + (delta * dce).sum(-1)
    q = q + (delta * dq).sum(-1)
    return ce.mean(), q.mean()


# The ops. Their default implementations are the references' arithmetic (the CPU's without the
# interpreter); CUDA, and the CPU under the interpreter, launch the kernels (end of module).


# Each op is declared with the decorator over a function that calls its reference (the
# interop cross-check re-executes this module with the decorator stubbed).
@torch.library.custom_op("flashsac::td_target", mutates_args=())
def td_target_op(
    logits: torch.Tensor,
    support: torch.Tensor,
    rewards: torch.Tensor,
    bootstrap: torch.Tensor,
    gamma: float,
    bonus: torch.Tensor,
    v_min: float,
    v_max: float,
) -> torch.Tensor:
    return td_target_reference(logits, support, rewards, bootstrap, gamma, bonus, v_min, v_max)


@td_target_op.register_fake
def _(logits, support, rewards, bootstrap, gamma, bonus, v_min, v_max):
    return logits.new_empty(logits.shape[1:])


def cross_entropy_rows_reference(
    logits: torch.Tensor, target: torch.Tensor, support: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each row's (cross-entropy, q) [E, B] and their gradients w.r.t. the row's logits
    [E, B, K], in the reference's arithmetic."""
    lse = torch.logsumexp(logits, dim=-1, keepdim=True)
    log_probs = logits - lse
    p = torch.exp(log_probs)
    q = (p * support).sum(-1)
    ce = -(target.unsqueeze(0) * log_probs).sum(-1)
    dce = p * target.sum(-1, keepdim=True) - target.unsqueeze(0)
    return ce, q, dce, p * (support - q.unsqueeze(-1))


@torch.library.custom_op("flashsac::cross_entropy_rows", mutates_args=())
def cross_entropy_rows(
    logits: torch.Tensor, target: torch.Tensor, support: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    return cross_entropy_rows_reference(logits, target, support)


@cross_entropy_rows.register_fake
def _(logits, target, support):
    rows = logits.new_empty(logits.shape[:-1])
    grads = logits.new_empty(logits.shape)
    return rows, torch.empty_like(rows), grads, torch.empty_like(grads)


def _rows(t: torch.Tensor) -> torch.Tensor:
    """t with unit stride along its last dim (the kernels index atoms contiguously)."""
    return t if t.shape[-1] <= 1 or t.stride(-1) == 1 else t.contiguous()


def _dense(name: str, t: torch.Tensor, device: torch.device, shape: tuple[int, ...]):
    """t made contiguous (a copy only where it is not), checked to be `shape` on `device`."""
    t = t.contiguous()
    require(name, t, device, F32, shape)
    return t


def _check_logits(logits: torch.Tensor) -> tuple[int, int, int]:
    """(members, rows, atoms) of logits [E, B, K] that a kernel may read: K within one block."""
    if logits.dim() != 3:
        raise ValueError(f"logits must be [E, B, K], not {tuple(logits.shape)}")
    members, batch, k = logits.shape
    if not 2 <= k <= BLOCK_K:
        raise ValueError(f"the fused critic head takes 2..{BLOCK_K} atoms, not {k}")
    require("logits", logits, logits.device, F32, contiguous=False)
    return members, batch, k


if HAVE_TRITON:
    import triton
    import triton.language as tl

    @triton.jit
    def _softmax_row(logits_ptr, atoms, mask):
        """(logits, log-sum-exp, softmax) of one row of logits (0 outside the mask)."""
        x = tl.load(logits_ptr + atoms, mask=mask, other=-float("inf"))
        top = tl.max(x, axis=0)
        e = tl.where(mask, tl.exp(x - top), 0.0)
        lse = top + tl.log(tl.sum(e, axis=0))
        return tl.where(mask, x, 0.0), lse, tl.where(mask, tl.exp(x - lse), 0.0)

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
        row = tl.program_id(0).to(tl.int64)
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
        b = tl.where(mask, b, -2.0)  # lanes past K hold no mass and reach no atom
        for start in tl.static_range(0, BLOCK_K, CHUNK):
            to = start + tl.arange(0, CHUNK)
            w = tl.maximum(1.0 - tl.abs(b[:, None] - to[None, :].to(tl.float32)), 0.0)
            m = tl.sum(probs[:, None] * w, axis=0)
            tl.store(out_ptr + row * K + to, m, mask=to < K)

    @triton.jit
    def _row(logits_ptr, stride_e, stride_b, target_ptr, support_ptr, B, K, BLOCK_K: tl.constexpr):
        """This program's row of [E, B] rows: (its flat index, its logits, atoms, mask, its
        target row, the support)."""
        pid = tl.program_id(0).to(tl.int64)
        atoms = tl.arange(0, BLOCK_K)
        mask = atoms < K
        row = pid % B
        m = tl.load(target_ptr + row * K + atoms, mask=mask, other=0.0)
        z = tl.load(support_ptr + atoms, mask=mask, other=0.0)
        return pid, logits_ptr + (pid // B) * stride_e + row * stride_b, atoms, mask, m, z

    @triton.jit
    def cross_entropy_kernel(
        logits_ptr, stride_e, stride_b, target_ptr, support_ptr, ce_ptr, q_ptr, dce_ptr, dq_ptr,
        B, K, BLOCK_K: tl.constexpr,
    ):  # fmt: skip
        pid, logits_row, atoms, mask, m, z = _row(
            logits_ptr, stride_e, stride_b, target_ptr, support_ptr, B, K, BLOCK_K
        )
        x, lse, p = _softmax_row(logits_row, atoms, mask)
        ce = -tl.sum(m * tl.where(mask, x - lse, 0.0), axis=0)
        q = tl.sum(p * z, axis=0)
        tl.store(ce_ptr + pid, ce)
        tl.store(q_ptr + pid, q)
        tl.store(dce_ptr + pid * K + atoms, p * tl.sum(m, axis=0) - m, mask=mask)
        tl.store(dq_ptr + pid * K + atoms, p * (z - q), mask=mask)

    def _grid_rows(n: int) -> tuple[int]:
        if n >= 2**31:
            raise ValueError(f"{n} rows exceed one grid dimension")
        return (n,)

    def launch_td_target(kernel, logits, support, rewards, bootstrap, gamma, bonus, v_min, v_max):
        """Launch `kernel` (td_target_kernel); returns the target [B, K]."""
        logits = _rows(logits)
        members, batch, k = _check_logits(logits)
        dev = logits.device
        support = _dense("support", support, dev, (k,))
        rewards, bootstrap, bonus = (
            _dense(name, t, dev, (batch,))
            for name, t in (("rewards", rewards), ("bootstrap", bootstrap), ("bonus", bonus))
        )
        out = logits.new_empty((batch, k))
        if batch == 0:
            return out
        kernel[_grid_rows(batch)](
            logits, logits.stride(0), logits.stride(1), support, rewards, bootstrap, bonus, out,
            k, gamma, v_min, v_max, (v_max - v_min) / (k - 1),
            MEMBERS=members, BLOCK_K=BLOCK_K, CHUNK=CHUNK, num_warps=NUM_WARPS,
            enable_fp_fusion=False,
        )  # fmt: skip
        return out

    def launch_cross_entropy(kernel, logits, target, support):
        """Launch `kernel` (cross_entropy_kernel); returns (ce, q, dce, dq)."""
        logits = _rows(logits)
        members, batch, k = _check_logits(logits)
        dev = logits.device
        target = _dense("target", target, dev, (batch, k))
        support = _dense("support", support, dev, (k,))
        ce, q = (logits.new_empty((members, batch)) for _ in range(2))
        dce, dq = (logits.new_empty((members, batch, k)) for _ in range(2))
        if ce.numel() == 0:
            return ce, q, dce, dq
        kernel[_grid_rows(members * batch)](
            logits, logits.stride(0), logits.stride(1), target, support, ce, q, dce, dq, batch,
            k, BLOCK_K=BLOCK_K, num_warps=NUM_WARPS, enable_fp_fusion=False,
        )  # fmt: skip
        return ce, q, dce, dq

    def _td_target_kernel(*args):
        return launch_td_target(td_target_kernel, *args)

    def _cross_entropy_kernel(*args):
        return launch_cross_entropy(cross_entropy_kernel, *args)

    register(td_target_op, _td_target_kernel, td_target_reference)
    register(cross_entropy_rows, _cross_entropy_kernel, cross_entropy_rows_reference)
