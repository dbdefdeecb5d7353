"""Lifetimes of the CUDA graphs this project captures (the learner's cycle, the act / store steps).

Why this exists: in torch 2.11, destroying a CUDAGraph clears the cuBLAS workspaces cached for
the stream it was captured on (pytorch/pytorch#193402), and `torch.cuda.graph` captures every
graph on one shared stream. A graph destroyed while another graph captured on that stream is
still replayed takes the other's workspace with it. The next replay then makes an illegal
memory access, or, if the memory was reused first, computes with clobbered scratch. On the H200
this happened when one test's learners were garbage-collected after the next test's learner had
captured (docs/benchmarks.md, "Machine start H"). So a graph is destroyed only when nothing
captured after it will replay again:

- `GraphSet.capture` keeps a graph whose capture failed (retired), instead of letting it die while
  graphs captured before it are in use;
- an owner `release`s its graphs when it is done (the runner does at the run's end, also on
  failure);
- `collect_dead_graphs` runs the garbage collector before a capture if some other owner still
  holds graphs: a dropped learner in a reference cycle is then destroyed now, before the new
  capture, not at some later collection. In a fresh process nothing else holds graphs, so a
  run pays nothing for this.

Not covered: an owner that is still alive when another one captures, and is destroyed while
that other one still replays. Nothing in the runner does this, since a run's graphs live until
its end. Benchmarks that keep several learners at once drop them together. Giving each graph a
capture stream of its own would cover it too, but that is not built: it could not be checked
without a GPU.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterable

import torch

_OWNERS: weakref.WeakSet[GraphSet] = weakref.WeakSet()


class GraphSet:
    """The CUDA graphs of one owner, by name, and the ones retired until it releases them."""

    def __init__(self) -> None:
        self.live: dict[str, torch.cuda.CUDAGraph] = {}
        self._retired: list[torch.cuda.CUDAGraph] = []
        _OWNERS.add(self)

    def __bool__(self) -> bool:
        return bool(self.live)

    def get(self, name: str) -> torch.cuda.CUDAGraph | None:
        return self.live.get(name)

    @property
    def holds_graphs(self) -> bool:
        """Whether destroying this set would destroy a graph (live or retired)."""
        return bool(self.live or self._retired)

    def capture(self, name: str, fn: Callable[[], None]) -> torch.cuda.CUDAGraph:
        """Capture fn() as the graph `name`. A capture that raises leaves its graph retired."""
        graph = torch.cuda.CUDAGraph()
        self._retired.append(graph)  # until the capture has succeeded
        clear_cublas_workspaces()  # this capture's GEMMs get a workspace of their own
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            fn()
        self._retired.pop()
        if name in self.live:
            self._retired.append(self.live[name])
        self.live[name] = graph
        return graph

    def retire_all(self) -> None:
        """Stop replaying every live graph, keeping them alive until release()."""
        self._retired.extend(self.live.values())
        self.live.clear()

    def release(self, device: torch.device) -> None:
        """Destroy every graph of this set (after the device is done with them)."""
        if not self.holds_graphs:
            return
        torch.cuda.synchronize(device)
        self.live.clear()
        self._retired.clear()
        clear_cublas_workspaces()  # no cached workspace may point into the freed graphs' pools


def clear_cublas_workspaces() -> None:
    """Drop torch's cached cuBLAS workspaces (the next GEMM allocates a new one).

    A workspace first used inside a capture lives in that graph's private memory pool, and
    torch keeps it cached per (handle, stream) for later GEMMs, captures included. Once that
    graph is destroyed, a later graph or GEMM that got the cached workspace writes into freed
    memory: the "illegal memory access" of the GPU tests' order fault (docs/benchmarks.md;
    with CUBLAS_WORKSPACE_CONFIG=:0:0, no workspace, the same order passed on the H200).
    Clearing before every capture and after every release gives each graph its own."""
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None and torch.cuda.is_available():
        clear()


def collect_dead_graphs(keep: Iterable[GraphSet] = ()) -> bool:
    """Run the garbage collector if any owner other than `keep` still holds graphs (it may be
    unreachable and waiting for a collection). Returns whether it ran."""
    kept = {id(s) for s in keep}
    if not any(s.holds_graphs for s in list(_OWNERS) if id(s) not in kept):
        return False
    gc.collect()
    return True
