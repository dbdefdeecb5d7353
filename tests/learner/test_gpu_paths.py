"""CUDA-only checks of the compile and cudagraph paths (skipped on CPU)."""

from __future__ import annotations

import gc
import weakref
from dataclasses import replace

import pytest
import torch

from flashsac_bench.runner.collector import Staging
from flashsac_bench.runner.device_steps import DeviceSteps
from lab.bench.synthetic import Setup, build_learner

pytestmark = pytest.mark.gpu

SETUP = Setup(batch_size=64, updates_per_step=2, num_envs=32, tiny=True, device="cuda")
# The compile path's pure steps and the cudagraph path's writing steps are two compiled graphs,
# each autotuning its reductions' block sizes on the device: timing noise may pick other sizes,
# hence another summation order (docs/paths.md). The tests that hold the two paths to the same
# bits compile both under Inductor's deterministic mode (no on-device autotuning), the option
# docs/paths.md names for runs that must repeat each other's bits.
SAME_BITS = replace(SETUP, path_options=(("inductor_options", {"deterministic": True}),))


def _update(*learners, cycles: int = 5) -> None:
    """Run `cycles` update cycles on each learner, side by side."""
    for _ in range(cycles):
        for learner in learners:
            learner.update()


def _diff(a, b) -> float:
    ta, tb = a.state.tensors(), b.state.tensors()
    return max((ta[k].double() - tb[k].double()).abs().max().item() for k in ta)


def test_cudagraph_replays_match_the_compile_path():
    graph, comp = build_learner(SAME_BITS, "cudagraph"), build_learner(SAME_BITS, "compile")
    _update(graph, comp)
    assert graph.path.graph is not None and graph.path.captures == 1
    assert _diff(graph, comp) <= 1e-6


def test_checkpoint_loaded_under_a_captured_graph_is_used_by_the_next_replay():
    a, b = build_learner(SAME_BITS, "cudagraph"), build_learner(SAME_BITS, "compile")
    a.update()
    b.update()
    b.update()
    a.load_state_dict(b.state_dict())  # copies into the graph's tensors: no recapture
    a.update()
    b.update()
    assert a.path.captures == 1
    assert _diff(a, b) <= 1e-6


def test_capture_failure_warns_once_and_runs_the_compile_path(monkeypatch):
    def broken_graph(*args, **kwargs):
        raise RuntimeError("simulated capture failure")

    learner = build_learner(SETUP, "cudagraph")
    monkeypatch.setattr(torch.cuda, "graph", broken_graph)
    with pytest.warns(RuntimeWarning, match="running the compiled updates without it"):
        learner.update()
    assert learner.path.graph is None and learner.path.fallback
    # The reference's Inductor graph trees (the compile path's default on CUDA) capture too.
    monkeypatch.undo()
    reference = build_learner(SETUP, "compile")
    reference.update()
    assert _diff(learner, reference) <= 1e-6


@pytest.mark.parametrize(
    ("path", "compiled"), [("eager", False), ("compile", True), ("cudagraph", True)]
)
def test_the_compiled_paths_run_the_rng_hash_compiled_on_cuda(path, compiled):
    """Exact integers: the same bits as the eager hash (test_normalizer_exploration_rng)."""
    assert build_learner(SETUP, path).state.rng.compiled is compiled


def test_compile_path_graph_trees_record_once_and_never_skip(monkeypatch):
    """The compile path on CUDA: the pure steps get Inductor's CUDA graph
    trees (recorded during warm-up, then only replayed: no re-recording across 100 cycles) and
    no "skipping cudagraphs" anywhere (cudagraph_or_error turns a skip into an error)."""
    from torch._dynamo.utils import counters

    captures = [0]
    begin = torch.cuda.CUDAGraph.capture_begin

    def counting(self, *args, **kwargs):
        captures[0] += 1
        return begin(self, *args, **kwargs)

    monkeypatch.setattr(torch.cuda.CUDAGraph, "capture_begin", counting)
    torch._dynamo.reset()
    counters.clear()
    strict = hasattr(torch._inductor.config.triton, "cudagraph_or_error")
    with torch._inductor.config.patch({"triton.cudagraph_or_error": True} if strict else {}):
        learner = build_learner(SETUP, "compile")
        assert learner.path.graph_trees
        learner.warmup()
        for _ in range(3):  # every step variant warmed up (1st call) and recorded (2nd)
            learner.update()
        torch.cuda.synchronize()
        warm = captures[0]
        for _ in range(100):
            learner.update()
        torch.cuda.synchronize()
    assert warm >= 2, "graph trees recorded nothing: the steps ran without CUDA graphs"
    assert captures[0] == warm, f"re-recorded at steady state: {warm} -> {captures[0]}"
    assert counters["inductor"]["cudagraph_skips"] == 0
    # Same numbers as the single-capture path (both without on-device autotuning: SAME_BITS).
    graph = build_learner(SAME_BITS, "cudagraph")
    trees = build_learner(SAME_BITS, "compile")
    _update(graph, trees)
    assert _diff(graph, trees) <= 1e-6
    torch._dynamo.reset()


def test_a_dropped_learners_graphs_die_before_the_next_capture():
    """torch clears a stream's cuBLAS workspaces when a graph captured on it dies
    (pytorch/pytorch#193402, learner/graphs.py): graphs dropped in a reference cycle must die
    before the next learner captures, not at a later collection, or its replays fault. A
    capture collects them first."""
    gc.disable()  # only the collections the capture and this test make
    try:
        old = build_learner(SETUP, "eager")
        steps = DeviceSteps(old, Staging(old.ring.layout, SETUP.num_envs, pin=True), capture=True)
        steps.capture()
        assert steps.mode == "cuda_graphs"
        steps.me = steps  # a reference cycle: only a collection frees it
        gone = weakref.ref(steps)
        del old, steps
        graph, comp = build_learner(SETUP, "cudagraph"), build_learner(SETUP, "compile")
        graph.update()  # the capture: the dropped steps' graphs die before it
        comp.update()
        assert gone() is None
        gc.collect()  # where they would have died without it
        _update(graph, comp, cycles=3)
        # Not bit for bit: the collection's workspace drop lets the capture take a fresh
        # cuBLAS workspace, so cuBLAS may pick other algorithms than the compile path's
        # (learner/graphs.py). A replay on a freed workspace faults or gives garbage.
        assert _diff(graph, comp) <= 1e-4
    finally:
        gc.enable()
