"""The per-env random streams of `g1.env_rng` as torch tensor ops on the physics' device.

The twin of `g1.env_rng.EnvStreams` for the MuJoCo Warp backend: the same keys, counters and
lowbias32 hash (`flashsac_bench.lowbias32`, the learner RNG's too), so env i of seed s draws the
same numbers on both backends (the same resets, commands and observation noise;
tests/envs/test_env_rng_torch.py holds every value equal, bit for bit, to the numpy original).
The hash is exact integer arithmetic on int64 tensors on every device. The keys are made once by
the numpy original.

A device env draws for every env at once (no data-dependent shapes: the step can be captured as
a CUDA graph) and advances only the counters of the rows that use their draw (`advance`), so
an env's counters move exactly as on the CPU backend, where only those rows draw.
"""

from __future__ import annotations

import numpy as np
import torch

from flashsac_bench.envs.g1.env_rng import EnvStreams
from flashsac_bench.lowbias32 import MASK32 as _MASK32
from flashsac_bench.lowbias32 import hash32

_TO_UNIT = 1.0 / 2.0**32


class TorchEnvStreams:
    """`num_streams` streams for envs `env_ids` (global indices) of `seed`, on `device`."""

    def __init__(
        self, seed: int, env_ids: np.ndarray, num_streams: int, device: torch.device | str
    ) -> None:
        host = EnvStreams(seed, env_ids, num_streams)
        self._env_ids = np.asarray(env_ids)
        self.seed = host.seed
        self.device = torch.device(device)

        def tensor(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(a.astype(np.int64), device=self.device)

        self._env_key = tensor(host._env_key)  # (n,)
        self._stream_salt = tensor(host._stream_salt)  # (num_streams,)
        self._host = host
        self._elements: dict[int, torch.Tensor] = {}
        self.counters = torch.zeros(len(env_ids), num_streams, dtype=torch.int64, device=device)

    def reseed(self, seed: int) -> None:
        """The streams of `seed` for the same envs, in place (the counters are left as they are;
        a captured graph keeps reading these tensors)."""
        host = EnvStreams(seed, self._env_ids, len(self._stream_salt))
        self._env_key.copy_(torch.as_tensor(host._env_key.astype(np.int64)))
        self.seed, self._host = host.seed, host

    def _element_keys(self, m: int) -> torch.Tensor:
        keys = self._elements.get(m)
        if keys is None:
            keys = torch.as_tensor(
                self._host._elements(m).astype(np.int64), device=self.device
            ).unsqueeze(0)
            self._elements[m] = keys
        return keys

    def peek(self, stream: int, m: int) -> torch.Tensor:
        """(n, m) float64 uniform in (0, 1): every env's next draw of `stream`, counters left
        as they are (`advance` moves them for the rows that used it)."""
        count = self.counters[:, stream]
        key = self._env_key ^ hash32((count & _MASK32) ^ self._stream_salt[stream])
        # hash32(0) == 0 and x ^ 0 == x: below 2**32 draws this changes nothing (the numpy
        # original skips it there), so it runs unconditionally.
        key = key ^ hash32(count >> 32)
        bits = hash32(hash32(key).unsqueeze(1) ^ self._element_keys(m))
        return (bits.to(torch.float64) + 0.5) * _TO_UNIT  # exact, as in env_rng

    def advance(self, stream: int, rows: torch.Tensor | None = None) -> None:
        """Count one draw of `stream` for the rows where `rows` (bool, (n,)) is set; every row
        when None."""
        col = self.counters[:, stream]
        col += 1 if rows is None else rows.to(torch.int64)

    def draw(self, stream: int, m: int) -> torch.Tensor:
        """Every env draws: `peek`, then `advance` all rows."""
        out = self.peek(stream, m)
        self.advance(stream)
        return out
