"""Which unilab-rl 1.4.15 FlashSACLearner tensor is which entry of our flat learner state.

UniLab keeps every layer as its own nn.Parameter (`uni_rl/algos/flash_sac/layers.py`); we keep
each network in ONE flat fp32 vector (`learner/layout.py`). Every entry of our layout is one
upstream tensor, or two joined:

  * BN affine: ours [..., 2, d] = stack(weight, bias) along -2 (ensemble: per member);
  * actor heads: ours [2A, h] / [2A] = cat(mean head, log-std head) along 0.

Everything else is the same tensor under another name. Adam is elementwise, so its moments move
with the same map. No uni_rl import is needed here: a user's plain install converts files; the
tests (`tests/interop/`) hold the names and orders below to a real unilab-rl 1.4.15 learner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from flashsac_bench.learner.layout import Layout

UNILAB_RL_VERSION = "1.4.15"
# UniLab hard-codes these (layers.py / network.py / torch.optim.Adam defaults).
UNILAB_FIXED = {
    "expansion": 4,
    "bn_momentum": 0.01,
    "bn_eps": 1e-5,
    "rms_eps": 1e-6,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_eps": 1e-8,
}
STATE_KEYS = (
    "actor",
    "critic",
    "target_critic",
    "temperature",
    "actor_optimizer",
    "critic_optimizer",
    "temperature_optimizer",
    "actor_scheduler",
    "critic_scheduler",
    "temperature_scheduler",
    "reward_normalizer",
    "update_count",
)

SAME, STACK, CAT = "same", "stack", "cat"


class ConversionError(ValueError):
    """A checkpoint that cannot be converted, said in one line."""


@dataclass(frozen=True)
class Field:
    """Our layout entry `ours` is the upstream tensor(s) `theirs`, joined by `join`."""

    ours: str
    theirs: tuple[str, ...]
    join: str = SAME


# ---------------------------------------------------------------------------- name maps
def _bn(ours: str, module: str) -> list[Field]:
    """(param field, buffer fields) of one BN: affine stacked, running stats one to one."""
    return [
        Field(ours, (f"{module}.weight", f"{module}.bias"), STACK),
        Field(f"{ours}.mean", (f"{module}.running_mean",)),
        Field(f"{ours}.var", (f"{module}.running_var",)),
    ]


def _trunk(blocks: int, lin: str) -> list[Field]:
    """Embedder, blocks, RMSNorm in upstream registration order; `lin` is the Linear weight
    suffix (`w.weight` for UnitLinear, `weight` for EnsembleUnitLinear)."""
    fields = [*_bn("embed.bn", "embedder.norm"), Field("embed.w", (f"embedder.w.{lin}",))]
    for i in range(blocks):
        p = f"encoder.{i}"
        fields += [Field(f"block{i}.w1", (f"{p}.w1.{lin}",)), *_bn(f"block{i}.bn1", f"{p}.norm1")]
        fields += [Field(f"block{i}.w2", (f"{p}.w2.{lin}",)), *_bn(f"block{i}.bn2", f"{p}.norm2")]
    return [*fields, Field("rms", ("post_norm.weight",))]


def actor_fields(blocks: int) -> list[Field]:
    # NormalTanhPolicy registers mean_w, mean_bias, std_w, std_bias, but a module's own
    # Parameters come before its submodules': biases first in state_dict / parameters().
    return [
        *_trunk(blocks, "w.weight"),
        Field("head.b", ("predictor.mean_bias", "predictor.std_bias"), CAT),
        Field("head.w", ("predictor.mean_w.w.weight", "predictor.std_w.w.weight"), CAT),
    ]


def critic_fields(blocks: int) -> list[Field]:
    return [
        *_trunk(blocks, "weight"),
        Field("head.b", ("predictor.logit_bias",)),
        Field("head.w", ("predictor.logit_w.weight",)),
    ]


def _is_buffer(name: str) -> bool:
    return name.endswith((".running_mean", ".running_var"))


def parameter_names(fields: list[Field]) -> list[str]:
    """Upstream names in `module.parameters()` order (= the optimizer's state indices)."""
    return [n for f in fields for n in f.theirs if not _is_buffer(n)]


def state_dict_names(fields: list[Field], actor: bool) -> list[str]:
    """Upstream `state_dict()` key order, the persistent constant buffers included."""
    names = [n for f in fields for n in f.theirs]
    if actor:
        return ["zeta_cdf", *names]
    i = names.index("predictor.logit_bias") + 1  # EnsembleCategoricalValue: bias, support, w
    return [*names[:i], "predictor.support", *names[i:]]


def _split(fields: list[Field], layout: Layout) -> list[Field]:
    """The fields of `layout`'s entries (params or buffers); every entry must have one."""
    mine = [f for f in fields if f.ours in layout.entries]
    uncovered = set(layout.entries) - {f.ours for f in mine}
    if uncovered:
        raise ConversionError(f"no UniLab counterpart for {sorted(uncovered)}")
    return mine


def _join(join: str, parts: list[torch.Tensor]) -> torch.Tensor:
    if join == STACK:  # BN (weight, bias) -> [..., 2, d]
        return torch.stack(parts, -2)
    if join == CAT:  # (mean head, log-std head) -> [2A, ...]
        return torch.cat(parts, 0)
    return parts[0]


def _unjoin(join: str, value: torch.Tensor) -> tuple[torch.Tensor, ...]:
    if join == STACK:
        return value.unbind(-2)
    if join == CAT:
        return value.chunk(2, 0)
    return (value,)


def require_float(name: str, value: Any) -> torch.Tensor:
    """`value` if it is a float tensor; ConversionError for anything else (a tensor of integers
    or bools would otherwise be cast silently into weights / moments / statistics)."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        got = str(value.dtype) if isinstance(value, torch.Tensor) else type(value).__name__
        raise ConversionError(
            f"upstream tensor {name} is {got.removeprefix('torch.')}, a learner stores it as float"
        )
    return value


def as_float32(name: str, value: Any) -> torch.Tensor:
    """An upstream float tensor as fp32 on the CPU (require_float)."""
    return require_float(name, value).detach().to("cpu", torch.float32)


def flat_from_named(
    layout: Layout, fields: list[Field], named: Mapping[str, torch.Tensor]
) -> torch.Tensor:
    """Our flat fp32 vector for `layout` from upstream tensors (params, grads, Adam moments)."""
    flat = torch.zeros(layout.numel, dtype=torch.float32)  # alignment gaps stay zero
    for f in _split(fields, layout):
        e = layout.entries[f.ours]
        missing = [n for n in f.theirs if n not in named]
        if missing:
            raise ConversionError(f"missing upstream tensor(s) {missing}")
        joined = _join(f.join, [as_float32(n, named[n]) for n in f.theirs])
        if tuple(joined.shape) != e.shape:
            raise ConversionError(
                f"{'+'.join(f.theirs)} has shape {tuple(joined.shape)}, expected {e.shape}"
            )
        flat[e.offset : e.offset + e.numel] = joined.reshape(-1)
    return flat


def named_from_flat(
    layout: Layout, fields: list[Field], flat: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Inverse of flat_from_named: upstream name -> tensor (contiguous copies on the CPU)."""
    views = layout.views(flat.detach().to("cpu", torch.float32))
    out: dict[str, torch.Tensor] = {}
    for f in _split(fields, layout):
        parts = _unjoin(f.join, views[f.ours])
        out.update({n: p.clone().contiguous() for n, p in zip(f.theirs, parts, strict=True)})
    return out


def zeta_cdf(mu: float, k_max: int) -> torch.Tensor:
    """FlashSACActor's `zeta_cdf` buffer, computed as upstream does (float32)."""
    ns = torch.arange(1, k_max + 1, dtype=torch.float32)
    pmf = ns.pow(-mu)
    return torch.cumsum(pmf / pmf.sum(), dim=0)
