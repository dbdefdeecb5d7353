"""Hand-written Triton kernels for what Inductor leaves split, each beside its plain-PyTorch
reference.

The rules every kernel module here keeps:

- The reference is the math (learner.update and the modules it calls); a kernel computes the
  same function and is proven equal to it within fp32 rounding, on the CPU through Triton's
  interpreter (tests/learner/test_kernel_*.py) and on CUDA (the same tests, marked gpu).
- A kernel is an opaque torch custom op (`torch.library.custom_op`, namespace `flashsac`):
  its fake implementation gives the outputs' shapes and dtypes, `mutates_args` names what it
  writes in place. An op is never differentiated itself: one whose result is (the cross-entropy)
  also returns its gradient rows, and the caller attaches them with plain ops (categorical.py
  says how and why: custom_op's `register_autograd` does not compose with torch.func.grad,
  which the learner differentiates with under torch.compile).
  torch.compile traces the op as one call (Dynamo never reads its Python, Inductor never
  lowers its Triton source) and a CUDA graph captures its launch like any kernel's.
- Implementations (`register`): CUDA launches the Triton kernel. Where TRITON_INTERPRET=1 (the
  tests: `INTERPRETED`) the CPU runs the same kernel through Triton's interpreter while
  `cpu_interprets` is on, so the op's plumbing (functionalization, reinplacing, torch.compile,
  autograd) is tested on the CPU with the kernel's own code; otherwise the CPU runs the op's
  default implementation, the reference's arithmetic.
- The learner calls an op only on CUDA (`enabled`); on the CPU it runs the reference itself,
  so the CPU numerics stay bit for bit what they were.
- Every launch checks its tensors first (`require`): device, dtype, shape, and unit stride
  wherever a kernel indexes a dimension as contiguous. A kernel indexes only elements whose
  offsets its masks keep inside the tensors so checked; row offsets are int64.
- Block sizes and launch shapes are fixed (no autotuning): the same inputs give the same bits
  on every path and in every process. Kernels are built without FMA contraction
  (`enable_fp_fusion=False`), so each multiply and add rounds as the reference's do.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch

try:
    import triton  # noqa: F401

    HAVE_TRITON = True
except ImportError:  # a CPU install of torch without Triton: the references run
    HAVE_TRITON = False

# triton.jit reads TRITON_INTERPRET when a kernel is decorated: this is read at the same time.
INTERPRETED = HAVE_TRITON and os.environ.get("TRITON_INTERPRET") == "1"


# Whether the CPU implementation of an op launches its kernel through the interpreter (only
# where INTERPRETED); a test may turn it off for the reference's much faster arithmetic.
cpu_interprets = INTERPRETED


def register(op, launch: Callable[..., Any], default: Callable[..., Any]) -> None:
    """`launch` as the CUDA implementation of the custom op `op`; where INTERPRETED, also the
    CPU's while `cpu_interprets` is on (`default`, the op's reference arithmetic, otherwise)."""
    op.register_kernel("cuda")(launch)
    if INTERPRETED:

        def cpu(*args):
            return (launch if cpu_interprets else default)(*args)

        op.register_kernel("cpu")(cpu)


def enabled(device: torch.device | str) -> bool:
    """Whether the learner runs the fused kernels on `device` (CUDA with Triton)."""
    return torch.device(device).type == "cuda" and HAVE_TRITON


def require(
    name: str,
    t: torch.Tensor,
    device: torch.device,
    dtype: torch.dtype,
    shape: tuple[int, ...] | None = None,
    contiguous: bool = True,
) -> None:
    """Raise ValueError unless `t` is what a kernel indexes: on `device`, of `dtype`, of
    `shape` (None: any) and contiguous (else: unit stride along its last dim only)."""
    problems = []
    if t.device != device:
        problems.append(f"on {t.device}, not {device}")
    if t.dtype != dtype:
        problems.append(f"{t.dtype}, not {dtype}")
    if shape is not None and tuple(t.shape) != tuple(shape):
        problems.append(f"shape {tuple(t.shape)}, not {tuple(shape)}")
    if contiguous and not t.is_contiguous():
        problems.append(f"not contiguous (strides {t.stride()})")
    if not contiguous and t.dim() and t.shape[-1] > 1 and t.stride(-1) != 1:
        problems.append(f"last dim not of unit stride (strides {t.stride()})")
    if any(s < 0 for s in t.stride()):
        problems.append(f"negative strides {t.stride()}")
    if problems:
        raise ValueError(f"fused kernel argument {name!r}: " + "; ".join(problems))
