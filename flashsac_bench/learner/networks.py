"""FlashSAC networks as pure functions of flat parameter / buffer vectors.

Actor:  BN(obs) -> W_embed -> N x Block -> RMSNorm -> (mean, log_std) heads   (tanh-Normal)
Critic: 2-member ensemble of BN(obs||act) -> W_embed -> N x Block -> RMSNorm -> 101-atom head
Block:  y = ReLU(BN2(W2 ReLU(BN1(W1 x)))) + x      (inverted bottleneck, expansion 4)

Linears have no bias (heads excepted). Matmuls run in `mm_dtype` (bf16 on CUDA), everything else
in fp32 -- the same split autocast makes, written out so every path casts identically. Each
forward returns the updated BatchNorm running statistics instead of mutating them, so the caller
decides (and the finite guard gates) whether they are written.

GEMM alignment (`align`, from hardware.gemm_align): a matmul dimension that is not a multiple of
8 (G1: inputs 130 / 98, heads 101 / 58) keeps cuBLAS on old unaligned kernels instead of the
Hopper ones. With align > 1 the matmul weights are zero-padded to multiples of `align` in the
same cast that makes their low-precision copies, the inputs are zero-padded, and the outputs are
sliced back: the padded products add exact zeros, so the function (and its gradient) is the
same; only the GEMM kernel, hence the summation order, may differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F

from flashsac_bench.learner.layout import (
    BN_AFFINE,
    FREE,
    RMS,
    ROWS,
    Layout,
    bn_affine_init,
    constant_init,
    ones_init,
    orthogonal_init,
)

LOG_STD_MIN, LOG_STD_MAX = -10.0, 2.0
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG2 = math.log(2.0)


@dataclass(frozen=True)
class NormConfig:
    bn_momentum: float = 0.01
    bn_eps: float = 1e-5
    rms_eps: float = 1e-6


@dataclass(frozen=True)
class NetSpec:
    """One trunk: input dim, width, blocks; `members` = ensemble size (0: plain network)."""

    in_dim: int
    hidden: int
    num_blocks: int
    expansion: int
    members: int = 0

    def lead(self) -> tuple[int, ...]:
        return (self.members,) if self.members else ()


class Network(NamedTuple):
    """One network as its pure forward functions take it: named parameter views (param_views),
    named buffer views, its shape, its norm constants and its matmul dtype."""

    params: dict[str, torch.Tensor]
    buffers: dict[str, torch.Tensor]
    spec: NetSpec
    norm: NormConfig
    mm_dtype: torch.dtype


def _trunk_layout(spec: NetSpec, params: Layout, buffers: Layout) -> None:
    lead, h, inner = spec.lead(), spec.hidden, spec.hidden * spec.expansion
    params.add("embed.bn", (*lead, 2, spec.in_dim), BN_AFFINE, bn_affine_init)
    params.add("embed.w", (*lead, h, spec.in_dim), ROWS, orthogonal_init)
    buffers.add("embed.bn.mean", (*lead, spec.in_dim))
    buffers.add("embed.bn.var", (*lead, spec.in_dim), init=ones_init)
    for i in range(spec.num_blocks):
        params.add(f"block{i}.w1", (*lead, inner, h), ROWS, orthogonal_init)
        params.add(f"block{i}.bn1", (*lead, 2, inner), BN_AFFINE, bn_affine_init)
        params.add(f"block{i}.w2", (*lead, h, inner), ROWS, orthogonal_init)
        params.add(f"block{i}.bn2", (*lead, 2, h), BN_AFFINE, bn_affine_init)
        for j, d in ((1, inner), (2, h)):
            buffers.add(f"block{i}.bn{j}.mean", (*lead, d))
            buffers.add(f"block{i}.bn{j}.var", (*lead, d), init=ones_init)
    params.add("rms", (*lead, h), RMS, ones_init)


def actor_layouts(obs_dim: int, action_dim: int, hidden: int, blocks: int, expansion: int):
    spec = NetSpec(obs_dim, hidden, blocks, expansion)
    params, buffers = Layout(), Layout()
    _trunk_layout(spec, params, buffers)
    # Mean and log-std heads as ONE [2A, h] matmul (rows 0..A-1: mean, A..2A-1: log-std);
    # row-wise projection and orthogonal init per head are unchanged by stacking.
    params.add("head.w", (2 * action_dim, hidden), ROWS, _two_head_init(action_dim))
    params.add("head.b", (2 * action_dim,), FREE)
    return spec, params.grouped(), buffers


def _two_head_init(action_dim: int):
    def init(view: torch.Tensor, generator: torch.Generator) -> None:
        orthogonal_init(view[:action_dim], generator)
        orthogonal_init(view[action_dim:], generator)

    return init


def critic_layouts(in_dim: int, hidden: int, blocks: int, expansion: int, atoms: int):
    spec = NetSpec(in_dim, hidden, blocks, expansion, members=2)
    params, buffers = Layout(), Layout()
    _trunk_layout(spec, params, buffers)
    params.add("head.w", (2, atoms, hidden), ROWS, orthogonal_init)
    params.add("head.b", (2, atoms), FREE)
    return spec, params.grouped(), buffers


def temperature_layout(initial: float) -> Layout:
    layout = Layout()
    layout.add("log_temp", (1,), FREE, constant_init(math.log(initial)))
    return layout


def aligned(n: int, align: int) -> int:
    """n rounded up to a multiple of align."""
    return -(-n // align) * align


def param_views(
    layout: Layout, flat: torch.Tensor, mm_dtype: torch.dtype, align: int = 1
) -> dict[str, torch.Tensor]:
    """Named parameter views of a flat vector that is not differentiated; matmul weights come
    from ONE cast of the whole vector (the same arithmetic as autocast's per-weight casts, in
    one kernel instead of one per layer), zero-padded to `align` (see the module docstring)."""
    full = layout.views(flat)
    low = full if mm_dtype == flat.dtype else layout.views(flat.to(mm_dtype))
    return {
        name: _padded(low[name], align) if _is_matmul(layout, name) else view
        for name, view in full.items()
    }


def matmul_views(
    layout: Layout, params: dict[str, torch.Tensor], mm_dtype: torch.dtype, align: int = 1
) -> dict[str, torch.Tensor]:
    """param_views for named fp32 views that are differentiated: each matmul weight cast on
    its own (its gradient is then its own tensor), the same values as param_views'."""
    return {
        name: _padded(view.to(mm_dtype), align) if _is_matmul(layout, name) else view
        for name, view in params.items()
    }


def _is_matmul(layout: Layout, name: str) -> bool:
    return layout.entries[name].kind == ROWS


def _padded(w: torch.Tensor, align: int) -> torch.Tensor:
    """A matmul weight [..., out, in] zero-padded to multiples of `align`."""
    rows, cols = w.shape[-2:]
    pad_rows, pad_cols = aligned(rows, align) - rows, aligned(cols, align) - cols
    return F.pad(w, (0, pad_cols, 0, pad_rows)) if pad_rows or pad_cols else w


def batch_norm(
    x: torch.Tensor,
    mean_buf: torch.Tensor,
    var_buf: torch.Tensor,
    norm: NormConfig,
    *,
    training: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Normalize x [..., B, d] over the batch dim (-2); buffers are [..., d]. No affine.

    Training: the biased batch variance normalizes; running stats move toward the unbiased one
    (F.batch_norm's convention, momentum 0.01). Eval: running stats. Returns (x_hat, mean, var)
    with the (possibly) updated running statistics.
    """
    if training:
        var, mean = torch.var_mean(x, dim=-2, keepdim=True, correction=0)
        n = x.shape[-2]
        new_mean = torch.lerp(mean_buf, mean.squeeze(-2), norm.bn_momentum)
        new_var = torch.lerp(var_buf, var.squeeze(-2) * (n / (n - 1)), norm.bn_momentum)
    else:
        mean, var = mean_buf.unsqueeze(-2), var_buf.unsqueeze(-2)
        new_mean, new_var = mean_buf, var_buf
    return (x - mean) * torch.rsqrt(var + norm.bn_eps), new_mean, new_var


def bn_affine(x_hat: torch.Tensor, affine: torch.Tensor) -> torch.Tensor:
    """gamma * x_hat + beta with affine [..., 2, d] broadcast over the batch dim (unbind: its
    gradient is one stack, not a zero-filled tensor per half)."""
    gamma, beta = affine.unbind(-2)
    return x_hat * gamma.unsqueeze(-2) + beta.unsqueeze(-2)


def _linear(x: torch.Tensor, w: torch.Tensor, mm_dtype: torch.dtype, out: int) -> torch.Tensor:
    """x [..., B, in] @ w[..., out, in]^T in mm_dtype, result [..., B, out] in fp32.

    w may be zero-padded (param_views' `align`): x gets zero columns up to w's in-dim, and the
    product's padding columns (exact zeros) are sliced off.
    """
    pad = w.shape[-1] - x.shape[-1]
    if pad:
        x = F.pad(x, (0, pad))
    y = torch.matmul(x.to(mm_dtype), w.to(mm_dtype).transpose(-1, -2)).float()
    return y if y.shape[-1] == out else y[..., :out]


def trunk(
    net: Network, x: torch.Tensor, *, training: bool
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Embedder + blocks + RMSNorm. x is [B, in]; for an ensemble the output is [E, B, h]."""
    p, b, spec, norm, mm_dtype = net
    new_b: dict[str, torch.Tensor] = {}

    def norm_layer(name: str, y: torch.Tensor) -> torch.Tensor:
        """BN `name` (statistics, running-stat update into new_b) then its affine."""
        y_hat, new_b[f"{name}.mean"], new_b[f"{name}.var"] = batch_norm(
            y, b[f"{name}.mean"], b[f"{name}.var"], norm, training=training
        )
        return bn_affine(y_hat, p[name])

    if spec.members:
        # Every member sees the same input; its statistics are computed per member, and each
        # running-stat element is written from its own old value only.
        x = x.unsqueeze(0).expand(spec.members, *x.shape)
    hid, inner = spec.hidden, spec.hidden * spec.expansion
    h = _linear(norm_layer("embed.bn", x), p["embed.w"], mm_dtype, hid)
    for i in range(spec.num_blocks):
        y = norm_layer(f"block{i}.bn1", _linear(h, p[f"block{i}.w1"], mm_dtype, inner))
        y = norm_layer(f"block{i}.bn2", _linear(torch.relu(y), p[f"block{i}.w2"], mm_dtype, hid))
        h = h + torch.relu(y)
    h = F.rms_norm(h, (spec.hidden,), eps=norm.rms_eps) * p["rms"].unsqueeze(-2)
    return h, new_b


def actor_mean_log_std(
    net: Network, obs: torch.Tensor, *, training: bool
) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    h, new_b = trunk(net, obs, training=training)
    p, mm_dtype = net.params, net.mm_dtype
    heads = _linear(h, p["head.w"], mm_dtype, p["head.b"].shape[-1]) + p["head.b"]
    mean, raw = heads.chunk(2, dim=-1)
    # log_std squashed smoothly into [-10, 2] (not clamped).
    log_std = LOG_STD_MIN + (LOG_STD_MAX - LOG_STD_MIN) * 0.5 * (1.0 + torch.tanh(raw))
    return mean, log_std, new_b


def actor_policy(
    param_layout: Layout,
    buffer_layout: Layout,
    params: torch.Tensor,
    buffers: torch.Tensor,
    obs: torch.Tensor,
    spec: NetSpec,
    norm: NormConfig,
    mm_dtype: torch.dtype,
    align: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, log_std) of the acting policy: flat vectors in, BN running statistics (eval)."""
    net = Network(
        param_views(param_layout, params, mm_dtype, align),
        buffer_layout.views(buffers),
        spec,
        norm,
        mm_dtype,
    )
    mean, log_std, _ = actor_mean_log_std(net, obs, training=False)
    return mean, log_std


def tanh_normal_sample(
    mean: torch.Tensor, log_std: torch.Tensor, eps: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """a = tanh(mean + std * eps) and its log-density in action space (summed over dims).

    log pi(a) = sum_i [ log N(u_i; mean_i, std_i) - log(1 - tanh(u_i)^2) ], with the Jacobian
    written as 2 (log 2 - u - softplus(-2u)) for numerical safety. With u = mean + std * eps,
    log N(u; mean, std) = -eps^2/2 - log std - log sqrt(2 pi).
    """
    u = mean + torch.exp(log_std) * eps
    log_normal = -0.5 * eps * eps - log_std - _HALF_LOG_2PI
    log_det = 2.0 * (_LOG2 - u - F.softplus(-2.0 * u))
    return torch.tanh(u), (log_normal - log_det).sum(-1)


def critic_logits(
    net: Network, critic_obs: torch.Tensor, actions: torch.Tensor, *, training: bool
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Ensemble critic logits [E, B, K] over the support's atoms, and the new buffers."""
    x = torch.cat([critic_obs, actions], dim=-1)
    h, new_b = trunk(net, x, training=training)
    p, mm_dtype = net.params, net.mm_dtype
    logits = _linear(h, p["head.w"], mm_dtype, p["head.b"].shape[-1]) + p["head.b"].unsqueeze(-2)
    return logits, new_b


def critic_distribution(
    net: Network,
    critic_obs: torch.Tensor,
    actions: torch.Tensor,
    support: torch.Tensor,
    *,
    training: bool,
) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Ensemble categorical critic: expected values q [E, B], log-probs [E, B, K], new buffers."""
    logits, new_b = critic_logits(net, critic_obs, actions, training=training)
    log_probs = torch.log_softmax(logits, dim=-1)
    q = (torch.exp(log_probs) * support).sum(-1)
    return q, log_probs, new_b
