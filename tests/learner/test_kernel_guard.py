"""The bounds check of interpreted launches (tests/learner/kernel_guard.py) catches an access one
element past a tensor's view, and passes the same kernel masked."""

from __future__ import annotations

import pytest
import torch

from flashsac_bench.learner import kernels

triton = pytest.importorskip("triton", reason="the kernel tests need Triton (pip install triton)")
import triton.language as tl  # noqa: E402

from tests.learner.kernel_guard import bounds_checked  # noqa: E402

pytestmark = pytest.mark.skipif(
    not kernels.INTERPRETED, reason="the CPU run of the kernels needs TRITON_INTERPRET=1"
)


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, EXTRA: tl.constexpr, BLOCK: tl.constexpr):
    at = tl.arange(0, BLOCK)
    mask = at < n + EXTRA
    tl.store(dst_ptr + at, tl.load(src_ptr + at, mask=mask, other=0.0), mask=mask)


@pytest.mark.parametrize("extra, fails", [(0, False), (1, True)])
def test_the_guard_catches_one_element_past_the_view(extra, fails):
    buffer = torch.arange(16, dtype=torch.float32)  # the view's storage goes on: no segfault
    src, dst = buffer[:5], torch.zeros(5)
    with bounds_checked() as lanes:
        if fails:
            with pytest.raises(Exception, match="out of bounds"):  # the interpreter wraps it
                _copy_kernel[(1,)](src, dst, 5, EXTRA=extra, BLOCK=8)
        else:
            _copy_kernel[(1,)](src, dst, 5, EXTRA=extra, BLOCK=8)
            assert torch.equal(dst, src) and lanes == {"loads": 5, "stores": 5}
