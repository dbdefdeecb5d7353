"""Bounds-checked kernel launches through Triton's interpreter: every load and store of every
unmasked lane must address bytes inside one of the launch's tensor arguments (the extent of
its view), else AssertionError. On a GPU such an access is the illegal-address class of fault;
the interpreter itself reads and writes raw host memory without checking."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import torch


def _extent(t: torch.Tensor) -> tuple[int, int]:
    """[first byte, past the last byte) of the elements a view spans."""
    last = sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))
    return t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size()


@contextlib.contextmanager
def bounds_checked() -> Iterator[dict[str, int]]:
    """Within: interpreted launches are checked; yields counts of the lanes checked."""
    from triton.runtime import interpreter as interp

    counts = {"loads": 0, "stores": 0}
    spans: list[tuple[int, int]] = []
    init = interp.GridExecutor._init_args_hst
    load = interp.InterpreterBuilder.create_masked_load
    store = interp.InterpreterBuilder.create_masked_store

    def init_args(self, args_dev, kwargs):
        args_hst, kwargs_hst = init(self, args_dev, kwargs)
        spans.clear()
        for arg in [*args_hst, *kwargs_hst.values()]:
            if isinstance(arg, torch.Tensor) and arg.numel():
                spans.append(_extent(arg))
        return args_hst, kwargs_hst

    def check(kind: str, ptrs, mask) -> None:
        width = max(1, ptrs.get_element_ty().primitive_bitwidth // 8)
        addr = np.asarray(ptrs.data, dtype=np.uint64)
        live = np.broadcast_to(np.asarray(mask.data, dtype=bool), addr.shape)
        addr = addr[live]
        inside = np.zeros(addr.shape, dtype=bool)
        for lo, hi in spans:
            inside |= (addr >= lo) & (addr + width <= hi)
        counts[kind] += int(addr.size)
        if not inside.all():
            bad = addr[~inside]
            raise AssertionError(
                f"{kind[:-1]} out of bounds: {bad.size} lane(s), e.g. address {int(bad[0]):#x}; "
                f"argument extents {[(hex(lo), hi - lo) for lo, hi in spans]}"
            )

    def checked_load(self, ptrs, mask, other, *args, **kwargs):
        check("loads", ptrs, mask)
        return load(self, ptrs, mask, other, *args, **kwargs)

    def checked_store(self, ptrs, value, mask, *args, **kwargs):
        check("stores", ptrs, mask)
        return store(self, ptrs, value, mask, *args, **kwargs)

    interp.GridExecutor._init_args_hst = init_args
    interp.InterpreterBuilder.create_masked_load = checked_load
    interp.InterpreterBuilder.create_masked_store = checked_store
    try:
        yield counts
    finally:
        interp.GridExecutor._init_args_hst = init
        interp.InterpreterBuilder.create_masked_load = load
        interp.InterpreterBuilder.create_masked_store = store
