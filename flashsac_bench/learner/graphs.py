"""Lifetimes of the CUDA graphs this project captures (the learner's cycle, the act / store steps).

Why this exists: torch keeps one cuBLAS workspace per (cuBLAS handle, stream) and a capture
embeds the workspace's address in its graph. A workspace first allocated during a capture lives
in that graph's private memory pool; one cached before the capture (by eager work, or by an
earlier capture on the same stream: `torch.cuda.graph` captures on one shared stream) lives
elsewhere: in the general pool, or in another graph's pool. Whoever drops torch's cache
(Inductor's CUDA graph trees do before and after each recording; destroying a graph drops its
stream's, pytorch/pytorch#193402) then frees memory the graph still uses, and the next empty
cache (every capture starts with one) returns it to the driver: the graph's next replay faults
("an illegal memory access") or computes garbage. The rules:

- every capture starts from an empty cache (`GraphSet.capture` drops it first), so the graph's
  GEMMs take a workspace inside its own pool, which lives exactly as long as the graph, whoever
  drops the cache later;
- a graph is destroyed only when nothing captured after it will replay again: `GraphSet.capture`
  keeps a graph whose capture failed, or that a new capture replaced, until release;
- an owner `release`s its graphs when it is done (the runner does at the run's end, also on
  failure), and the release then drops torch's cached workspaces;
- `collect_dead_graphs` runs the garbage collector before a capture if some other owner still
  holds graphs (a dropped learner in a reference cycle dies now, not at a later collection,
  while another owner's graphs replay), and drops the cached workspaces if that destroyed any.
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
        clear_cublas_workspaces()  # the capture's workspace in its own pool (module docstring)
        graph = torch.cuda.CUDAGraph()
        self._retired.append(graph)  # until the capture has succeeded
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
        clear_cublas_workspaces()  # no cached workspace may point into the freed pools


def clear_cublas_workspaces() -> None:
    """Drop torch's cached cuBLAS workspaces; the next GEMM on each stream allocates a new one
    (torch's own test suite does this between tests). No-op without CUDA."""
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None and torch.cuda.is_available():
        clear()


def collect_dead_graphs(keep: Iterable[GraphSet] = ()) -> bool:
    """Run the garbage collector if any owner other than `keep` still holds graphs (it may be
    unreachable and waiting for a collection). Returns whether it ran."""
    kept = {id(s) for s in keep}

    def holders() -> int:
        return sum(s.holds_graphs for s in list(_OWNERS) if id(s) not in kept)

    before = holders()
    if not before:
        return False
    gc.collect()
    if holders() < before:
        clear_cublas_workspaces()  # graphs died: their pools may hold a cached workspace
    return True
