"""One counter-based random stream per env, so that results do not depend on how envs are split.

Why not one `np.random.Generator` for all envs: its draws interleave the envs, so env i's
numbers depend on how many envs sit before it in the same draw, i.e. on the shard layout. Here
every value is a pure function of (seed, global env index, stream, the env's draw count in that
stream, element index): an env draws the same numbers whether it is stepped by the thread pool
of one process or by any worker process, and the whole state is one counter per env and stream.

The hash is Chris Wellons' `lowbias32` (public domain), the same as the learner's counter RNG
(`flashsac_bench.learner.rng`), on numpy uint32 arrays: unsigned arithmetic wraps modulo 2**32
by definition, so the bits are exact and platform-independent.
"""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint32(0x9E3779B9)
_ELEMENT_SALT = np.uint32(0x5BD1E995)
_TO_UNIT = 1.0 / 2.0**32
# 0-d uint32 arrays, not numpy scalars: numpy converts a scalar operand on every call, a cost
# that dominates on the small arrays of a worker's draw (the hash runs several times per env
# step). Python-int shifts keep the uint32 dtype (NEP 50).
_MUL1 = np.array(0x7FEB352D, dtype=np.uint32)
_MUL2 = np.array(0x846CA68B, dtype=np.uint32)


def hash32(x: np.ndarray) -> np.ndarray:
    """lowbias32 on uint32 arrays (elementwise; returns a new array)."""
    x = x ^ (x >> 16)
    x *= _MUL1
    x ^= x >> 15
    x *= _MUL2
    x ^= x >> 16
    return x


class EnvStreams:
    """Uniform numbers for a contiguous range of envs, `num_streams` streams per env.

    `env_ids` are GLOBAL env indices (the same env gets the same key in every shard layout).
    Each draw for rows `rows` of stream s uses, per row, that row's current counter, then
    increments it: counter values are the only state (`counters`, shape (n, num_streams)).
    """

    def __init__(self, seed: int, env_ids: np.ndarray, num_streams: int) -> None:
        self.seed = int(seed)
        ids = np.asarray(env_ids, dtype=np.uint64)
        seed_key = hash32(np.array([self.seed & 0xFFFFFFFF], dtype=np.uint32))
        seed_key ^= hash32(np.array([(self.seed >> 32) & 0xFFFFFFFF], dtype=np.uint32) ^ _GOLDEN)
        lo = (ids & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        hi = (ids >> np.uint64(32)).astype(np.uint32)
        self._env_key = hash32(hash32(lo * _GOLDEN + np.uint32(1)) ^ hi ^ seed_key)
        self._stream_salt = hash32(np.arange(1, num_streams + 1, dtype=np.uint32) * _GOLDEN)
        self.counters = np.zeros((len(ids), num_streams), dtype=np.uint64)
        self._element_keys: dict[int, np.ndarray] = {}

    def _elements(self, m: int) -> np.ndarray:
        keys = self._element_keys.get(m)
        if keys is None:
            keys = hash32(np.arange(m, dtype=np.uint32) ^ _ELEMENT_SALT)
            self._element_keys[m] = keys
        return keys

    def unit(self, stream: int, rows: slice | np.ndarray, m: int) -> np.ndarray:
        """(k, m) float64 uniform in (0, 1) for the given local rows; advances their counters.

        32 random bits per value (resolution 2**-32): ample for observation noise and reset
        randomization, at one hash per value.
        """
        count = self.counters[rows, stream]
        c_lo = count.astype(np.uint32)  # the low 32 bits (an unsigned cast wraps)
        key = self._env_key[rows] ^ hash32(c_lo ^ self._stream_salt[stream])
        c_hi = (count >> 32).astype(np.uint32)
        if c_hi.any():  # hash32(0) == 0, and x ^ 0 == x: skipped below 2**32 draws
            key ^= hash32(c_hi)
        bits = hash32(hash32(key)[:, None] ^ self._elements(m)[None, :])
        self.counters[rows, stream] = count + 1
        out = np.add(bits, 0.5, dtype=np.float64)  # exact: uint32 -> float64, + 0.5
        out *= _TO_UNIT  # a power of two: exact
        return out
