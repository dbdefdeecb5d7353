"""FlashSAC's hard weight projection, run after every optimizer step of an online network.

`Projector` does it for a whole flat parameter vector with one row-wise reduction per distinct
segment length (the layout keeps equal-length segments adjacent), each a single fused kernel
under Inductor. The projected vector is then assembled from the per-group pieces (a
concatenation), or, with `gather=True` (the learner's choice on CUDA), made by ONE elementwise
product with the row factors gathered through a static element -> row index (1.0 for
unprojected entries): an elementwise function of the flat vector, which Inductor can fuse into
the gated writes of the parameters and the target instead of a concatenation kernel that
re-reads every Adam input. Both multiply every element by the same factor: bit-identical.
Deterministic, and no host sync (segment_reduce's argument checks would break CUDA graph
capture).
`project_reference` is the literal per-layer definition (F.normalize rows, joint BN affine,
RMS gamma) that the tests hold it to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from flashsac_bench.learner.layout import BN_AFFINE, FREE, RMS, ROWS, Layout

ROW_EPS = 1e-8  # F.normalize(W, dim=-1, eps=1e-8) in the official UnitLinear
BN_EPS = 1e-8  # f = sqrt(d) / sqrt(sum(g^2) + sum(b^2) + 1e-8) in UnitBatchNorm


@dataclass(frozen=True)
class _Group:
    start: int
    end: int
    length: int  # segment length; every segment of the group is one row of [rows, length]
    numer: torch.Tensor  # [rows] target norm
    inner_eps: torch.Tensor  # [rows] added under the square root (BN affine)
    floor: torch.Tensor  # [rows] lower clamp of the norm (F.normalize's eps)


class Projector:
    """Projects a flat vector laid out by `Layout.grouped()`: one row-reduction per group."""

    def __init__(self, layout: Layout, device: torch.device | str, gather: bool = False) -> None:
        self.numel = layout.numel
        self.gather = gather
        self.groups: list[_Group] = []
        self.free: list[tuple[int, int]] = []
        entries = list(layout.entries.values())
        i = 0
        while i < len(entries):
            e = entries[i]
            j = i
            if e.kind == FREE:
                while j < len(entries) and entries[j].kind == FREE:
                    j += 1
                self.free.append((e.offset, entries[j - 1].offset + entries[j - 1].numel))
                i = j
                continue
            numer, inner, floor = [], [], []
            while (
                j < len(entries)
                and entries[j].kind != FREE
                and entries[j].segment_length == e.segment_length
            ):
                f = entries[j]
                rows = f.numel // f.segment_length
                numer += [f.target_norm] * rows
                inner += [BN_EPS if f.kind == BN_AFFINE else 0.0] * rows
                floor += [ROW_EPS if f.kind in (ROWS, RMS) else 0.0] * rows
                j += 1
            last = entries[j - 1]
            self.groups.append(
                _Group(
                    e.offset,
                    last.offset + last.numel,
                    e.segment_length,
                    torch.tensor(numer, dtype=torch.float32, device=device),
                    torch.tensor(inner, dtype=torch.float32, device=device),
                    torch.tensor(floor, dtype=torch.float32, device=device),
                )
            )
            i = j
        pieces = sorted([(g.start, g.end) for g in self.groups] + self.free)
        if (
            pieces[0][0] != 0
            or pieces[-1][1] != self.numel
            or any(a[1] != b[0] for a, b in zip(pieces, pieces[1:], strict=False))
        ):
            raise ValueError("Projector needs a layout from Layout.grouped()")
        self._order = pieces
        if gather:
            self.row_index = self._row_index().to(device)
            self._one = torch.ones(1, dtype=torch.float32, device=device)

    def tensors(self) -> list[torch.Tensor]:
        """The constant device tensors the projection reads (for static-address marking)."""
        out = [t for g in self.groups for t in (g.numer, g.inner_eps, g.floor)]
        return out + ([self.row_index, self._one] if self.gather else [])

    def _row_index(self) -> torch.Tensor:
        """Element -> row of the factor vector [rows of group 0, rows of group 1, ..., 1.0]."""
        row = torch.full((self.numel,), sum(len(g.numer) for g in self.groups), dtype=torch.int32)
        first = 0
        for g in self.groups:
            rows = torch.arange(first, first + len(g.numer), dtype=torch.int32)
            row[g.start : g.end] = rows.repeat_interleave(g.length)
            first += len(g.numer)
        return row

    def _group_factors(self, flat: torch.Tensor):
        """(group, its [rows, length] view of flat, target norm / current norm per row)."""
        for g in self.groups:
            seg = flat[g.start : g.end].view(-1, g.length)
            norm = torch.sqrt(seg.pow(2).sum(-1) + g.inner_eps).clamp_min(g.floor)
            yield g, seg, g.numer / norm

    def row_factors(self, flat: torch.Tensor) -> torch.Tensor:
        """target norm / current norm of every projected row, then 1.0 (unprojected)."""
        return torch.cat([*(f for _, _, f in self._group_factors(flat)), self._one])

    def __call__(self, flat: torch.Tensor) -> torch.Tensor:
        """The projected vector (out of place)."""
        if self.gather:
            return flat * self.row_factors(flat)[self.row_index]
        out: dict[int, torch.Tensor] = {}
        for g, seg, factor in self._group_factors(flat):
            out[g.start] = (seg * factor.unsqueeze(-1)).view(-1)
        for a, b in self.free:
            out[a] = flat[a:b]
        return torch.cat([out[a] for a, _ in self._order])


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
