"""Categorical TD projection and min-Q selection against hand-computed expectations."""

from __future__ import annotations

import torch

from flashsac_bench.learner.distributional import (
    categorical_projection,
    select_min_q,
    target_entropy,
)

V_MIN, V_MAX, K = -5.0, 5.0, 101  # bin width 0.1


def one_hot(idx: int, k: int = K) -> torch.Tensor:
    p = torch.zeros(1, k, dtype=torch.float64)
    p[0, idx] = 1.0
    return p


def project(probs, r, bootstrap, gamma=0.97, bonus=0.0):
    n = probs.shape[0]
    return categorical_projection(
        probs,
        torch.full((n,), r, dtype=torch.float64),
        torch.full((n,), bootstrap, dtype=torch.float64),
        gamma,
        torch.full((n,), bonus, dtype=torch.float64),
        V_MIN,
        V_MAX,
    )


def test_mass_is_conserved_for_random_distributions():
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(64, K, generator=g, dtype=torch.float64), -1)
    rewards = torch.randn(64, generator=g, dtype=torch.float64) * 3
    bootstrap = (torch.rand(64, generator=g) < 0.7).double()
    bonus = torch.randn(64, generator=g, dtype=torch.float64)
    m = categorical_projection(probs, rewards, bootstrap, 0.97, bonus, V_MIN, V_MAX)
    torch.testing.assert_close(m.sum(-1), torch.ones(64, dtype=torch.float64))
    assert (m >= 0).all()


def test_exact_bin_edge_gives_all_mass_to_that_bin():
    # Terminal row with reward 0.3: every atom lands exactly on z = 0.3, which is atom 53.
    m = project(torch.softmax(torch.randn(1, K, dtype=torch.float64), -1), 0.3, 0.0)
    expected = one_hot(53)
    torch.testing.assert_close(m, expected, atol=1e-9, rtol=0)


def test_split_between_neighbours_is_linear():
    # Terminal row, r = 0.325 -> position 53.25: 0.75 to atom 53, 0.25 to atom 54.
    m = project(one_hot(0), 0.325, 0.0)
    assert abs(m[0, 53].item() - 0.75) < 1e-9
    assert abs(m[0, 54].item() - 0.25) < 1e-9
    assert abs(m.sum().item() - 1.0) < 1e-12


def test_clamping_at_the_support_ends():
    m_hi = project(one_hot(100), 3.0, 1.0, gamma=0.97)  # 3 + 0.97 * 5 > 5 -> top atom
    m_lo = project(one_hot(0), -3.0, 1.0, gamma=0.97)  # -3 - 4.85 < -5 -> bottom atom
    torch.testing.assert_close(m_hi, one_hot(100))
    torch.testing.assert_close(m_lo, one_hot(0))


def test_terminal_row_ignores_next_distribution_and_truncated_row_bootstraps():
    probs = one_hot(60)  # next value z = 1.0
    terminal = project(probs, 0.5, 0.0)  # -> 0.5 -> atom 55
    bootstrapped = project(probs, 0.5, 1.0, gamma=0.5)  # -> 0.5 + 0.5 * 1.0 = 1.0 -> atom 60
    torch.testing.assert_close(terminal, one_hot(55))
    torch.testing.assert_close(bootstrapped, one_hot(60), atol=1e-9, rtol=0)


def test_entropy_bonus_is_inside_the_discount():
    # z' = r + gamma * (z - alpha * log pi) = 0 + 0.5 * (1.0 - (-0.4)) = 0.7 -> atom 57
    m = project(one_hot(60), 0.0, 1.0, gamma=0.5, bonus=-0.4)
    torch.testing.assert_close(m, one_hot(57), atol=1e-9, rtol=0)


def test_matches_floor_ceil_scatter_reference():
    g = torch.Generator().manual_seed(1)
    probs = torch.softmax(torch.randn(32, K, generator=g, dtype=torch.float64), -1)
    r = torch.randn(32, generator=g, dtype=torch.float64)
    boot = torch.ones(32, dtype=torch.float64)
    bonus = torch.randn(32, generator=g, dtype=torch.float64) * 0.1
    ours = categorical_projection(probs, r, boot, 0.97, bonus, V_MIN, V_MAX)
    # The official scatter_add formulation, written independently.
    z = torch.linspace(V_MIN, V_MAX, K, dtype=torch.float64)
    tz = (r[:, None] + 0.97 * (z[None] - bonus[:, None])).clamp(V_MIN, V_MAX)
    b = (tz - V_MIN) / 0.1
    lo = b.floor().long()
    up = (lo + 1).clamp(max=K - 1)
    f = b - lo
    ref = torch.zeros_like(probs)
    ref.scatter_add_(1, lo, probs * (1 - f))
    ref.scatter_add_(1, up, probs * f)
    torch.testing.assert_close(ours, ref, atol=1e-12, rtol=0)


def test_min_q_selects_whole_distribution_of_smaller_member():
    q = torch.tensor([[1.0, -2.0, 0.5], [0.0, 3.0, 0.5]])
    log_probs = torch.stack([torch.full((3, 4), -1.0), torch.full((3, 4), -2.0)])
    sel = select_min_q(q, log_probs)
    assert sel[0].eq(-2.0).all()  # member 1 has the smaller value
    assert sel[1].eq(-1.0).all()  # member 0
    assert sel[2].eq(-1.0).all()  # tie -> first member


def test_target_entropy_for_29_actions():
    value = target_entropy(29, 0.15)
    # 0.5 * 29 * ln(2 pi e 0.0225), computed by hand: 14.5 * ln(0.38434) = -13.868
    assert abs(value - (-13.868)) < 1e-3
