"""CUDA: a compile that replays as Inductor's CUDA graph trees (the compile path's updates) is
not stored (learner.compile_store.CUDA_PLAIN says why: a loaded artifact runs without them);
every other one (the cudagraph path's updates, captured whole by the path, and the RNG's hash)
is stored: a second learner of the same settings loads what the first one compiled, traces
nothing, and computes the first one's bits. Skipped on CPU (tests/runner/test_warm_start.py:
the CPU's warm start)."""

from __future__ import annotations

import pytest
import torch

from flashsac_bench.learner.compile_store import CUDA_PLAIN
from lab.bench.synthetic import Setup, build_learner

pytestmark = pytest.mark.gpu

SETUP = Setup(batch_size=64, updates_per_step=2, num_envs=32, tiny=True, device="cuda")

# (fallback, loaded, compiled) of critic, actor and the RNG's hash: first learner, second one
EXPECTED = {
    "compile": (
        [(CUDA_PLAIN, 0, 0), (CUDA_PLAIN, 0, 0), (None, 0, 1)],
        [(CUDA_PLAIN, 0, 0), (CUDA_PLAIN, 0, 0), (None, 1, 0)],
    ),
    "cudagraph": ([(None, 0, 1)] * 3, [(None, 1, 0)] * 3),
}


@pytest.mark.parametrize("path", ["compile", "cudagraph"])
def test_cuda_stores_what_replays_without_graph_trees_and_a_second_learner_computes_the_same_bits(
    path, tmp_path, monkeypatch
):
    cache = tmp_path / "inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    learners = []
    for _ in range(2):
        learner = build_learner(SETUP, path)
        for _ in range(5):
            learner.update()
        learners.append(learner)
    reports = [
        [(c.report.fallback, c.report.loaded, c.report.compiled) for c in learner.path.compiled]
        for learner in learners
    ]
    assert tuple(reports) == EXPECTED[path]
    assert [c.report.notes for c in learners[1].path.compiled] == [[]] * 3
    a, b = (learner.state.tensors() for learner in learners)
    assert [k for k in a if not torch.equal(a[k], b[k])] == []
