"""The torch twin of the per-env random streams draws the numpy original's numbers bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from flashsac_bench.envs.g1.env_rng import EnvStreams
from flashsac_bench.envs.g1.warp.env_rng_torch import TorchEnvStreams, hash32


def test_hash32_equals_the_numpy_hash_on_random_words() -> None:
    from flashsac_bench.envs.g1.env_rng import hash32 as np_hash32

    words = np.random.default_rng(0).integers(0, 2**32, size=4096, dtype=np.uint64)
    words[:4] = [0, 1, 2**32 - 1, 2**31]
    want = np_hash32(words.astype(np.uint32))
    got = hash32(torch.as_tensor(words.astype(np.int64)))
    np.testing.assert_array_equal(got.numpy(), want.astype(np.int64))


@pytest.mark.parametrize("seed", [0, 7, 2**40 + 3])
def test_draws_equal_the_numpy_streams_at_any_counter(seed: int) -> None:
    ids = np.arange(5, 5 + 64)
    host, dev = EnvStreams(seed, ids, 2), TorchEnvStreams(seed, ids, 2, "cpu")
    counters = np.random.default_rng(seed % 97).integers(0, 2**40, size=(64, 2), dtype=np.uint64)
    counters[:8] = 0
    counters[8:16] = 2**32 - 1  # the high word changes at the next draw
    host.counters[:] = counters
    dev.counters[:] = torch.as_tensor(counters.astype(np.int64))
    for stream, m in ((0, 58), (1, 15), (0, 58), (1, 1)):
        want = host.unit(stream, slice(None), m)
        got = dev.draw(stream, m)
        assert got.dtype == torch.float64
        np.testing.assert_array_equal(got.numpy().view(np.uint64), want.view(np.uint64))
    np.testing.assert_array_equal(dev.counters.numpy(), host.counters.astype(np.int64))


def test_peek_and_a_masked_advance_count_only_the_rows_that_drew() -> None:
    ids = np.arange(32)
    host, dev = EnvStreams(3, ids, 2), TorchEnvStreams(3, ids, 2, "cpu")
    rng = np.random.default_rng(1)
    for _ in range(6):
        rows = rng.random(32) < 0.3
        want = host.unit(1, np.flatnonzero(rows), 15)
        got = dev.peek(1, 15)
        dev.advance(1, torch.as_tensor(rows))
        np.testing.assert_array_equal(got.numpy()[rows], want)
        np.testing.assert_array_equal(dev.counters.numpy(), host.counters.astype(np.int64))
