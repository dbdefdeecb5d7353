from __future__ import annotations

from pathlib import Path

import pytest
import torch

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_REFERENCE = REPO_ROOT.parent / "shared" / "reference"


@pytest.fixture
def shared_reference() -> Path:
    """../shared/reference beside the clone (CI has it; a user's clone usually does not)."""
    if not SHARED_REFERENCE.is_dir():
        pytest.skip(
            f"{SHARED_REFERENCE} is absent: reference-data tests need ../shared beside the clone"
        )
    return SHARED_REFERENCE


@pytest.fixture(autouse=True)
def _restore_torch_globals():
    """In-process runs apply hardware settings process-wide; give later tests torch's own."""
    threads, precision = torch.get_num_threads(), torch.get_float32_matmul_precision()
    yield
    torch.set_num_threads(threads)
    torch.set_float32_matmul_precision(precision)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
