"""How a cycle runs: eager, torch.compile, or one captured CUDA graph per iteration.

The learner holds ONE path object. Every path runs the same `cycle.Cycle` (the same draws, the
same `update.critic_update` / `update.actor_update`, in the same order) through `Path.run`;
the path decides only how each update executes (`Path.critic`, `Path.actor`) and how the cycle
is replayed:

- eager: the update functions as they are; each result is written into the state (`update.write`).
- compile: each update is ONE torch.compile'd graph (forward, backward, Adam, projection,
  Polyak). The compiled updates are pure and their results are written after them, outside the
  graph: a compiled graph that mutates its inputs makes Inductor skip its CUDA graphs, which
  the compile path uses on CUDA.
- cudagraph: the compiled updates write their tensor results themselves, inside the compiled
  graph (the outer capture needs no pure updates, and the copies fuse); Inductor's own CUDA
  graphs stay off, since graphs cannot nest. After two settling cycles one call of the whole
  cycle is captured as one CUDA graph, and every iteration replays it.

On every path the scalar vector is written outside compiled code (learner.state.SCALARS says
why). On CUDA the compiled paths also run the counter RNG's integer hash as compiled code and
let Inductor combine independent kernels (the cycle is launch-bound); both are exact. On the CPU
every compiled function is saved once traced and compiled, and later processes load it instead
of tracing it again (learner.compile_store: the same code, the same bits); so on CUDA are the
cudagraph path's updates and the hash, while the compile path's updates, which replay as
Inductor's CUDA graph trees, are plain torch.compile (compile_store.CUDA_PLAIN says why). Warm-ups
run untimed cycles and restore the state, so a path's first timed cycle computes what the eager
path's first cycle does.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch

from flashsac_bench.config.path import PathConfig
from flashsac_bench.learner.compile_store import StoredCompile
from flashsac_bench.learner.cycle import Cycle
from flashsac_bench.learner.graphs import GraphSet, collect_dead_graphs
from flashsac_bench.learner.update import (
    actor_update,
    critic_update,
    write,
    write_tensors,
)

log = logging.getLogger(__name__)


class Path:
    """The eager path: runs the cycle as it is, each update's result written after it."""

    name = "eager"

    def __init__(self, cycle: Cycle, device: torch.device | str) -> None:
        self.cycle, self.device = cycle, torch.device(device)
        self.cold_start_s = 0.0
        self._warm = False
        # The compiled functions this path runs, their saved code (learner.compile_store).
        self.compiled: tuple[StoredCompile, ...] = ()

    def critic(self, rows, eps_next, divisor, update_target: bool) -> None:
        """One critic update on rows [B, width] with next-action noise [B, A]."""
        st, s = self.cycle.statics, self.cycle.state
        write(s, critic_update(st, s, rows, eps_next, divisor, update_target))

    def actor(self, rows, eps) -> None:
        """One actor + temperature update on rows [B, width] with noise [B, A]."""
        st, s = self.cycle.statics, self.cycle.state
        write(s, actor_update(st, s, rows, eps))

    def run(self) -> None:
        """One iteration's cycle."""
        self.cycle.run(self)

    def warmup(self) -> None:
        """One untimed cycle, then the state restored: first-call costs (compilation, library
        handles, allocator growth) land in the cold start, not in the first timed cycles."""
        if self._warm:
            return
        start = time.perf_counter()
        self._untimed(lambda: self.cycle.run(self))
        self._warm = True
        self.cold_start_s = time.perf_counter() - start

    def graph_sets(self) -> tuple[GraphSet, ...]:
        """This path's own CUDA graphs (the cudagraph path has one set)."""
        return ()

    def release_graphs(self) -> None:
        """Destroy this path's own CUDA graphs."""

    def _untimed(self, cycles: Callable[[], None]) -> dict[str, torch.Tensor]:
        """Run `cycles` for their side effects only, wait for the device, and put the state
        back; returns that state (a snapshot)."""
        state = self.cycle.state
        snap = state.snapshot()
        cycles()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        state.restore(snap)
        return snap


class CompilePath(Path):
    """Each update as one compiled graph, pure (its results written after it); on CUDA the
    graphs replay as Inductor's own CUDA graph trees. The first run compiles them in an
    untimed warm-up cycle."""

    name = "compile"

    def __init__(self, cycle: Cycle, device, options: dict[str, Any]) -> None:
        super().__init__(cycle, device)
        self.graph_trees = self.device.type == "cuda"
        if self.graph_trees:
            mark_static_inputs(cycle)
        st, s = cycle.statics, cycle.state

        def critic(rows, eps_next, divisor, update_target: bool):
            return critic_update(st, s, rows, eps_next, divisor, update_target)

        def actor(rows, eps):
            return actor_update(st, s, rows, eps)

        self._critic = compile_update(critic, self.graph_trees, options)
        self._actor = compile_update(actor, self.graph_trees, options)
        self.compiled = (self._critic, self._actor)

    def critic(self, rows, eps_next, divisor, update_target: bool) -> None:
        write(self.cycle.state, self._critic(rows, eps_next, divisor, update_target))

    def actor(self, rows, eps) -> None:
        write(self.cycle.state, self._actor(rows, eps))

    def run(self) -> None:
        if not self._warm:
            self.warmup()
        self.cycle.run(self)


class CapturedPath(Path):
    """Each update as one compiled graph that writes its tensor results itself; the whole cycle
    captured once as ONE CUDA graph, each iteration one replay."""

    name = "cudagraph"

    def __init__(self, cycle: Cycle, device, options: dict[str, Any]) -> None:
        super().__init__(cycle, device)
        st, s = cycle.statics, cycle.state

        def critic(rows, eps_next, divisor, update_target: bool) -> torch.Tensor:
            result = critic_update(st, s, rows, eps_next, divisor, update_target)
            return write_tensors(s, result)

        def actor(rows, eps) -> torch.Tensor:
            return write_tensors(s, actor_update(st, s, rows, eps))

        self._critic = compile_update(critic, False, options)
        self._actor = compile_update(actor, False, options)
        self.compiled = (self._critic, self._actor)
        self.graphs = GraphSet()  # the cycle's graph; destroyed only by release_graphs()
        self.fallback = False  # the capture failed: the compiled updates run uncaptured
        self.captures = 0

    def critic(self, rows, eps_next, divisor, update_target: bool) -> None:
        scalars = self._critic(rows, eps_next, divisor, update_target)
        torch._foreach_copy_([self.cycle.state.scalars], [scalars])

    def actor(self, rows, eps) -> None:
        torch._foreach_copy_([self.cycle.state.scalars], [self._actor(rows, eps)])

    @property
    def graph(self) -> torch.cuda.CUDAGraph | None:
        return self.graphs.get("cycle")

    def graph_sets(self) -> tuple[GraphSet, ...]:
        return (self.graphs,)

    def release_graphs(self) -> None:
        """Destroy the captured cycle (learner/graphs.py); a later run() captures it anew."""
        self.graphs.release(self.device)

    def warmup(self) -> None:
        if self.graph is not None or self.fallback:
            return
        start = time.perf_counter()
        device = self.device

        def replay() -> None:
            """The cycle with the compiled updates, uncaptured."""
            self.cycle.run(self)

        def settle() -> None:
            """Compile, autotune and let the caching allocator settle before the capture."""
            side = torch.cuda.Stream(device)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):
                for _ in range(2):
                    replay()
            torch.cuda.current_stream(device).wait_stream(side)

        snap = self._untimed(settle)
        collect_dead_graphs(keep=(self.graphs,))
        try:
            self.graphs.capture("cycle", replay)
        except Exception as err:  # noqa: BLE001 - any capture failure falls back, loudly
            warnings.warn(
                f"CUDA graph capture of the update cycle failed ({type(err).__name__}: {err}); "
                "running the compiled updates without it.",
                RuntimeWarning,
                stacklevel=2,
            )
            self.fallback = True
            torch.cuda.synchronize(device)
            self.cycle.state.restore(snap)
        else:
            # Capture records kernels without running them: the state is still `snap`.
            self.captures += 1
            log.info("captured the update cycle as one CUDA graph (capture #%d)", self.captures)
        self._warm = True
        self.cold_start_s = time.perf_counter() - start

    def run(self) -> None:
        if self.graph is None and not self.fallback:
            self.warmup()
        if self.graph is None:
            self.cycle.run(self)
        else:
            self.graph.replay()


def compile_update(
    fn: Callable[..., Any], inductor_cudagraphs: bool, options: dict[str, Any]
) -> StoredCompile:
    """torch.compile one whole update (`fullgraph`: a graph break would silently split the
    update into eager pieces), its compiled code saved for later processes."""
    options = {**options, "triton.cudagraphs": inductor_cudagraphs}
    return StoredCompile(fn, dynamic=False, options=options)


def build(cfg: PathConfig, cycle: Cycle, device) -> Path:
    """The path `cfg.name` that runs `cycle`."""
    device = torch.device(device)
    cuda = device.type == "cuda"
    if cfg.name == "eager":
        return Path(cycle, device)
    if cfg.name not in ("compile", "cudagraph"):
        raise ValueError(f"unknown path {cfg.name!r}")
    if cfg.name == "cudagraph" and not cuda:
        raise RuntimeError("path=cudagraph needs a CUDA device")
    options = {"combo_kernels": cuda, **cfg.inductor_options}
    cls = CompilePath if cfg.name == "compile" else CapturedPath
    path = cls(cycle, device, options)
    if cuda:
        path.compiled += (cycle.state.rng.compile_hash(),)
    return path


def mark_static_inputs(cycle: Cycle) -> None:
    """Tell Dynamo that every state / statics tensor keeps its address across calls: Inductor's
    CUDA graph trees then read them in place instead of copying each into the graph's own
    input buffers on every replay (the state never moves: learner.state)."""
    st, s = cycle.statics, cycle.state
    tensors = list(s.tensors().values()) + [s.scalars, st.support]
    for projector in (st.actor_projector, st.critic_projector):
        tensors += projector.tensors()
    for t in tensors:
        torch._dynamo.mark_static_address(t, guard=False)
