"""Network building blocks against independent references."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from flashsac_bench.learner.networks import (
    LOG_STD_MAX,
    LOG_STD_MIN,
    NormConfig,
    batch_norm,
    bn_affine,
    tanh_normal_sample,
)

NORM = NormConfig()


def test_tanh_log_prob_matches_change_of_variables_with_finite_differences():
    g = torch.Generator().manual_seed(0)
    mean = torch.randn(5, 3, generator=g, dtype=torch.float64)
    log_std = torch.randn(5, 3, generator=g, dtype=torch.float64) * 0.5
    eps = torch.randn(5, 3, generator=g, dtype=torch.float64)
    a, log_prob = tanh_normal_sample(mean, log_std, eps)
    # Reference: density of u = atanh(a) under N(mean, std), divided by |da/du| measured by
    # central finite differences of tanh.
    u = torch.atanh(a)
    normal = torch.distributions.Normal(mean, torch.exp(log_std)).log_prob(u)
    h = 1e-6
    dadu = (torch.tanh(u + h) - torch.tanh(u - h)) / (2 * h)
    ref = (normal - torch.log(dadu)).sum(-1)
    torch.testing.assert_close(log_prob, ref, atol=1e-6, rtol=1e-6)


def test_tanh_log_prob_is_finite_at_saturation():
    a, log_prob = tanh_normal_sample(
        torch.tensor([[30.0]]), torch.tensor([[-3.0]]), torch.tensor([[0.5]])
    )
    assert torch.isfinite(log_prob).all() and a.item() == 1.0


def test_log_std_range_constants():
    assert (LOG_STD_MIN, LOG_STD_MAX) == (-10.0, 2.0)


def test_batch_norm_training_matches_torch_and_updates_running_stats():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 5, generator=g, dtype=torch.float64) * 3 + 1
    mean_buf = torch.randn(5, generator=g, dtype=torch.float64)
    var_buf = torch.rand(5, generator=g, dtype=torch.float64) + 0.5
    affine = torch.randn(2, 5, generator=g, dtype=torch.float64)
    x_hat, new_mean, new_var = batch_norm(x, mean_buf, var_buf, NORM, training=True)
    y = bn_affine(x_hat, affine)
    rm, rv = mean_buf.clone(), var_buf.clone()
    ref = F.batch_norm(x, rm, rv, affine[0], affine[1], True, NORM.bn_momentum, NORM.bn_eps)
    torch.testing.assert_close(y, ref)
    torch.testing.assert_close(new_mean, rm)
    torch.testing.assert_close(new_var, rv)
    # By hand: running = 0.99 * running + 0.01 * batch (unbiased variance).
    torch.testing.assert_close(new_mean, 0.99 * mean_buf + 0.01 * x.mean(0))
    torch.testing.assert_close(new_var, 0.99 * var_buf + 0.01 * x.var(0, unbiased=True))


def test_batch_norm_eval_uses_running_stats_and_leaves_them():
    x = torch.randn(4, 3, dtype=torch.float64)
    mean_buf, var_buf = (
        torch.tensor([1.0, 2.0, 3.0]).double(),
        torch.tensor([4.0, 1.0, 0.25]).double(),
    )
    x_hat, m, v = batch_norm(x, mean_buf, var_buf, NORM, training=False)
    torch.testing.assert_close(x_hat, (x - mean_buf) / torch.sqrt(var_buf + NORM.bn_eps))
    assert m is mean_buf and v is var_buf


def test_ensemble_batch_norm_is_per_member():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 16, 4, generator=g, dtype=torch.float64)
    x[1] = x[1] * 5 - 2  # members see different data
    mean_buf, var_buf = torch.zeros(2, 4).double(), torch.ones(2, 4).double()
    x_hat, new_mean, new_var = batch_norm(x, mean_buf, var_buf, NORM, training=True)
    for e in range(2):
        rm, rv = torch.zeros(4).double(), torch.ones(4).double()
        ref = F.batch_norm(x[e], rm, rv, None, None, True, NORM.bn_momentum, NORM.bn_eps)
        torch.testing.assert_close(x_hat[e], ref)
        torch.testing.assert_close(new_mean[e], rm)
        torch.testing.assert_close(new_var[e], rv)


def test_gaussian_entropy_identity_used_by_target_entropy():
    # H(N(0, sigma^2)) = 0.5 ln(2 pi e sigma^2): checked against torch's Normal.entropy.
    sigma = 0.15
    expected = torch.distributions.Normal(0.0, sigma).entropy().item()
    assert abs(expected - 0.5 * math.log(2 * math.pi * math.e * sigma**2)) < 1e-6
