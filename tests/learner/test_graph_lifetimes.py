"""learner.graphs: when the project's CUDA graphs are destroyed, and when torch's cached cuBLAS
workspaces are dropped: before every capture and after graphs died (learner/graphs.py says
why). On the CPU the graphs and the cache are stand-ins. The runner's release:
tests/runner/test_runner_faults.py; the GPU case: tests/learner/test_gpu_paths.py,
test_a_dropped_learners_graphs_die_before_the_next_capture."""

from __future__ import annotations

import gc
import weakref
from contextlib import contextmanager

import pytest
import torch

from flashsac_bench.learner import graphs
from flashsac_bench.learner.graphs import GraphSet, collect_dead_graphs


class _Graph:
    """Stands in for torch.cuda.CUDAGraph (no CUDA here)."""


@pytest.fixture
def fake_capture(monkeypatch):
    """torch.cuda.CUDAGraph / torch.cuda.graph without CUDA; `fail` makes the next capture
    raise, `synced` counts device synchronizations, `cleared` the drops of torch's cached
    cuBLAS workspaces."""
    state = {"fail": False, "synced": 0, "cleared": 0}

    @contextmanager
    def graph(g, capture_error_mode="global"):
        if state["fail"]:
            raise RuntimeError("simulated capture failure")
        yield

    def synchronize(device=None):
        state["synced"] += 1

    monkeypatch.setattr(torch.cuda, "CUDAGraph", _Graph)
    monkeypatch.setattr(torch.cuda, "graph", graph)
    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
    monkeypatch.setattr(
        graphs, "clear_cublas_workspaces", lambda: state.update(cleared=state["cleared"] + 1)
    )
    return state


@pytest.fixture(autouse=True)
def _no_other_owners(monkeypatch):
    """Owners left by other tests (released or not) must not decide these tests."""
    monkeypatch.setattr(graphs, "_OWNERS", weakref.WeakSet())


def test_a_failed_capture_keeps_its_graph_until_release(fake_capture):
    s = GraphSet()
    first = s.capture("act", lambda: None)
    assert s.get("act") is first and s and s.holds_graphs
    fake_capture["fail"] = True
    with pytest.raises(RuntimeError, match="simulated capture failure"):
        s.capture("store", lambda: None)
    assert s.get("store") is None  # never replayed ...
    assert len(s._retired) == 1 and isinstance(s._retired[0], _Graph)  # ... but not destroyed
    assert fake_capture["cleared"] == 2  # each capture started from an empty cache
    s.release(torch.device("cpu"))
    assert not s.holds_graphs and fake_capture["synced"] == 1
    assert fake_capture["cleared"] == 3  # nothing may keep a workspace in the freed pools


def test_a_replaced_or_retired_graph_stays_alive_until_release(fake_capture):
    s = GraphSet()
    old = s.capture("cycle", lambda: None)
    new = s.capture("cycle", lambda: None)
    assert s.get("cycle") is new and s._retired == [old]
    s.retire_all()
    assert not s and s.holds_graphs and s._retired == [old, new]
    s.release(torch.device("cpu"))
    assert not s.holds_graphs


def test_release_without_graphs_does_not_touch_the_device(fake_capture):
    GraphSet().release(torch.device("cpu"))
    assert fake_capture["synced"] == 0 and fake_capture["cleared"] == 0


def test_a_dropped_owner_in_a_reference_cycle_is_destroyed_before_the_next_capture(
    fake_capture,
):
    gc.disable()  # only the collections made here
    try:
        dropped = GraphSet()
        dropped.capture("cycle", lambda: None)
        assert fake_capture["cleared"] == 1
        dropped.me = dropped  # a reference cycle: refcounting alone never frees it
        gone = weakref.ref(dropped)
        del dropped
        assert gone() is not None  # unreachable, yet alive: its graph would die "later"
        current = GraphSet()
        assert collect_dead_graphs(keep=(current,))
        assert gone() is None  # destroyed now, before `current` captures
        assert fake_capture["cleared"] == 2  # and the cache with it
        current.capture("cycle", lambda: None)
        # Only graphs of its own left: no collection (a fresh run pays nothing).
        assert not collect_dead_graphs(keep=(current,))
        assert fake_capture["cleared"] == 3  # the capture's own
    finally:
        gc.enable()


def test_a_collection_that_destroys_nothing_keeps_the_cache(fake_capture):
    alive = GraphSet()  # another owner, still referenced: the collection cannot free it
    alive.capture("act", lambda: None)
    gc.disable()
    try:
        assert collect_dead_graphs(keep=())
        assert alive.holds_graphs and fake_capture["cleared"] == 1  # the capture's only
    finally:
        gc.enable()


def test_released_owners_do_not_cost_a_collection(fake_capture):
    done = GraphSet()
    done.capture("cycle", lambda: None)
    done.release(torch.device("cpu"))
    assert not collect_dead_graphs()


def test_every_capture_starts_from_an_empty_workspace_cache(fake_capture, monkeypatch):
    """A graph's GEMMs must take their cuBLAS workspace inside the graph's own pool (allocated
    during the capture), never one cached before it: torch's cache is dropped before the graph
    is made, on every capture, the first and the later ones alike."""
    seen: list[int] = []

    class Recording(_Graph):
        def __init__(self) -> None:
            seen.append(fake_capture["cleared"])

    monkeypatch.setattr(torch.cuda, "CUDAGraph", Recording)
    s = GraphSet()
    s.capture("act", lambda: None)
    s.capture("store", lambda: None)
    s.capture("act", lambda: None)  # a recapture too
    assert seen == [1, 2, 3]
