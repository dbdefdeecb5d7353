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


# unilab-rl (the interop cross-check's and the benchmarks' reference) is installed apart from
# every extra (`pip install --no-deps`), so its tests ask for it here, not through a fixture.
try:
    import uni_rl  # noqa: F401

    HAS_UNILAB = True
except ImportError:
    HAS_UNILAB = False
needs_unilab = pytest.mark.skipif(
    not HAS_UNILAB,
    reason="unilab-rl is not importable; `pip install --no-deps unilab-rl==1.4.15` (CI does)",
)

GYMNASIUM_MISSING = 'needs the [gymnasium] extra (gymnasium): pip install -e ".[gymnasium]"'


@pytest.fixture(scope="session")
def gymnasium_extra() -> None:
    """Skips, naming the install command, where the [gymnasium] extra is not installed."""
    from flashsac_bench.config.options import installed

    if not installed("gymnasium"):
        pytest.skip(GYMNASIUM_MISSING)


@pytest.fixture(scope="session")
def mjwarp_extra() -> None:
    """Skips, naming the install command, where the [mjwarp] extra is not installed."""
    import importlib.util

    missing = [m for m in ("warp", "mujoco_warp") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f'needs the [mjwarp] extra ({", ".join(missing)}): pip install -e ".[mjwarp]"')


@pytest.fixture(scope="session")
def mjwarp(mjwarp_extra: None) -> None:
    """MuJoCo Warp, its CPU kernels compiled and loaded once per test session: the first env
    built compiles them into ~/.cache/warp (about half a minute on a cold cache, seconds after)
    and every later env of the session reuses them."""
    from flashsac_bench.config.backend import MjwarpConfig, WarpOptions
    from flashsac_bench.config.task import TaskConfig
    from flashsac_bench.envs.g1.warp.walk_warp import G1WalkWarp

    backend = MjwarpConfig(warp=WarpOptions(device="cpu"))
    with G1WalkWarp(TaskConfig(), backend, 2, 0) as env:
        env.step(torch.zeros(2, env.action_dim))
