"""CUDA-only checks of the compile and cudagraph paths (skipped on CPU; see docs/benchmarks.md)."""

from __future__ import annotations

import pytest
import torch

from flashsac_bench.harness.synthetic import Setup, build_learner

pytestmark = pytest.mark.gpu

SETUP = Setup(batch_size=64, updates_per_step=2, num_envs=32, tiny=True, device="cuda")


def _diff(a, b) -> float:
    ta, tb = a.state.tensors(), b.state.tensors()
    return max((ta[k].double() - tb[k].double()).abs().max().item() for k in ta)


def test_cudagraph_replays_match_the_compile_path():
    graph, comp = build_learner(SETUP, "cudagraph"), build_learner(SETUP, "compile")
    for _ in range(5):
        graph.update()
        comp.update()
    assert graph.executor.graph is not None and graph.executor.captures == 1
    assert _diff(graph, comp) <= 1e-6


def test_checkpoint_loaded_under_a_captured_graph_is_used_by_the_next_replay():
    a, b = build_learner(SETUP, "cudagraph"), build_learner(SETUP, "compile")
    a.update()
    b.update()
    b.update()
    a.load_state_dict(b.state_dict())  # copies into the graph's tensors: no recapture
    a.update()
    b.update()
    assert a.executor.captures == 1
    assert _diff(a, b) <= 1e-6


def test_capture_failure_warns_once_and_runs_the_compile_path(monkeypatch):
    def broken_graph(*args, **kwargs):
        raise RuntimeError("simulated capture failure")

    learner = build_learner(SETUP, "cudagraph")
    monkeypatch.setattr(torch.cuda, "graph", broken_graph)
    with pytest.warns(RuntimeWarning, match="running the compile path instead"):
        learner.update()
    assert learner.executor.graph is None and learner.executor.fallback
    reference = build_learner(SETUP, "compile")
    reference.update()
    assert _diff(learner, reference) <= 1e-6
