"""Counter-based random numbers computed with integer tensor ops on the learner's device.

Why not torch's generators: the three execution paths must draw *identical* random numbers, and
the cudagraph path must draw new ones on every replay without a host round trip. A stateless
hash of (seed, stream, counter, element index) gives both: it is exact integer arithmetic (the
same bits on CPU, CUDA, eager, Inductor), its only state is one int64 counter tensor that the
graph advances in place, and a checkpoint needs nothing but that counter.

The hash is Chris Wellons' `lowbias32` (`flashsac_bench.lowbias32`, shared with the envs' device
streams). All products are split so that no intermediate exceeds 2**49: int64 overflow never
happens, so there is no undefined behaviour.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from flashsac_bench.learner.compile_store import StoredCompile
from flashsac_bench.lowbias32 import MASK32 as _MASK32
from flashsac_bench.lowbias32 import hash32, hash32_int


def counter_bits(
    key: torch.Tensor,
    counter: torch.Tensor,
    salts: torch.Tensor,
    offsets: torch.Tensor,
    draw_of_value: torch.Tensor,
    index_hashes: torch.Tensor,
) -> torch.Tensor:
    """The 32-bit hashes of several draws, concatenated. Draw i hashes (key, stream salt
    salts[i], counter + offsets[i]) with the index of each of its values; `draw_of_value`
    (which draw each value belongs to) and `index_hashes` (hash32(index ^ 0x5BD1E995) of each
    value's index within its draw) are constants of the draw sizes. Pure.

    Every draw of a call shares one chain of ~60 integer tensor ops (eager runs as many
    kernels; `CounterRNG.compile_hash` runs it as one compiled kernel). Integer arithmetic is
    exact: one call gives the bits of the same draws made one by one."""
    stream_keys = hash32(key ^ salts)
    counter_keys = hash32(((counter + offsets) & _MASK32) ^ stream_keys)
    return hash32(index_hashes ^ counter_keys[draw_of_value])


def index_hashes(numel: int, device: torch.device | str) -> torch.Tensor:
    """hash32(arange(numel) ^ 0x5BD1E995): the per-element half of every draw's hash."""
    return hash32(torch.arange(numel, dtype=torch.int64, device=device) ^ 0x5BD1E995)


class CounterRNG:
    """Streams of uniform / normal numbers keyed by (seed, stream) and a device counter.

    Every draw uses the current counter value, then increments it in place (so a captured CUDA
    graph draws fresh numbers on every replay); `draw` makes several draws in one call, with
    the bits of the same draws made one by one. Draw calls must happen in the same order on
    every path; the update cycle guarantees that.
    """

    def __init__(self, seed: int, device: torch.device | str) -> None:
        # The seed lives in a tensor (not a Python constant) so that loading a checkpoint
        # never invalidates compiled code or a captured graph.
        self.key = torch.tensor(hash32_int(int(seed)), dtype=torch.int64, device=device)
        self.counter = torch.zeros((), dtype=torch.int64, device=device)
        self._hash: Callable[..., torch.Tensor] = counter_bits
        # Device constants of each draw signature (stream salts, counter offsets, each value's
        # draw and index hash), made on first use by device kernels (no host copy, no sync);
        # the warm-ups before every capture make every captured signature's once.
        self._constants: dict[tuple, tuple[torch.Tensor, ...]] = {}

    def compile_hash(self) -> StoredCompile:
        """Run the hash as compiled code (the compile and cudagraph paths on CUDA), its
        compiled code saved for later processes. Shapes are dynamic, so one compiled kernel
        serves every draw size."""
        compiled = StoredCompile(counter_bits, dynamic=True)
        self._hash = compiled
        return compiled

    @property
    def compiled(self) -> bool:
        """Whether the hash runs as compiled code (compile_hash was called)."""
        return self._hash is not counter_bits

    def _signature(self, draws: tuple[tuple[int, int], ...]):
        found = self._constants.get(draws)
        if found is None:
            device = self.counter.device
            streams = [(stream * 0x9E3779B9) & _MASK32 for stream, _ in draws]
            salts = torch.zeros(len(draws), dtype=torch.int64, device=device)
            for i, salt in enumerate(streams):
                salts[i] = salt  # a fill kernel each: no host-to-device copy
            offsets = torch.arange(len(draws), dtype=torch.int64, device=device)
            draw_of_value = torch.cat(
                [
                    torch.full((n,), i, dtype=torch.int64, device=device)
                    for i, (_, n) in enumerate(draws)
                ]
            )
            hashes = torch.cat([index_hashes(n, device) for _, n in draws])
            found = self._constants[draws] = (salts, offsets, draw_of_value, hashes)
        return found

    def prepare(self, draws: tuple[tuple[int, int], ...]) -> None:
        """The first-use work of the draws `draws` (their device constants; the compiled hash's
        compilation for their signature), drawing nothing: the counter does not move. A loop
        that must not synchronize with the host (a CUDA loop) makes each of its draws' first
        use here, before it starts: a compilation inside it would."""
        self._hash(self.key, self.counter, *self._signature(draws))

    def bits(self, draws: tuple[tuple[int, int], ...]) -> list[torch.Tensor]:
        """The 32-bit hashes (int64) of draws ((stream, numel), ...), made in order."""
        bits = self._hash(self.key, self.counter, *self._signature(draws))
        # Outside the compiled hash: an in-place increment fused into a kernel that also reads
        # the counter could be seen by that kernel's later blocks (learner.state.SCALARS).
        self.counter.add_(len(draws))
        return list(bits.split([n for _, n in draws]))

    def uniform(self, stream: int, shape: tuple[int, ...]) -> torch.Tensor:
        """float32 uniform in [0, 1) with 24 random bits."""
        (bits,) = self.bits(((stream, math.prod(shape)),))
        return uniform_from_bits(bits, shape)

    def normal(self, stream: int, shape: tuple[int, ...]) -> torch.Tensor:
        """Standard normal float32 (Box-Muller on two 24-bit uniforms; both outputs used)."""
        (bits,) = self.bits(((stream, normal_bits(shape)),))
        return normal_from_bits(bits, shape)

    def uniform64(self, stream: int, shape: tuple[int, ...]) -> torch.Tensor:
        """float64 uniform in [0, 1) with 52 random bits (for indices into large rings)."""
        n = math.prod(shape)
        (bits,) = self.bits(((stream, index_bits(n)),))
        return uniform64_from_bits(bits, n).view(shape)

    def index(self, stream: int, n: int, size: torch.Tensor) -> torch.Tensor:
        """n uniform indices in [0, size) where `size` is a device tensor (no host sync)."""
        (bits,) = self.bits(((stream, index_bits(n)),))
        return index_from_bits(bits, n, size)

    def tensors(self) -> dict[str, torch.Tensor]:
        return {"key": self.key, "counter": self.counter}


def uniform_from_bits(bits: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """float32 uniform in [0, 1) with 24 random bits, from math.prod(shape) hashes."""
    return ((bits >> 8).to(torch.float32) * (1.0 / (1 << 24))).view(shape)


def normal_bits(shape: tuple[int, ...]) -> int:
    """How many hashes normal_from_bits takes for `shape`."""
    return 2 * ((math.prod(shape) + 1) // 2)


def normal_from_bits(bits: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Standard normal float32 (Box-Muller on two 24-bit uniforms; both outputs used)."""
    n = math.prod(shape)
    half = (n + 1) // 2
    bits = bits.view(2, half)
    u1 = ((bits[0] >> 8).to(torch.float32) + 1.0) * (1.0 / (1 << 24))  # (0, 1]
    u2 = (bits[1] >> 8).to(torch.float32) * (1.0 / (1 << 24))
    r = torch.sqrt(-2.0 * torch.log(u1))
    theta = (2.0 * math.pi) * u2
    out = torch.cat([r * torch.cos(theta), r * torch.sin(theta)])
    return out[:n].view(shape)


def index_bits(n: int) -> int:
    """How many hashes index_from_bits takes for n indices."""
    return 2 * n


def uniform64_from_bits(bits: torch.Tensor, n: int) -> torch.Tensor:
    """n float64 uniforms in [0, 1) with 52 random bits each, from 2n hashes."""
    bits = bits.view(2, n)
    hi = (bits[0] >> 6).to(torch.float64) * (1.0 / (1 << 26))
    lo = (bits[1] >> 6).to(torch.float64) * (1.0 / (1 << 52))
    return hi + lo


def index_from_bits(bits: torch.Tensor, n: int, size: torch.Tensor) -> torch.Tensor:
    """n uniform indices in [0, size) (a device tensor: no host sync), from 2n hashes."""
    idx = (uniform64_from_bits(bits, n) * size.to(torch.float64)).to(torch.int64)
    return torch.minimum(idx, (size - 1).clamp_min(0))
