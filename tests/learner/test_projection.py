"""Unit-norm weight projection: segmented implementation vs the per-layer definition."""

from __future__ import annotations

import math

import torch

from flashsac_bench.learner.layout import BN_AFFINE, FREE, RMS, ROWS, Layout
from flashsac_bench.learner.networks import actor_layouts, critic_layouts
from flashsac_bench.learner.projection import Projector, project_reference


def _random_flat(layout: Layout, seed: int = 0) -> torch.Tensor:
    return torch.randn(layout.numel, generator=torch.Generator().manual_seed(seed)) * 3


def test_projector_matches_reference_on_actor_and_critic_layouts():
    for _, params, _ in (actor_layouts(6, 3, 12, 2, 4), critic_layouts(10, 20, 2, 4, 11)):
        flat = _random_flat(params)
        torch.testing.assert_close(Projector(params, "cpu")(flat), project_reference(params, flat))


def test_projected_norms_hold_by_kind():
    _, params, _ = critic_layouts(10, 20, 2, 4, 11)
    flat = _random_flat(params, 1)
    out = params.views(Projector(params, "cpu")(flat))
    before = params.views(flat)
    for name, e in params.entries.items():
        v = out[name]
        if e.kind == ROWS:  # every row unit norm
            torch.testing.assert_close(v.norm(dim=-1), torch.ones(v.shape[:-1]))
        elif e.kind == BN_AFFINE:  # per member: ||(gamma, beta)|| = sqrt(d)
            d = e.shape[-1]
            norm = v.pow(2).sum((-1, -2)).sqrt()
            torch.testing.assert_close(norm, torch.full(norm.shape, math.sqrt(d)))
        elif e.kind == RMS:
            d = e.shape[-1]
            torch.testing.assert_close(v.norm(dim=-1), torch.full(v.shape[:-1], math.sqrt(d)))
        else:
            assert e.kind == FREE
            assert torch.equal(v, before[name])  # head biases untouched


def test_projection_is_idempotent():
    _, params, _ = actor_layouts(6, 3, 12, 2, 4)
    proj = Projector(params, "cpu")
    once = proj(_random_flat(params, 2))
    torch.testing.assert_close(proj(once), once)


def test_bn_affine_projection_by_hand():
    layout = Layout()
    layout.add("bn", (2, 2), BN_AFFINE)  # gamma = (3, 0), beta = (0, 4): norm 5, target sqrt(2)
    flat = torch.tensor([3.0, 0.0, 0.0, 4.0])
    out = Projector(layout, "cpu")(flat)
    f = math.sqrt(2) / math.sqrt(25 + 1e-8)
    torch.testing.assert_close(out, flat * f)


def test_gathered_projection_is_bit_identical():
    """On CUDA: one gathered row-factor product instead of a concatenation (same bits)."""
    for _, params, _ in (actor_layouts(6, 3, 12, 2, 4), critic_layouts(10, 20, 2, 4, 11)):
        flat = _random_flat(params, 3)
        flat[:7] = 0.0  # a zero row: the norm floor
        concat, gather = Projector(params, "cpu"), Projector(params, "cpu", gather=True)
        assert torch.equal(gather(flat), concat(flat))
        assert gather.row_index.max().item() == sum(len(g.numer) for g in gather.groups)
