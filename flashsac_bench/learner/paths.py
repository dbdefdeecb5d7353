"""How a cycle runs: eager, torch.compile, or one captured CUDA graph per iteration.

Every path runs the learner's one cycle (`FlashSACLearner.cycle`: the same sampling, the same
`update.critic_update` / `update.actor_update`, in the same order). Paths differ only in how:

- eager: the update functions as they are; each result is written into the state (`update.write`).
- compile: each update step is ONE torch.compile'd graph (forward, backward, Adam, projection,
  Polyak). The compiled steps are pure and their results are written after them, outside the
  graph: a compiled graph that mutates its inputs makes Inductor skip its CUDA graphs, which
  the compile path uses on CUDA.
- cudagraph: the compiled steps write their tensor results themselves, inside the compiled
  graph (the outer capture needs no pure steps, and the copies fuse); Inductor's own CUDA graphs
  stay off, since graphs cannot nest. After two settling cycles one call of the whole cycle is
  captured as one CUDA graph, and every iteration replays it.

On every path the scalar vector is written outside compiled code (learner.state.SCALARS says
why). On CUDA the compiled paths also run the counter RNG's integer hash as compiled code and
let Inductor combine independent kernels (the cycle is launch-bound); both are exact. Warm-ups
run untimed cycles and restore the state, so a path's first timed cycle computes what the eager
path's first cycle does.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from flashsac_bench.config.path import PathConfig
from flashsac_bench.learner.graphs import GraphSet, collect_dead_graphs
from flashsac_bench.learner.state import LearnerState
from flashsac_bench.learner.update import (
    UpdateStatics,
    actor_update,
    critic_update,
    write,
)

log = logging.getLogger(__name__)

CriticStep = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], None]
ActorStep = Callable[[torch.Tensor, torch.Tensor], None]


@dataclass(frozen=True)
class Steps:
    """What a cycle calls: one critic update, one actor + temperature update, each written into
    the state when the call returns."""

    critic: CriticStep  # (rows [B, width], eps_next [B, A], reward divisor, update_target)
    actor: ActorStep  # (rows [B, width], eps [B, A])


def eager_steps(st: UpdateStatics, s: LearnerState) -> Steps:
    def critic(rows, eps_next, divisor, update_target: bool) -> None:
        write(s, critic_update(st, s, rows, eps_next, divisor, update_target))

    def actor(rows, eps) -> None:
        write(s, actor_update(st, s, rows, eps))

    return Steps(critic, actor)


def compiled_steps(
    st: UpdateStatics,
    s: LearnerState,
    *,
    write_inside: bool,
    graphs: bool,
    options: dict[str, Any],
) -> Steps:
    """The two steps as compiled graphs: pure (results written after the graph) or, with
    `write_inside`, writing their tensor results inside it (the scalars always after);
    `graphs`: Inductor's own CUDA graph trees."""

    def critic_inside(rows, eps_next, divisor, update_target: bool) -> torch.Tensor:
        return _write_tensors(s, critic_update(st, s, rows, eps_next, divisor, update_target))

    def actor_inside(rows, eps) -> torch.Tensor:
        return _write_tensors(s, actor_update(st, s, rows, eps))

    def pure_critic(rows, eps_next, divisor, update_target: bool):
        return critic_update(st, s, rows, eps_next, divisor, update_target)

    def pure_actor(rows, eps):
        return actor_update(st, s, rows, eps)

    critic_c = compile_step(critic_inside if write_inside else pure_critic, graphs, options)
    actor_c = compile_step(actor_inside if write_inside else pure_actor, graphs, options)
    if write_inside:

        def critic(rows, eps_next, divisor, update_target: bool) -> None:
            torch._foreach_copy_([s.scalars], [critic_c(rows, eps_next, divisor, update_target)])

        def actor(rows, eps) -> None:
            torch._foreach_copy_([s.scalars], [actor_c(rows, eps)])

    else:

        def critic(rows, eps_next, divisor, update_target: bool) -> None:
            write(s, critic_c(rows, eps_next, divisor, update_target))

        def actor(rows, eps) -> None:
            write(s, actor_c(rows, eps))

    return Steps(critic, actor)


def _write_tensors(s: LearnerState, result) -> torch.Tensor:
    """Inside a compiled step: write every tensor result, hand the scalar vector back."""
    for dst, value in zip(result.destinations(s), result.values(), strict=True):
        dst.copy_(value)
    return result.scalars


def compile_step(fn: Callable[..., Any], inductor_cudagraphs: bool, options: dict[str, Any]):
    """torch.compile one whole update step; `fullgraph`: a graph break would silently split the
    update into eager pieces."""
    options = {**options, "triton.cudagraphs": inductor_cudagraphs}
    return torch.compile(fn, fullgraph=True, dynamic=False, options=options)


class EagerPath:
    """Runs the cycle as it is."""

    name = "eager"

    def __init__(self, cycle: Callable[[], None], state: LearnerState, device) -> None:
        self.cycle, self.state, self.device = cycle, state, torch.device(device)
        self.cold_start_s = 0.0
        self._warm = False

    def warmup(self) -> None:
        """One untimed cycle, then the state restored: first-call costs (compilation, library
        handles, allocator growth) land in the cold start, not in the first timed cycles."""
        if self._warm:
            return
        start = time.perf_counter()
        self._untimed(self.cycle)
        self._warm = True
        self.cold_start_s = time.perf_counter() - start

    def run(self) -> None:
        self.cycle()

    def graph_sets(self) -> tuple[GraphSet, ...]:
        """This path's own CUDA graphs (the cudagraph path has one set)."""
        return ()

    def release_graphs(self) -> None:
        """Destroy this path's own CUDA graphs."""

    def _untimed(self, cycles: Callable[[], None]) -> dict[str, torch.Tensor]:
        """Run `cycles` for their side effects only, wait for the device, and put the state
        back; returns that state (a snapshot)."""
        snap = self.state.snapshot()
        cycles()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.state.restore(snap)
        return snap


class CompilePath(EagerPath):
    """Runs the cycle with compiled steps (the learner built them with `compiled_steps`); the
    first run compiles them in an untimed warm-up cycle."""

    name = "compile"

    def __init__(self, cycle, state, device, graph_trees: bool) -> None:
        super().__init__(cycle, state, device)
        self.graph_trees = graph_trees  # the steps run as Inductor's CUDA graph trees

    def run(self) -> None:
        if not self._warm:
            self.warmup()
        self.cycle()


class CapturedPath(EagerPath):
    """The whole cycle captured once as ONE CUDA graph; each iteration is one replay."""

    name = "cudagraph"

    def __init__(self, cycle, state, device, fallback: bool) -> None:
        super().__init__(cycle, state, device)
        if self.device.type != "cuda":
            raise RuntimeError("path=cudagraph needs a CUDA device")
        self.allow_fallback = fallback
        self.graphs = GraphSet()  # the cycle's graph; destroyed only by release_graphs()
        self.fallback = False  # the capture failed: the compiled steps run uncaptured
        self.captures = 0

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

        def settle() -> None:
            """Compile, autotune and let the caching allocator settle before the capture."""
            side = torch.cuda.Stream(device)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):
                for _ in range(2):
                    self.cycle()
            torch.cuda.current_stream(device).wait_stream(side)

        snap = self._untimed(settle)
        collect_dead_graphs(keep=(self.graphs,))
        try:
            self.graphs.capture("cycle", self.cycle)
        except Exception as err:  # noqa: BLE001 - any capture failure falls back, loudly
            if not self.allow_fallback:
                raise
            warnings.warn(
                f"CUDA graph capture of the update cycle failed ({type(err).__name__}: {err}); "
                "running the compiled steps without it.",
                RuntimeWarning,
                stacklevel=2,
            )
            self.fallback = True
            torch.cuda.synchronize(device)
            self.state.restore(snap)
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
            self.cycle()
        else:
            self.graph.replay()


def build(
    cfg: PathConfig, st: UpdateStatics, s: LearnerState, device, cycle: Callable[[], None]
) -> tuple[Steps, EagerPath]:
    """The steps a cycle calls on path `cfg.name`, and the path that runs the cycle."""
    device = torch.device(device)
    cuda = device.type == "cuda"
    if cfg.name == "eager":
        return eager_steps(st, s), EagerPath(cycle, s, device)
    if cfg.name not in ("compile", "cudagraph"):
        raise ValueError(f"unknown path {cfg.name!r}")
    if cuda:
        s.rng.compile_hash()
    graph_trees = cfg.name == "compile" and cuda
    if graph_trees:
        mark_static_inputs(st, s)
    options = {"combo_kernels": cuda, **cfg.inductor_options}
    steps = compiled_steps(
        st,
        s,
        write_inside=cfg.name == "cudagraph",
        graphs=graph_trees,
        options=options,
    )
    if cfg.name == "compile":
        return steps, CompilePath(cycle, s, device, graph_trees)
    return steps, CapturedPath(cycle, s, device, fallback=True)


def mark_static_inputs(st: UpdateStatics, s: LearnerState) -> None:
    """Tell Dynamo that every state / statics tensor keeps its address across calls: Inductor's
    CUDA graph trees then read them in place instead of copying each into the graph's own
    input buffers on every replay (the state never moves: learner.state)."""
    tensors = list(s.tensors().values()) + [s.scalars, st.support]
    for projector in (st.actor_projector, st.critic_projector):
        tensors += projector.tensors()
    for t in tensors:
        torch._dynamo.mark_static_address(t, guard=False)
