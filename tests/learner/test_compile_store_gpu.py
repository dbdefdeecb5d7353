"""CUDA: a learner whose compiled updates and RNG hash are loaded from the files an earlier learner
of the same settings saved (learner.compile_store) computes that learner's bits, on the compile
path (Inductor's CUDA graph trees over the loaded code) and the cudagraph path (the cycle
captured around it). Skipped on CPU (tests/runner/test_warm_start.py: the CPU's warm start)."""

from __future__ import annotations

import pytest
import torch

from lab.bench.synthetic import Setup, build_learner

pytestmark = pytest.mark.gpu

SETUP = Setup(batch_size=64, updates_per_step=2, num_envs=32, tiny=True, device="cuda")


@pytest.mark.parametrize("path", ["compile", "cudagraph"])
def test_a_learner_on_loaded_compiles_computes_the_compiling_learners_bits(
    path, tmp_path, monkeypatch
):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    cold = build_learner(SETUP, path)
    for _ in range(5):
        cold.update()
    warm = build_learner(SETUP, path)
    for _ in range(5):
        warm.update()
    # critic, actor, hash; where one was not compiled through the store, its fallback says why
    why = [c.report.fallback for c in cold.path.compiled if c.report.compiled == 0]
    assert [c.report.compiled > 0 for c in cold.path.compiled] == [True] * 3, why
    for stored in warm.path.compiled:
        report = stored.report
        assert (report.compiled, report.notes, report.fallback) == (0, [], None), stored.name
        assert report.loaded == len(stored.variants) > 0
    a, b = cold.state.tensors(), warm.state.tensors()
    assert [k for k in a if not torch.equal(a[k], b[k])] == []
