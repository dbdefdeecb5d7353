"""FlashSAC's hard weight projection, run after every optimizer step of an online network.

`Projector` does it for a whole flat parameter vector in a few kernels regardless of layer
count: segment sums of squares come from one float64 prefix sum (exact enough: ~1e-16 relative
to the total, which is O(#rows)), differenced at the segment ends. Unlike segment_reduce or
scatter_add it is deterministic and never syncs with the host (its checks would break CUDA graph
capture). `project_reference` is the literal per-layer definition (F.normalize rows, joint BN
affine, RMS gamma) that the tests hold it to.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from flashsac_bench.learner.layout import BN_AFFINE, FREE, RMS, ROWS, Layout

ROW_EPS = 1e-8  # F.normalize(W, dim=-1, eps=1e-8) in the official UnitLinear
BN_EPS = 1e-8  # f = sqrt(d) / sqrt(sum(g^2) + sum(b^2) + 1e-8) in UnitBatchNorm


class Projector:
    def __init__(self, layout: Layout, device: torch.device | str) -> None:
        lengths: list[int] = []
        numer: list[float] = []
        inner_eps: list[float] = []
        floor: list[float] = []
        keep: list[bool] = []
        for e in layout.entries.values():
            count = e.numel // e.segment_length
            lengths += [e.segment_length] * count
            numer += [e.target_norm] * count
            inner_eps += [BN_EPS if e.kind == BN_AFFINE else 0.0] * count
            floor += [ROW_EPS if e.kind in (ROWS, RMS) else 0.0] * count
            keep += [e.kind == FREE] * count
        self.numel = layout.numel
        self.lengths = torch.tensor(lengths, dtype=torch.int64, device=device)
        self.numer = torch.tensor(numer, dtype=torch.float32, device=device)
        self.inner_eps = torch.tensor(inner_eps, dtype=torch.float32, device=device)
        self.floor = torch.tensor(floor, dtype=torch.float32, device=device)
        self.keep = torch.tensor(keep, dtype=torch.bool, device=device)
        self.segment_ids = torch.repeat_interleave(
            torch.arange(len(lengths), device=device), self.lengths
        )
        ends = torch.cumsum(self.lengths, 0)
        self.ends = ends - 1  # last element of each segment
        self.starts = ends - self.lengths - 1  # element before each segment (-1: none)

    def __call__(self, flat: torch.Tensor) -> torch.Tensor:
        """The projected vector (out of place)."""
        prefix = torch.cumsum(flat.double() * flat.double(), 0)
        before = torch.where(self.starts >= 0, prefix[self.starts.clamp_min(0)], 0.0)
        sumsq = (prefix[self.ends] - before).float()
        norm = torch.sqrt(sumsq + self.inner_eps).clamp_min(self.floor)
        factor = torch.where(self.keep, torch.ones_like(norm), self.numer / norm)
        return flat * factor[self.segment_ids]


def project_reference(layout: Layout, flat: torch.Tensor) -> torch.Tensor:
    """Per-layer projection exactly as written in the official layers (for tests)."""
    out = flat.clone()
    for name, view in layout.views(out).items():
        e = layout.entries[name]
        if e.kind == ROWS:
            view.copy_(F.normalize(view, dim=-1, eps=ROW_EPS))
        elif e.kind == BN_AFFINE:
            d = e.shape[-1]
            gamma, beta = view.select(-2, 0), view.select(-2, 1)
            total = gamma.pow(2).sum(-1, keepdim=True) + beta.pow(2).sum(-1, keepdim=True)
            f = math.sqrt(d) / torch.sqrt(total + BN_EPS)
            view.copy_(torch.stack([gamma * f, beta * f], dim=-2))
        elif e.kind == RMS:
            d = e.shape[-1]
            view.copy_(math.sqrt(d) * F.normalize(view, dim=-1, eps=ROW_EPS))
    return out
