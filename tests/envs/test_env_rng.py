"""Per-env counter-based random streams: exact hash, uniform values, one stream per env."""

from __future__ import annotations

import numpy as np
import pytest

from flashsac_bench.envs.g1.env_rng import EnvStreams, hash32
from flashsac_bench.learner.rng import hash32_int


def test_hash_equals_the_python_int_reference() -> None:
    x = np.random.default_rng(0).integers(0, 2**32, size=1000, dtype=np.uint64)
    got = hash32(x.astype(np.uint32))
    assert got.dtype == np.uint32
    assert [int(v) for v in got] == [hash32_int(int(v)) for v in x]


def test_values_are_uniform_in_the_open_unit_interval() -> None:
    s = EnvStreams(7, np.arange(64), num_streams=2)
    u = np.concatenate([s.unit(0, slice(None), 58).ravel() for _ in range(20)])
    assert u.shape == (64 * 58 * 20,)
    assert 0.0 < u.min() and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    hist = np.histogram(u, bins=10, range=(0, 1))[0] / len(u)
    assert np.abs(hist - 0.1).max() < 0.005
    assert len(np.unique(u)) > 0.999 * len(u)


def test_an_env_draws_the_same_numbers_in_any_shard() -> None:
    everyone = EnvStreams(3, np.arange(10), num_streams=2)
    shard = EnvStreams(3, np.arange(5, 8), num_streams=2)  # envs 5, 6, 7
    for _ in range(4):
        a = everyone.unit(1, slice(None), 15)
        b = shard.unit(1, slice(None), 15)
        np.testing.assert_array_equal(a[5:8], b)
    # Drawing for some rows advances only theirs: env 6 alone, then everyone again.
    only = shard.unit(0, np.array([1]), 4)
    np.testing.assert_array_equal(only, everyone.unit(0, np.array([6]), 4))
    np.testing.assert_array_equal(shard.counters[:, 0], [0, 1, 0])
    np.testing.assert_array_equal(everyone.counters[5:8], shard.counters)
    assert everyone.counters[:, 0].sum() == 1 and (everyone.counters[:, 1] == 4).all()


def test_streams_envs_seeds_and_counters_all_change_the_numbers() -> None:
    def draw(seed: int = 1, env: int = 0, stream: int = 0, skip: int = 0) -> np.ndarray:
        s = EnvStreams(seed, np.array([env]), num_streams=2)
        for _ in range(skip):
            s.unit(stream, slice(None), 8)
        return s.unit(stream, slice(None), 8)

    base = draw()
    for other in (draw(seed=2), draw(env=1), draw(stream=1), draw(skip=1), draw(seed=1 + 2**32)):
        assert not np.any(other == base)
    np.testing.assert_array_equal(draw(), base)


@pytest.mark.parametrize("count", [0, 2**32 - 1, 2**32, 2**40 + 5])
def test_counters_past_32_bits_stay_distinct(count: int) -> None:
    s = EnvStreams(1, np.array([0]), num_streams=1)
    s.counters[:] = count
    a = s.unit(0, slice(None), 4)
    s.counters[:] = count + 2**32 if count < 2**40 else count - 2**32
    assert not np.array_equal(a, s.unit(0, slice(None), 4))
