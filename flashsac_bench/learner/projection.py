"""FlashSAC's hard weight projection, run after every optimizer step of an online network.

`Projector` does it for a whole flat parameter vector with one row-wise reduction per distinct
segment length (the layout keeps equal-length segments adjacent), each a single fused kernel
under Inductor, then ONE elementwise product with the row factors, gathered through a static
element -> row index (1.0 for unprojected entries). That product is an elementwise function of
the flat vector, so Inductor fuses it into the gated writes of the parameters and the target
instead of assembling the projected vector from per-group pieces first (a concatenation kernel
that re-read every Adam input: 34 us per critic update on the H200). Deterministic, and no host
sync (segment_reduce's argument checks would break CUDA graph capture; a float64 prefix-sum
variant measured 73 us per critic update on the H200).
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

    def __init__(self, layout: Layout, device: torch.device | str) -> None:
        self.numel = layout.numel
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
        # Element -> row of the factor vector [rows of group 0, rows of group 1, ..., 1.0].
        num_rows = sum(len(g.numer) for g in self.groups)
        row = torch.full((self.numel,), num_rows, dtype=torch.int32)
        first = 0
        for g in self.groups:
            rows = len(g.numer)
            row[g.start : g.end] = torch.arange(
                first, first + rows, dtype=torch.int32
            ).repeat_interleave(g.length)
            first += rows
        self.row_index = row.to(device)
        self._one = torch.ones(1, dtype=torch.float32, device=device)

    def row_factors(self, flat: torch.Tensor) -> torch.Tensor:
        """target norm / current norm of every projected row, then 1.0 (unprojected)."""
        factors = []
        for g in self.groups:
            seg = flat[g.start : g.end].view(-1, g.length)
            norm = torch.sqrt(seg.pow(2).sum(-1) + g.inner_eps).clamp_min(g.floor)
            factors.append(g.numer / norm)
        return torch.cat([*factors, self._one])

    def __call__(self, flat: torch.Tensor) -> torch.Tensor:
        """The projected vector (out of place)."""
        return flat * self.row_factors(flat)[self.row_index]


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
