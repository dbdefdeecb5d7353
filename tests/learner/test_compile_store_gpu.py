"""CUDA: compiles are not stored (learner.compile_store.CUDA_PLAIN says why: a loaded artifact
ran the compile path without Inductor's CUDA graph trees, and the compile and cudagraph paths then
disagreed). Every compiled function of both compiled paths runs as plain torch.compile, saves
nothing, and a second learner of the same settings computes the first one's bits. Skipped on
CPU (tests/runner/test_warm_start.py: the CPU's warm start)."""

from __future__ import annotations

import pytest
import torch

from flashsac_bench.learner.compile_store import CUDA_PLAIN
from lab.bench.synthetic import Setup, build_learner

pytestmark = pytest.mark.gpu

SETUP = Setup(batch_size=64, updates_per_step=2, num_envs=32, tiny=True, device="cuda")


@pytest.mark.parametrize("path", ["compile", "cudagraph"])
def test_cuda_compiles_are_plain_and_a_second_learner_computes_the_first_ones_bits(
    path, tmp_path, monkeypatch
):
    cache = tmp_path / "inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    first = build_learner(SETUP, path)
    for _ in range(5):
        first.update()
    second = build_learner(SETUP, path)
    for _ in range(5):
        second.update()
    for learner in (first, second):
        reports = [
            (c.report.fallback, c.report.loaded, c.report.compiled) for c in learner.path.compiled
        ]
        assert reports == [(CUDA_PLAIN, 0, 0)] * 3  # critic, actor, the RNG's hash
    assert not (cache / "flashsac_bench_compiled").exists()
    a, b = first.state.tensors(), second.state.tensors()
    assert [k for k in a if not torch.equal(a[k], b[k])] == []
