"""Reward normalizer vs a numpy reference; zeta noise; the counter RNG."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from flashsac_bench.learner.exploration import ZetaNoise, zeta_pmf
from flashsac_bench.learner.reward_normalizer import RewardNormalizer
from flashsac_bench.learner.rng import CounterRNG, hash32, hash32_int


def numpy_reward_stats(rewards: np.ndarray, dones: np.ndarray, gamma: float):
    """Independent reference: discounted returns, then mean/var over ALL (step, env) values."""
    g = np.zeros(rewards.shape[1])
    history = []
    for r, d in zip(rewards, dones, strict=True):
        g = gamma * (1.0 - d) * g + r
        history.append(g.copy())
    allg = np.concatenate(history)
    return g, np.abs(allg).max(), allg.mean(), allg.var()


def test_reward_normalizer_statistics_match_numpy():
    rng = np.random.default_rng(0)
    steps, envs, gamma = 50, 8, 0.97
    rewards = rng.normal(1.0, 2.0, (steps, envs)).astype(np.float32)
    dones = (rng.random((steps, envs)) < 0.05).astype(np.float32)
    norm = RewardNormalizer(envs, gamma, g_max=5.0, enabled=True, device="cpu")
    for r, d in zip(rewards, dones, strict=True):
        norm.update(torch.from_numpy(r), torch.from_numpy(d))
    g, gmax, mean, var = numpy_reward_stats(rewards.astype(np.float64), dones, gamma)
    np.testing.assert_allclose(norm.returns.numpy(), g, rtol=1e-5)
    assert abs(norm.returns_abs_max.item() - gmax) < 1e-4
    # The running stats start from (mean 0, var 1, count 1e-4): negligible vs 400 samples.
    assert abs(norm.mean.item() - mean) < 1e-5 * max(1, abs(mean))
    assert abs(norm.var.item() - var) < 1e-5 * var
    expected = max(np.sqrt(var + 1e-8), gmax / 5.0)
    assert abs(norm.divisor().item() - expected) < 1e-4 * expected


def test_reward_normalizer_small_case_by_hand():
    # gamma 0.5: G1 = [1, 2]; G2 = 0.5 * G1 + [3, 1] = [3.5, 2] -> |G|max 3.5.
    norm = RewardNormalizer(2, 0.5, g_max=1.0, enabled=True, device="cpu")
    norm.update(torch.tensor([1.0, 2.0]), torch.tensor([0.0, 0.0]))
    norm.update(torch.tensor([3.0, 1.0]), torch.tensor([0.0, 1.0]))  # env 1 done: G = r
    torch.testing.assert_close(norm.returns, torch.tensor([3.5, 1.0]))
    assert norm.returns_abs_max.item() == 3.5
    assert norm.divisor().item() == 3.5  # G_max / g_max = 3.5 dominates the std (~1.1)


def test_disabled_normalizer_divides_by_one():
    norm = RewardNormalizer(2, 0.97, g_max=5.0, enabled=False, device="cpu")
    norm.update(torch.tensor([100.0, -100.0]), torch.zeros(2))
    assert norm.divisor().item() == 1.0


def test_zeta_pmf_values():
    p = zeta_pmf(2.0, 16)
    assert abs(p[0].item() - 0.631) < 1e-3  # 1 / sum_{k<=16} k^-2 = 1 / 1.5843
    mean = (torch.arange(1, 17, dtype=torch.float64) * p).sum().item()
    assert abs(mean - 2.134) < 1e-3  # H_16 / 1.5843 = 3.3807 / 1.5843
    assert abs(p.sum().item() - 1.0) < 1e-12


def test_zeta_noise_holds_noise_for_sampled_repeats():
    rng = CounterRNG(0, "cpu")
    noise = ZetaNoise(num_envs=3, action_dim=2, mu=2.0, k_max=16, rng=rng)
    runs, current, last = [], 0, None
    for _ in range(4000):
        n = noise.step(None).clone()
        if last is not None and torch.equal(n, last):
            current += 1
        else:
            if last is not None:
                runs.append(current)
            current = 1
        last = n
    runs_t = torch.tensor(runs, dtype=torch.float64)
    assert runs_t.max() <= 16
    assert abs((runs_t == 1).double().mean().item() - 0.631) < 0.04
    assert abs(runs_t.mean().item() - 2.134) < 0.15


def test_zeta_noise_resamples_finished_envs_only():
    rng = CounterRNG(1, "cpu")
    noise = ZetaNoise(num_envs=4, action_dim=2, mu=2.0, k_max=16, rng=rng)
    noise.step(None)
    noise.repeat.fill_(16)  # force a long hold
    before = noise.noise.clone()
    after = noise.step(torch.tensor([False, True, False, False])).clone()
    assert torch.equal(after[[0, 2, 3]], before[[0, 2, 3]])
    assert not torch.equal(after[1], before[1])


def test_hash_matches_python_twin_and_rng_is_counter_driven():
    xs = torch.tensor([0, 1, 2, 12345, 2**32 - 1], dtype=torch.int64)
    assert hash32(xs).tolist() == [hash32_int(int(x)) for x in xs]
    a, b = CounterRNG(7, "cpu"), CounterRNG(7, "cpu")
    first = a.normal(0, (1000,))
    assert torch.equal(first, b.normal(0, (1000,)))  # same seed, same counter -> same numbers
    assert not torch.equal(first, a.normal(0, (1000,)))  # the counter advanced
    assert not torch.equal(CounterRNG(8, "cpu").normal(0, (1000,)), first)
    assert a.counter.item() == 2


def test_rng_distributions():
    rng = CounterRNG(3, "cpu")
    n = rng.normal(0, (200_000,))
    assert abs(n.mean().item()) < 0.01 and abs(n.std().item() - 1) < 0.01
    u = rng.uniform64(1, (200_000,))
    assert 0 <= u.min().item() and u.max().item() < 1 and abs(u.mean().item() - 0.5) < 0.005
    idx = rng.index(2, 100_000, torch.tensor(10))
    counts = torch.bincount(idx, minlength=10).double()
    assert idx.min() >= 0 and idx.max() <= 9
    assert (counts / 10_000 - 1).abs().max() < 0.05


def test_counter_bits_by_hand():
    """One element of one draw, from the Python twin: the documented key/stream/counter mix."""
    rng = CounterRNG(11, "cpu")
    rng.counter.fill_(5)
    (bits,) = rng.bits(((3, 4),))
    stream_key = hash32_int(hash32_int(11) ^ ((3 * 0x9E3779B9) & 0xFFFFFFFF))
    counter_key = hash32_int(5 ^ stream_key)
    assert bits[2].item() == hash32_int(hash32_int(2 ^ 0x5BD1E995) ^ counter_key)
    assert rng.counter.item() == 6


def test_draws_made_in_one_call_are_the_draws_made_one_by_one():
    """A cycle makes its three draws in one call (one hash chain): the same bits, the same
    counter, as three calls; and the second draw of a call is the by-hand hash at counter + 1."""
    together, apart = CounterRNG(4, "cpu"), CounterRNG(4, "cpu")
    draws = ((1, 6), (2, 5), (3, 1))
    joint = together.bits(draws)
    assert [b.numel() for b in joint] == [6, 5, 1]
    for (stream, n), bits in zip(draws, joint, strict=True):
        assert torch.equal(bits, apart.bits(((stream, n),))[0])
    assert together.counter.item() == apart.counter.item() == 3
    stream_key = hash32_int(hash32_int(4) ^ ((2 * 0x9E3779B9) & 0xFFFFFFFF))
    counter_key = hash32_int(1 ^ stream_key)
    assert joint[1][4].item() == hash32_int(hash32_int(4 ^ 0x5BD1E995) ^ counter_key)


@pytest.mark.slow
def test_compiled_hash_draws_the_same_bits():
    """The compile / cudagraph paths run the hash compiled on CUDA: exact integers,
    so every draw (uniform, normal, indices; sizes 1 and many; several streams) is identical."""
    eager, compiled = CounterRNG(5, "cpu"), CounterRNG(5, "cpu")
    compiled.compile_hash()
    assert compiled.compiled and not eager.compiled
    for rng_draws in range(2):
        size = torch.tensor(1000 + rng_draws)
        for draw in (
            lambda r: r.uniform(102, (1,)),
            lambda r: r.normal(101, (4, 3)),
            lambda r: r.normal(2, (2, 16, 3)),
            lambda r, size=size: r.index(1, 64, size),
        ):
            assert torch.equal(draw(compiled), draw(eager))
        draws = ((7, 33), (8, 2))  # every bit, not just the ones a draw keeps
        assert all(map(torch.equal, compiled.bits(draws), eager.bits(draws)))
    assert compiled.counter.item() == eager.counter.item() == 12


def test_prepare_makes_a_draws_first_use_work_and_draws_nothing():
    """A CUDA loop allows no host sync, and a draw's first use makes constants (and compiles the
    hash): `prepare` does that ahead, without moving the counter or changing any later draw."""
    prepared, plain = CounterRNG(3, "cpu"), CounterRNG(3, "cpu")
    prepared.prepare(((103, 12),))
    assert prepared.counter.item() == 0 and list(prepared._constants) == [((103, 12),)]
    assert torch.equal(prepared.uniform(103, (3, 4)), plain.uniform(103, (3, 4)))
    assert list(prepared._constants) == [((103, 12),)]  # the draw found its constants made
    assert prepared.counter.item() == plain.counter.item() == 1
