"""Chris Wellons' `lowbias32` hash (public domain) on int64 torch tensors holding values in
[0, 2**32), and on Python ints: the one hash of the learner's counter RNG (`learner.rng`) and of
the envs' device streams (`envs.g1.warp.env_rng_torch`), kept here because neither layer imports the
other. Every product is split so that no intermediate exceeds 2**49: exact integer arithmetic on
every device, eager or compiled, with no int64 overflow."""

from __future__ import annotations

import torch

MASK32 = 0xFFFFFFFF
_MASK16 = 0xFFFF
_MUL1 = 0x7FEB352D
_MUL2 = 0x846CA68B


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """(x * c) mod 2**32 for 0 <= x < 2**32 without int64 overflow."""
    lo = x * (c & _MASK16)
    hi = ((x * (c >> 16)) & _MASK16) << 16
    return (lo + hi) & MASK32


def hash32(x: torch.Tensor) -> torch.Tensor:
    """lowbias32 on int64 tensors holding values in [0, 2**32)."""
    x = x ^ (x >> 16)
    x = _mul32(x, _MUL1)
    x = x ^ (x >> 15)
    x = _mul32(x, _MUL2)
    return x ^ (x >> 16)


def hash32_int(x: int) -> int:
    """Python-int twin of hash32 (used for seeds; also a reference in tests)."""
    x &= MASK32
    x ^= x >> 16
    x = (x * _MUL1) & MASK32
    x ^= x >> 15
    x = (x * _MUL2) & MASK32
    return x ^ (x >> 16)
