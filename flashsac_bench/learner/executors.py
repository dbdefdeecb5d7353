"""How a cycle is executed: eager, torch.compile, or one captured CUDA graph per iteration.

Every executor runs `FlashSACLearner.cycle` -- the same sampling, the same critic_update /
actor_update functions, in the same order. They differ only in whether the two step functions
are compiled and whether one call of the whole cycle is captured and replayed.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from flashsac_bench.learner.updates import actor_targets, critic_targets

if TYPE_CHECKING:
    from flashsac_bench.learner.learner import FlashSACLearner

log = logging.getLogger(__name__)

_MODE_OPTIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "reduce-overhead": {"triton.cudagraphs": True},
    "max-autotune": {"max_autotune": True, "triton.cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True},
}


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

    def __init__(self, learner: FlashSACLearner) -> None:
        self.learner = learner
        self.cold_start_s = 0.0

    def steps(self) -> tuple[Callable[..., None], Callable[..., None]]:
        return self.learner.critic_step, self.learner.actor_step

    def warmup(self) -> None:
        """One untimed cycle, then the state restored: first-call costs (library handles,
        allocator growth, lazy init) land in the cold start, not in the first timed cycles."""
        start = time.perf_counter()
        snap = self.learner.state.snapshot()
        self.learner.cycle(*self.steps())
        _synchronize(self.learner.device)
        self.learner.state.restore(snap)
        self.cold_start_s = time.perf_counter() - start

    def run(self) -> None:
        self.learner.cycle(*self.steps())


class CompileExecutor(EagerExecutor):
    name = "compile"

    def __init__(self, learner: FlashSACLearner, inductor_cudagraphs: bool | None = None) -> None:
        super().__init__(learner)
        path = learner.path
        graphs = (
            path.resolved_inductor_cudagraphs(learner.device.type)
            if inductor_cudagraphs is None
            else inductor_cudagraphs
        )
        self.inductor_cudagraphs = graphs
        extra = {"combo_kernels": path.combo_kernels and learner.device.type == "cuda"}
        extra.update(path.inductor_options)
        functional = path.functional_steps
        critic_fn, actor_fn = (
            (learner.critic_kernel, learner.actor_kernel)
            if functional
            else _writing_kernels(learner)
        )
        critic = compile_step(critic_fn, path.compile_mode, graphs, extra)
        actor = compile_step(actor_fn, path.compile_mode, graphs, extra)
        if graphs:
            mark_static_inputs(learner)
        if path.compile_rng:
            learner.state.rng.compile_hash()
        written = not functional

        # The compiled kernels are pure; their results are written into the state here,
        # outside the compiled graph (updates.commit).
        def critic_step(rows, eps, divisor, update_target: bool) -> None:
            learner.critic_commit(critic(rows, eps, divisor, update_target), update_target, written)

        def actor_step(rows, eps) -> None:
            learner.actor_commit(actor(rows, eps), written)

        self._critic, self._actor = critic_step, actor_step
        self._warm = False

    def steps(self) -> tuple[Callable[..., None], Callable[..., None]]:
        return self._critic, self._actor

    def warmup(self) -> None:
        """Compile every step variant by running one cycle, then restore the state."""
        if self._warm:
            return
        start = time.perf_counter()
        state = self.learner.state
        snap = state.snapshot()
        self.learner.cycle(*self.steps())
        _synchronize(self.learner.device)
        state.restore(snap)
        self.cold_start_s = time.perf_counter() - start
        self._warm = True

    def run(self) -> None:
        if not self._warm:
            self.warmup()
        super().run()


class CudaGraphExecutor(CompileExecutor):
    """The whole cycle captured once as ONE CUDA graph; each iteration is one replay."""

    name = "cudagraph"

    def __init__(self, learner: FlashSACLearner) -> None:
        if learner.device.type != "cuda":
            raise RuntimeError("path=cudagraph needs a CUDA device")
        # Inductor's own CUDA graphs cannot nest inside the outer capture.
        super().__init__(learner, inductor_cudagraphs=False)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.fallback = False
        self.captures = 0

    def warmup(self) -> None:
        if self.graph is not None or self.fallback:
            return
        start = time.perf_counter()
        learner = self.learner
        snap = learner.state.snapshot()
        side = torch.cuda.Stream(learner.device)
        side.wait_stream(torch.cuda.current_stream(learner.device))
        with torch.cuda.stream(side):
            # Compile, autotune and let the caching allocator settle before capture.
            for _ in range(2):
                learner.cycle(*self.steps())
        torch.cuda.current_stream(learner.device).wait_stream(side)
        torch.cuda.synchronize(learner.device)
        learner.state.restore(snap)
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                learner.cycle(*self.steps())
        except Exception as err:  # noqa: BLE001 - any capture failure falls back, loudly
            if not learner.path.fallback_to_compile:
                raise
            warnings.warn(
                f"CUDA graph capture of the update cycle failed ({type(err).__name__}: {err}); "
                "running the compile path instead.",
                RuntimeWarning,
                stacklevel=2,
            )
            self.fallback = True
            torch.cuda.synchronize(learner.device)
            learner.state.restore(snap)
        else:
            # Capture records kernels without running them: the state is still `snap`.
            self.graph = graph
            self.captures += 1
            log.info("captured the update cycle as one CUDA graph (capture #%d)", self.captures)
        self._warm = True
        self.cold_start_s = time.perf_counter() - start

    def run(self) -> None:
        if self.graph is None and not self.fallback:
            self.warmup()
        if self.graph is None:
            self.learner.cycle(*self.steps())
        else:
            self.graph.replay()


def _writing_kernels(learner: FlashSACLearner) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """path.functional_steps=false: kernels that write their tensor results into the state
    inside the compiled graph (the code before issue 13); the scalars still go out (SCALARS)."""
    st, s = learner.statics, learner.state

    def write(dsts: list[torch.Tensor], step):
        scalars, writes, fused = step
        for dst, new in zip(dsts, writes, strict=True):
            dst.copy_(new)
        return scalars, (), fused

    def critic(rows, eps, divisor, update_target: bool):
        step = learner.critic_kernel(rows, eps, divisor, update_target)
        return write(critic_targets(st, s, update_target), step)

    def actor(rows, eps):
        return write(actor_targets(st, s), learner.actor_kernel(rows, eps))

    return critic, actor


def mark_static_inputs(learner: FlashSACLearner) -> None:
    """Tell Dynamo that every state / statics tensor keeps its address across calls: Inductor's
    CUDA graph trees then read them in place instead of copying each into the graph's own
    input buffers on every replay (the state never moves: learner.state)."""
    st = learner.statics
    tensors = list(learner.state.tensors().values()) + [learner.state.scalars, st.support]
    for projector in (st.actor_projector, st.critic_projector):
        tensors += projector.tensors()
    for t in tensors:
        torch._dynamo.mark_static_address(t, guard=False)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_executor(learner: FlashSACLearner) -> EagerExecutor:
    name = learner.path.name
    if name == "eager":
        return EagerExecutor(learner)
    if name == "compile":
        return CompileExecutor(learner)
    if name == "cudagraph":
        return CudaGraphExecutor(learner)
    raise ValueError(f"unknown path {name!r}")
