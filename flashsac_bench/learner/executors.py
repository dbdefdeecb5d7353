"""How a cycle is executed: eager, torch.compile, or one captured CUDA graph per iteration.

Every executor runs the learner's cycle (`CycleParts.run_cycle`) -- the same sampling, the same
critic_update / actor_update functions, in the same order. They differ only in whether the two
step functions are compiled and whether one call of the whole cycle is captured and replayed.
The learner hands in what they run (`CycleParts`), so this module does not know the learner.
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
from flashsac_bench.learner.cycle import ActorStep, CriticStep
from flashsac_bench.learner.graphs import GraphSet, collect_dead_graphs
from flashsac_bench.learner.state import LearnerState
from flashsac_bench.learner.updates import Step, UpdateStatics, actor_targets, critic_targets

log = logging.getLogger(__name__)

_MODE_OPTIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "reduce-overhead": {"triton.cudagraphs": True},
    "max-autotune": {"max_autotune": True, "triton.cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True},
}


@dataclass(frozen=True)
class CycleParts:
    """What an executor runs, handed in by the learner (learner.FlashSACLearner).

    *_kernel: the pure update steps (the compile targets); *_commit(step, ..., written): writes
    a kernel's results into the state; *_step: kernel + commit, what an eager cycle calls.
    """

    run_cycle: Callable[[CriticStep, ActorStep], None]
    critic_step: CriticStep
    actor_step: ActorStep
    critic_kernel: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], Step]
    actor_kernel: Callable[[torch.Tensor, torch.Tensor], Step]
    critic_commit: Callable[[Step, bool, bool], None]
    actor_commit: Callable[[Step, bool], None]
    # the fused optimizer tail, in place: critic_tail(grad, hyper, update_target),
    # actor_tail(grad, hyper) (path.fused_optimizer)
    critic_tail: Callable[[torch.Tensor, torch.Tensor, bool], None]
    actor_tail: Callable[[torch.Tensor, torch.Tensor], None]
    statics: UpdateStatics
    state: LearnerState
    device: torch.device
    path: PathConfig


def compile_step(
    fn: Callable[..., Any],
    mode: str,
    inductor_cudagraphs: bool,
    extra_options: dict[str, Any] | None = None,
) -> Any:
    """torch.compile one whole update (forward, backward, Adam, projection, Polyak)."""
    options = dict(_MODE_OPTIONS[mode])
    options.update(extra_options or {})
    options["triton.cudagraphs"] = inductor_cudagraphs
    # fullgraph: a graph break would silently split the update into eager pieces.
    return torch.compile(fn, fullgraph=True, dynamic=False, options=options)


class EagerExecutor:
    name = "eager"

    def __init__(self, parts: CycleParts) -> None:
        self.parts = parts
        self.cold_start_s = 0.0
        # Here, not in CompileExecutor: the cudagraph path's eager steps honour an explicit
        # path.compile_rng too (the eager path always resolves it off).
        if parts.path.resolved_compile_rng(parts.device.type):
            parts.state.rng.compile_hash()

    def steps(self) -> tuple[CriticStep, ActorStep]:
        return self.parts.critic_step, self.parts.actor_step

    def warmup(self) -> None:
        """One untimed cycle, then the state restored: first-call costs (library handles,
        allocator growth, lazy init) land in the cold start, not in the first timed cycles."""
        start = time.perf_counter()
        self._untimed(self._cycle)
        self.cold_start_s = time.perf_counter() - start

    def run(self) -> None:
        self._cycle()

    def graph_sets(self) -> tuple[GraphSet, ...]:
        """This executor's own CUDA graphs (the cudagraph path has one set)."""
        return ()

    def release_graphs(self) -> None:
        """Destroy this executor's own CUDA graphs."""

    def _cycle(self) -> None:
        self.parts.run_cycle(*self.steps())

    def _untimed(self, cycles: Callable[[], None]) -> dict[str, torch.Tensor]:
        """Run `cycles` for their side effects only (compilation, autotuning, allocator growth),
        wait for the device, and put the state back; returns that state (a snapshot)."""
        state = self.parts.state
        snap = state.snapshot()
        cycles()
        _synchronize(self.parts.device)
        state.restore(snap)
        return snap


class CompileExecutor(EagerExecutor):
    name = "compile"

    def __init__(self, parts: CycleParts, inductor_cudagraphs: bool | None = None) -> None:
        super().__init__(parts)
        path, device = parts.path, parts.device
        graphs = (
            path.resolved_inductor_cudagraphs(device.type)
            if inductor_cudagraphs is None
            else inductor_cudagraphs
        )
        self.inductor_cudagraphs = graphs
        extra = {"combo_kernels": path.combo_kernels and device.type == "cuda"}
        extra.update(path.inductor_options)
        functional = path.resolved_functional_steps()
        critic_fn, actor_fn = (
            (parts.critic_kernel, parts.actor_kernel) if functional else _writing_kernels(parts)
        )
        critic = compile_step(critic_fn, path.compile_mode, graphs, extra)
        actor = compile_step(actor_fn, path.compile_mode, graphs, extra)
        self.kernels = (critic, actor)  # the compiled kernels, before their commits
        if graphs:
            mark_static_inputs(parts.statics, parts.state)
        written = not functional

        # The compiled kernels are pure; their results are written into the state here,
        # outside the compiled graph (updates.commit).
        def critic_step(rows, eps, divisor, update_target: bool) -> None:
            parts.critic_commit(critic(rows, eps, divisor, update_target), update_target, written)

        def actor_step(rows, eps) -> None:
            parts.actor_commit(actor(rows, eps), written)

        self._critic, self._actor = critic_step, actor_step
        self._warm = False

    def steps(self) -> tuple[CriticStep, ActorStep]:
        return self._critic, self._actor

    def warmup(self) -> None:
        """Compile every step variant by running one cycle, then restore the state."""
        if self._warm:
            return
        super().warmup()
        self._warm = True

    def run(self) -> None:
        if not self._warm:
            self.warmup()
        super().run()


class CudaGraphExecutor(CompileExecutor):
    """The whole cycle captured once as ONE CUDA graph; each iteration is one replay. Its
    steps are the compiled ones, or (path.compiled_steps=false) the eager ones: then nothing
    is compiled, and a failed capture runs the eager steps uncaptured."""

    name = "cudagraph"

    def __init__(self, parts: CycleParts) -> None:
        if parts.device.type != "cuda":
            raise RuntimeError("path=cudagraph needs a CUDA device")
        self.compiled_steps = parts.path.compiled_steps
        if self.compiled_steps:
            # Inductor's own CUDA graphs cannot nest inside the outer capture.
            super().__init__(parts, inductor_cudagraphs=False)
        else:
            EagerExecutor.__init__(self, parts)
            self.inductor_cudagraphs = False
            self._critic, self._actor = parts.critic_step, parts.actor_step
            self._warm = False
        self.graphs = GraphSet()  # the cycle's graph; destroyed only by release_graphs()
        self.fallback = False
        self.captures = 0

    @property
    def graph(self) -> torch.cuda.CUDAGraph | None:
        return self.graphs.get("cycle")

    def graph_sets(self) -> tuple[GraphSet, ...]:
        return (self.graphs,)

    def release_graphs(self) -> None:
        """Destroy the captured cycle (learner/graphs.py); a later run() captures it anew."""
        self.graphs.release(self.parts.device)

    def warmup(self) -> None:
        if self.graph is not None or self.fallback:
            return
        start = time.perf_counter()
        parts, device = self.parts, self.parts.device

        def settle() -> None:
            """Compile, autotune (compiled steps) and let the caching allocator settle before
            capture."""
            side = torch.cuda.Stream(device)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):
                for _ in range(2):
                    self._cycle()
            torch.cuda.current_stream(device).wait_stream(side)

        snap = self._untimed(settle)
        collect_dead_graphs(keep=(self.graphs,))
        try:
            self.graphs.capture("cycle", self._cycle)
        except Exception as err:  # noqa: BLE001 - any capture failure falls back, loudly
            if not parts.path.fallback_to_compile:
                raise
            instead = "the compile path" if self.compiled_steps else "the eager steps"
            warnings.warn(
                f"CUDA graph capture of the update cycle failed ({type(err).__name__}: {err}); "
                f"running {instead} instead.",
                RuntimeWarning,
                stacklevel=2,
            )
            self.fallback = True
            torch.cuda.synchronize(device)
            parts.state.restore(snap)
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
            self._cycle()
        else:
            self.graph.replay()


def _writing_kernels(parts: CycleParts) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """path.functional_steps=false: kernels that write their tensor results into the state
    inside the compiled graph (the older design, kept as a switch and as the tests' control);
    the scalars still go out (SCALARS). With path.fused_optimizer_in_graph they also apply the
    fused optimizer tail themselves, so it runs inside the compiled graph."""
    st, s = parts.statics, parts.state
    tail_inside = parts.path.fused_optimizer_in_graph

    def write(dsts: list[torch.Tensor], step, tail):
        scalars, writes, fused = step
        for dst, new in zip(dsts, writes, strict=True):
            dst.copy_(new)
        if fused and tail_inside:
            tail(*fused)
            fused = ()
        return scalars, (), fused

    def critic(rows, eps, divisor, update_target: bool):
        step = parts.critic_kernel(rows, eps, divisor, update_target)
        tail = lambda g, h: parts.critic_tail(g, h, update_target)  # noqa: E731
        return write(critic_targets(st, s, update_target), step, tail)

    def actor(rows, eps):
        return write(actor_targets(st, s), parts.actor_kernel(rows, eps), parts.actor_tail)

    return critic, actor


def mark_static_inputs(statics: UpdateStatics, state: LearnerState) -> None:
    """Tell Dynamo that every state / statics tensor keeps its address across calls: Inductor's
    CUDA graph trees then read them in place instead of copying each into the graph's own
    input buffers on every replay (the state never moves: learner.state)."""
    tensors = list(state.tensors().values()) + [state.scalars, statics.support]
    for projector in (statics.actor_projector, statics.critic_projector):
        tensors += projector.tensors()
    for t in tensors:
        torch._dynamo.mark_static_address(t, guard=False)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_executor(parts: CycleParts) -> EagerExecutor:
    name = parts.path.name
    if name == "eager":
        return EagerExecutor(parts)
    if name == "compile":
        return CompileExecutor(parts)
    if name == "cudagraph":
        return CudaGraphExecutor(parts)
    raise ValueError(f"unknown path {name!r}")
