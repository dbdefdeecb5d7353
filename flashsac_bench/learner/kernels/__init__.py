"""Hand-written Triton kernels for what Inductor leaves split, each beside its plain-PyTorch
reference.

The rules every kernel module here keeps:

- The reference is the math (learner.update and the modules it calls); a kernel computes the
  same function and is proven equal to it within fp32 rounding, on the CPU through Triton's
  interpreter (tests/learner/test_kernels_*.py) and on CUDA (the same tests, marked gpu).
- A kernel is a torch custom op (`torch.library.custom_op`, namespace `flashsac`) with a CUDA
  implementation that launches it, a CPU implementation that runs the reference (so the op's
  plumbing -- functionalization, reinplacing, torch.compile -- is tested on the CPU too) and a
  fake implementation; so every path (eager, compile, cudagraph) calls the same op and CUDA
  graph capture records its launch.
- The learner calls an op only on CUDA (`enabled`); on the CPU it runs the reference itself,
  so the CPU numerics stay bit for bit what they were.
- Block sizes and launch shapes are fixed (no autotuning): the same inputs give the same bits
  on every path and in every process.
"""

from __future__ import annotations

import torch

try:
    import triton  # noqa: F401

    HAVE_TRITON = True
except ImportError:  # a CPU install of torch without Triton: the references run
    HAVE_TRITON = False


def enabled(device: torch.device | str) -> bool:
    """Whether the learner runs the fused kernels on `device` (CUDA with Triton)."""
    return torch.device(device).type == "cuda" and HAVE_TRITON
