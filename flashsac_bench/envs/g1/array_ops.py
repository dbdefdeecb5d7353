"""The array operations the task's terms are written in, for numpy and for torch.

One task definition serves both backends (`g1.rewards`, `g1.task`): every term is a pure
function of its input arrays and calls the operations of `ops(x)`, the namespace of its first
array input: numpy's own functions for numpy arrays (the CPU backend, in the shard workers) and
torch's for tensors (the MuJoCo Warp backend, on the physics' device). The names are numpy's;
where torch spells an operation differently (a row sum, a clip, a column stack) the torch entry
adapts it, so a term reads the same for both and computes the same formula.

The numpy entries are numpy's functions themselves or one-line calls of them, so a term on
numpy arrays runs exactly the floating-point operations it ran before this module existed:
the CPU backend's numbers do not change by one bit. torch is imported on first use only, so the
CPU backend's worker processes never load it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ArrayOps:
    """Elementwise functions, reductions along rows and constructors of one array library."""

    name: str
    square: Callable[[Any], Any]
    exp: Callable[[Any], Any]
    sqrt: Callable[[Any], Any]
    cos: Callable[[Any], Any]
    sin: Callable[[Any], Any]
    isfinite: Callable[[Any], Any]
    remainder: Callable[[Any, Any], Any]  # floor-mod: numpy's np.mod
    where: Callable[[Any, Any, Any], Any]
    row_sum: Callable[[Any], Any]  # (N, k) -> (N,)
    rows_all: Callable[[Any], Any]  # (N, k) bool -> (N,)
    clip: Callable[[Any, float, float], Any]  # NaN passes through
    stack_cols: Callable[[Sequence[Any]], Any]  # k arrays (N,) -> (N, k)
    concat_cols: Callable[[Sequence[Any]], Any]  # arrays (N, k_i) -> (N, sum k_i)
    zeros_like: Callable[[Any], Any]
    zeros: Callable[[int, int, Any], Any]  # (k, width) float zeros, on `like`'s device
    repeat_rows: Callable[[Any, int], Any]  # k copies of a row (width,) -> (k, width)
    add_rounded: Callable[[Any, Any], None]  # dst (float32) += src (float64), rounded once
    float32: Callable[[Any], Any]  # a float32 copy (rounded once)
    float64: Callable[[Any], Any]  # a float64 copy (exact from float32)


def _np_clip(x: np.ndarray, low: float, high: float) -> np.ndarray:
    # np.clip's value (NaN passes through both), without its Python-level wrapper.
    return np.minimum(np.maximum(x, low), high)


NUMPY = ArrayOps(
    name="numpy",
    square=np.square,
    exp=np.exp,
    sqrt=np.sqrt,
    cos=np.cos,
    sin=np.sin,
    isfinite=np.isfinite,
    remainder=np.mod,
    where=np.where,
    # np.add.reduce / np.logical_and.reduce: what np.sum / np.all call, minus their wrappers.
    row_sum=lambda x: np.add.reduce(x, axis=1),
    rows_all=lambda x: np.logical_and.reduce(x, axis=1),
    clip=_np_clip,
    stack_cols=lambda cols: np.stack(cols, axis=1),
    concat_cols=lambda cols: np.concatenate(cols, axis=1),
    zeros_like=np.zeros_like,
    zeros=lambda k, width, like: np.zeros((k, width)),
    repeat_rows=lambda row, k: np.tile(row, (k, 1)),
    # In place: numpy adds in float64 (the wider operand) and rounds into the float32 view.
    add_rounded=lambda dst, src: np.add(dst, src, out=dst),
    float32=lambda x: np.asarray(x, dtype=np.float32).copy(),
    float64=lambda x: np.asarray(x, dtype=np.float64).copy(),
)


@cache
def torch_ops() -> ArrayOps:
    """The torch namespace (imports torch on first call)."""
    import torch

    return ArrayOps(
        name="torch",
        square=torch.square,
        exp=torch.exp,
        sqrt=torch.sqrt,
        cos=torch.cos,
        sin=torch.sin,
        isfinite=torch.isfinite,
        remainder=torch.remainder,
        where=torch.where,
        row_sum=lambda x: torch.sum(x, dim=1),
        rows_all=lambda x: torch.all(x, dim=1),
        clip=lambda x, low, high: torch.clamp(x, low, high),
        stack_cols=lambda cols: torch.stack(list(cols), dim=1),
        concat_cols=lambda cols: torch.cat(list(cols), dim=1),
        zeros_like=torch.zeros_like,
        zeros=lambda k, width, like: torch.zeros(k, width, dtype=like.dtype, device=like.device),
        repeat_rows=lambda row, k: row.expand(k, -1).clone(),
        add_rounded=lambda dst, src: dst.copy_(dst.to(torch.float64) + src),
        float32=lambda x: x.to(torch.float32, copy=True),
        float64=lambda x: x.to(torch.float64, copy=True),
    )


def ops(x: Any) -> ArrayOps:
    """The namespace of array `x`: numpy's for a numpy array, else torch's."""
    return NUMPY if isinstance(x, np.ndarray) else torch_ops()
