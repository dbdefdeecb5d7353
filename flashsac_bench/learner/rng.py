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

import torch

from flashsac_bench.lowbias32 import MASK32 as _MASK32
from flashsac_bench.lowbias32 import hash32, hash32_int


def counter_bits(
    key: torch.Tensor, counter: torch.Tensor, salt: torch.Tensor, numel: int
) -> torch.Tensor:
    """The 32-bit hashes of one draw: numel values for (key, stream salt, counter). Pure.

    Written out as ~70 integer tensor ops, so eager runs as many kernels; `CounterRNG.compile_hash`
    runs it as one compiled kernel. Integer arithmetic is exact: both give the same bits.
    """
    stream_key = hash32(key ^ salt)
    counter_key = hash32((counter & _MASK32) ^ stream_key)
    idx = torch.arange(numel, dtype=torch.int64, device=counter.device)
    return hash32(hash32(idx ^ 0x5BD1E995) ^ counter_key)


class CounterRNG:
    """Streams of uniform / normal numbers keyed by (seed, stream) and a device counter.

    Every draw uses the current counter value, then increments it in place (so a captured CUDA
    graph draws fresh numbers on every replay). Draw calls must happen in the same order on
    every path; the update cycle guarantees that.
    """

    def __init__(self, seed: int, device: torch.device | str) -> None:
        # The seed lives in a tensor (not a Python constant) so that loading a checkpoint
        # never invalidates compiled code or a captured graph.
        self.key = torch.tensor(hash32_int(int(seed)), dtype=torch.int64, device=device)
        self.counter = torch.zeros((), dtype=torch.int64, device=device)
        self._hash = counter_bits
        # Stream salts as device constants, made on first use by a fill kernel (no host copy,
        # no sync); the warm-ups before every capture draw each captured stream once.
        self._salts: dict[int, torch.Tensor] = {}

    def compile_hash(self) -> None:
        """Run the hash as compiled code (path.compile_rng on the compile / cudagraph paths).
        Shapes are dynamic, so one compiled kernel serves every draw size."""
        self._hash = torch.compile(counter_bits, fullgraph=True, dynamic=True)

    @property
    def compiled(self) -> bool:
        """Whether the hash runs as compiled code (compile_hash was called)."""
        return self._hash is not counter_bits

    def _salt(self, stream: int) -> torch.Tensor:
        salt = self._salts.get(stream)
        if salt is None:
            value = (stream * 0x9E3779B9) & _MASK32
            salt = torch.full((), value, dtype=torch.int64, device=self.counter.device)
            self._salts[stream] = salt
        return salt

    def _bits(self, stream: int, numel: int) -> torch.Tensor:
        bits = self._hash(self.key, self.counter, self._salt(stream), numel)
        # Outside the compiled hash: an in-place increment fused into a kernel that also reads
        # the counter could be seen by that kernel's later blocks (learner.state.SCALARS).
        self.counter.add_(1)
        return bits

    def uniform(self, stream: int, shape: tuple[int, ...]) -> torch.Tensor:
        """float32 uniform in [0, 1) with 24 random bits."""
        n = math.prod(shape)
        bits = self._bits(stream, n)
        return ((bits >> 8).to(torch.float32) * (1.0 / (1 << 24))).view(shape)

    def uniform64(self, stream: int, shape: tuple[int, ...]) -> torch.Tensor:
        """float64 uniform in [0, 1) with 52 random bits (for indices into large rings)."""
        n = math.prod(shape)
        bits = self._bits(stream, 2 * n).view(2, n)
        hi = (bits[0] >> 6).to(torch.float64) * (1.0 / (1 << 26))
        lo = (bits[1] >> 6).to(torch.float64) * (1.0 / (1 << 52))
        return (hi + lo).view(shape)

    def normal(self, stream: int, shape: tuple[int, ...]) -> torch.Tensor:
        """Standard normal float32 (Box-Muller on two 24-bit uniforms; both outputs used)."""
        n = math.prod(shape)
        half = (n + 1) // 2
        bits = self._bits(stream, 2 * half).view(2, half)
        u1 = ((bits[0] >> 8).to(torch.float32) + 1.0) * (1.0 / (1 << 24))  # (0, 1]
        u2 = (bits[1] >> 8).to(torch.float32) * (1.0 / (1 << 24))
        r = torch.sqrt(-2.0 * torch.log(u1))
        theta = (2.0 * math.pi) * u2
        out = torch.cat([r * torch.cos(theta), r * torch.sin(theta)])
        return out[:n].view(shape)

    def index(self, stream: int, n: int, size: torch.Tensor) -> torch.Tensor:
        """n uniform indices in [0, size) where `size` is a device tensor (no host sync)."""
        u = self.uniform64(stream, (n,))
        idx = (u * size.to(torch.float64)).to(torch.int64)
        return torch.minimum(idx, (size - 1).clamp_min(0))

    def tensors(self) -> dict[str, torch.Tensor]:
        return {"key": self.key, "counter": self.counter}
