"""Flat Adam vs torch.optim.Adam; LR schedule endpoints."""

from __future__ import annotations

import math

import torch

from flashsac_bench.learner.adam import AdamConfig, AdamState, adam_candidate, is_finite
from flashsac_bench.learner.schedule import LRSchedule


def test_flat_adam_matches_torch_adam_over_several_steps():
    g = torch.Generator().manual_seed(0)
    p0 = torch.randn(50, generator=g)
    ref = torch.nn.Parameter(p0.clone())
    opt = torch.optim.Adam([ref], lr=3e-4, betas=(0.9, 0.999), eps=1e-8)
    ours, state = p0.clone(), AdamState.zeros_like(p0, torch.zeros(()))
    for _ in range(10):
        grad = torch.randn(50, generator=g)
        ref.grad = grad.clone()
        opt.step()
        ours, m, v, step = adam_candidate(ours, grad, state, torch.tensor(3e-4), AdamConfig())
        state = AdamState(m, v, step)
    torch.testing.assert_close(ours, ref.detach(), atol=1e-7, rtol=1e-6)
    torch.testing.assert_close(state.exp_avg, opt.state[ref]["exp_avg"])
    torch.testing.assert_close(state.exp_avg_sq, opt.state[ref]["exp_avg_sq"])
    assert state.step.item() == 10


def test_is_finite_flags_loss_and_gradient():
    ok = torch.tensor(1.0)
    assert is_finite(ok, torch.ones(3)).item()
    assert not is_finite(torch.tensor(float("nan")), torch.ones(3)).item()
    assert not is_finite(ok, torch.tensor([1.0, float("inf"), 0.0])).item()
    for bad in (float("-inf"), float("nan")):
        assert not is_finite(ok, torch.tensor([bad, 1.0])).item()
        assert not is_finite(torch.tensor(bad), torch.ones(3)).item()
    big = torch.full((1000,), 3e38)  # finite values whose sum overflows: still finite
    assert is_finite(torch.tensor(-3e38), big).item()


def test_schedule_endpoints_and_midpoint():
    s = LRSchedule(init=3e-4, peak=3e-4, end=1.5e-4, warmup_steps=0, decay_steps=500_000)
    assert s.lr_at(0) == 3e-4
    assert abs(s.lr_at(250_000) - 2.25e-4) < 1e-12  # half way down the cosine
    assert abs(s.lr_at(500_000) - 1.5e-4) < 1e-15
    assert abs(s.lr_at(10**7) - 1.5e-4) < 1e-15  # stays at the end value
    for step in (0, 1, 1234, 250_000, 499_999, 500_000, 600_000):
        t = s.lr_tensor(torch.tensor(float(step)))
        assert math.isclose(t.item(), s.lr_at(step), rel_tol=1e-6)


def test_schedule_with_warmup():
    s = LRSchedule(init=0.0, peak=1.0, end=0.1, warmup_steps=10, decay_steps=110)
    assert s.lr_at(0) == 0.0 and s.lr_at(5) == 0.5 and s.lr_at(10) == 1.0
    assert abs(s.lr_at(60) - 0.55) < 1e-12 and abs(s.lr_at(110) - 0.1) < 1e-12
    for step in (0, 5, 10, 60, 110):
        assert math.isclose(
            s.lr_tensor(torch.tensor(float(step))).item(), s.lr_at(step), abs_tol=1e-6
        )
