"""Fixtures of the runner tests (helpers live in runner_helpers, importable by name)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _restore_torch_globals():
    """In-process runs apply hardware settings process-wide; give later tests torch's own."""
    threads, precision = torch.get_num_threads(), torch.get_float32_matmul_precision()
    yield
    torch.set_num_threads(threads)
    torch.set_float32_matmul_precision(precision)
