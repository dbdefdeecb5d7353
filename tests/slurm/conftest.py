"""A throwaway single-node SLURM for the tests of this folder (scripts/slurm/local_cluster.py).

Where one cannot start (no slurm-wlm / munge, not root, not Linux) the tests skip with the one
reason; where the run must prove SLURM (CI=true, or FLASHSAC_BENCH_REQUIRE_SLURM=1, which .ci/run
sets) they fail with it instead. The cluster is the module's own (its own slurm.conf, ports and
controller), and every daemon it started is stopped after the module, also when a test fails.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slurm" / "local_cluster.py"


def local_cluster_module() -> ModuleType:
    name = "flashsac_local_cluster"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SCRIPT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def slurm_required() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("FLASHSAC_BENCH_REQUIRE_SLURM") == "1"


@pytest.fixture(scope="module")
def slurm() -> Iterator[ModuleType]:
    """A running cluster (a LocalCluster: .env(), .client(), .partition)."""
    lc = local_cluster_module()
    cluster = lc.LocalCluster()
    try:
        cluster.start()
    except lc.ClusterUnavailableError as err:
        reason = f"no local SLURM: {err}"
        if slurm_required():
            pytest.fail(f"SLURM must start here (CI): {reason}")
        pytest.skip(reason.splitlines()[0])
    try:
        yield cluster
    finally:
        cluster.stop()
