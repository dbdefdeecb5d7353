"""Flat tensor layouts: a network's parameters (or buffers) live in ONE contiguous fp32 vector.

Why: with one vector per network, the gradient is one tensor, Adam / Polyak / the finite guard
are a handful of elementwise kernels over it instead of one launch per parameter, and the weight
projection is a segmented reduction over the whole vector. Named views cost nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

# Projection kinds (official FlashSAC's weight normalization):
ROWS = "rows"  # Linear weight: every output row to unit L2 norm (F.normalize, eps 1e-8)
BN_AFFINE = "bn_affine"  # BatchNorm (gamma, beta) jointly to norm sqrt(d), per ensemble member
RMS = "rms"  # RMSNorm gamma to norm sqrt(d), per ensemble member
FREE = "free"  # not projected (head biases, log temperature)
KINDS = (ROWS, BN_AFFINE, RMS, FREE)

Init = Callable[[torch.Tensor, torch.Generator], None]


@dataclass(frozen=True)
class Entry:
    name: str
    shape: tuple[int, ...]
    offset: int
    kind: str
    init: Init | None

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def segment_length(self) -> int:
        """Length of one projection segment (contiguous in memory)."""
        if self.kind == ROWS:
            return self.shape[-1]
        if self.kind == BN_AFFINE:  # shape [..., 2, d]: (gamma, beta) of one member together
            return 2 * self.shape[-1]
        if self.kind == RMS:
            return self.shape[-1]
        return self.numel

    @property
    def target_norm(self) -> float:
        if self.kind == BN_AFFINE:
            return math.sqrt(self.shape[-1])
        if self.kind == RMS:
            return math.sqrt(self.shape[-1])
        return 1.0


@dataclass
class Layout:
    entries: dict[str, Entry] = field(default_factory=dict)
    numel: int = 0

    def add(self, name: str, shape: tuple[int, ...], kind: str = FREE, init: Init | None = None):
        if name in self.entries:
            raise ValueError(f"duplicate layout entry {name!r}")
        if kind not in KINDS:
            raise ValueError(f"unknown projection kind {kind!r}")
        self.entries[name] = Entry(name, tuple(shape), self.numel, kind, init)
        self.numel += math.prod(shape)

    def grouped(self) -> Layout:
        """The same entries re-packed so that projection segments of equal length are adjacent.

        Then the projection of a whole network is one [rows, length] reduction per distinct
        segment length (a handful) instead of one per layer.
        """
        out = Layout()
        for e in sorted(self.entries.values(), key=_group):
            out.add(e.name, e.shape, e.kind, e.init)
        return out

    def views(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        return {
            e.name: flat.narrow(0, e.offset, e.numel).view(e.shape) for e in self.entries.values()
        }

    def initialize(self, flat: torch.Tensor, generator: torch.Generator) -> None:
        with torch.no_grad():
            for name, view in self.views(flat).items():
                init = self.entries[name].init
                if init is None:
                    view.zero_()
                else:
                    init(view, generator)


def _group(e: Entry) -> tuple[bool, int]:
    """grouped()'s order: projected entries by segment length, then the FREE ones."""
    return e.kind == FREE, e.segment_length if e.kind != FREE else 0


def orthogonal_init(view: torch.Tensor, generator: torch.Generator) -> None:
    """Orthogonal (gain 1) per ensemble member: view is [out, in] or [E, out, in]."""
    mats = view if view.dim() == 3 else view.unsqueeze(0)
    for mat in mats:
        rows, cols = mat.shape
        a = torch.randn(max(rows, cols), min(rows, cols), generator=generator, dtype=torch.float64)
        q, r = torch.linalg.qr(a)
        q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)  # unique, uniformly distributed
        mat.copy_((q if rows >= cols else q.T).to(mat.dtype))


def bn_affine_init(view: torch.Tensor, generator: torch.Generator) -> None:
    """gamma = 1, beta = 0 for a [..., 2, d] affine entry."""
    view.select(-2, 0).fill_(1.0)
    view.select(-2, 1).zero_()


def ones_init(view: torch.Tensor, generator: torch.Generator) -> None:
    view.fill_(1.0)


def constant_init(value: float) -> Init:
    def init(view: torch.Tensor, generator: torch.Generator) -> None:
        view.fill_(value)

    return init
