"""The update kernels are pure: nothing inside a (compiled) step writes the learner's state.

Why it matters: Inductor skips its CUDA graphs for a compiled graph that mutates its inputs
("skipping cudagraphs due to mutated inputs"), which kept the compile path host-bound. The
results are written by `updates.commit` after the step. Two detectors, each shown to fire on
the pre-issue-13 kernels (`executors._writing_kernels`, path.functional_steps=false):
  1. every aten op the eager kernel runs, checked for writes into a state tensor's storage;
  2. the graph AOTAutograd hands to the compiler: which of its inputs it mutates.
And the pure kernels + commit compute exactly what the writing kernels did.
"""

from __future__ import annotations

import pytest
import torch
from helpers import BATCH, DIMS, state_diff, tiny_learner
from torch._dynamo.backends.common import aot_autograd
from torch._guards import TracingContext
from torch.utils._python_dispatch import TorchDispatchMode

from flashsac_bench.bench.synthetic import Setup, build_learner
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.path import (
    COMPILE_INDUCTOR_CUDAGRAPHS_ON_CUDA,
    COMPILE_RNG_ON_CUDA,
    PathConfig,
)
from flashsac_bench.learner.executors import _writing_kernels


class WriteRecorder(TorchDispatchMode):
    """Records every aten op that writes (in place or out=) into one of `storages`."""

    def __init__(self, storages: dict[int, str]) -> None:
        super().__init__()
        self.storages = storages
        self.writes: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for i, arg in enumerate(func._schema.arguments):
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            value = kwargs.get(arg.name, args[i] if i < len(args) else None)
            for t in value if isinstance(value, list | tuple) else [value]:
                if isinstance(t, torch.Tensor):
                    name = self.storages.get(t.untyped_storage().data_ptr())
                    if name is not None:
                        self.writes.append(f"{func}->{name}")
        return func(*args, **kwargs)


def _inputs(learner):
    rows = learner.ring.storage[:BATCH].clone()
    eps = torch.randn(BATCH, DIMS.action, generator=torch.Generator().manual_seed(0))
    return rows, eps, torch.tensor(1.0)


def _state_storages(learner) -> dict[int, str]:
    return {t.untyped_storage().data_ptr(): k for k, t in learner.state.tensors().items()}


def _kernel_writes(learner, critic, actor) -> list[str]:
    rows, eps, divisor = _inputs(learner)
    before = learner.state.snapshot()
    recorder = WriteRecorder(_state_storages(learner))
    with recorder:
        critic(rows, eps, divisor, True)
        actor(rows, eps)
    learner.state.restore(before)
    return recorder.writes


def test_update_kernels_write_no_state_and_the_detector_sees_the_old_kernels_write():
    learner = tiny_learner()
    assert _kernel_writes(learner, learner.critic_kernel, learner.actor_kernel) == []
    before = learner.state.snapshot()
    learner.critic_kernel(*_inputs(learner), True)
    learner.actor_kernel(*_inputs(learner)[:2])
    after = learner.state.tensors()
    assert all(torch.equal(before[k], after[k]) for k in before)
    # Control: the writing (pre-issue-13) kernels write params, moments, buffers, target.
    writes = _kernel_writes(learner, *_writing_kernels(learner.executor.parts))
    written = {w.split("->")[1] for w in writes}
    assert {"critic.params", "critic.adam.exp_avg", "target.params", "actor.params"} <= written


def _mutated_graph_inputs(fn, *args) -> list[list[int]]:
    found: list[list[int]] = []

    def fw_compiler(gm, example_inputs):
        meta = TracingContext.try_get().fw_metadata
        info = meta.input_info
        found.append([i for i, x in enumerate(info) if x.mutates_data or x.mutates_metadata])
        return gm

    torch._dynamo.reset()
    try:
        torch.compile(fn, backend=aot_autograd(fw_compiler=fw_compiler), fullgraph=True)(*args)
    finally:
        torch._dynamo.reset()
    return found


def test_compiled_step_graphs_mutate_none_of_their_inputs():
    learner = tiny_learner()
    rows, eps, divisor = _inputs(learner)
    critic = _mutated_graph_inputs(learner.critic_kernel, rows, eps, divisor, True)
    actor = _mutated_graph_inputs(learner.actor_kernel, rows, eps)
    assert critic == [[]] and actor == [[]]
    # Control: the old kernels' graphs mutate their state inputs (what made Inductor skip).
    old_critic, old_actor = _writing_kernels(learner.executor.parts)
    assert _mutated_graph_inputs(old_critic, rows, eps, divisor, True)[0] != []
    assert _mutated_graph_inputs(old_actor, rows, eps)[0] != []


@pytest.mark.parametrize("path", ["eager", "compile"])
def test_pure_kernels_plus_commit_equal_the_writing_kernels_bit_for_bit(path):
    ours = tiny_learner(path)
    options = {"functional_steps": False} if path == "compile" else {}
    old = tiny_learner(path, path_options=options)
    if path == "eager":  # eager has no executor switch: drive the old kernels by hand
        critic, actor = _writing_kernels(old.executor.parts)

        def critic_step(rows, eps, divisor, update_target):
            old.critic_commit(critic(rows, eps, divisor, update_target), update_target, True)

        def actor_step(rows, eps):
            old.actor_commit(actor(rows, eps), True)

        old.executor.steps = lambda: (critic_step, actor_step)
    for _ in range(3):
        ours.update()
        old.update()
    assert max(state_diff(ours, old).values()) == 0.0
    torch._dynamo.reset()


def test_inductor_cudagraphs_resolution():
    assert PathConfig(name="compile").resolved_inductor_cudagraphs("cpu") is False
    assert (
        PathConfig(name="compile").resolved_inductor_cudagraphs("cuda")
        is COMPILE_INDUCTOR_CUDAGRAPHS_ON_CUDA
    )
    on = PathConfig(name="compile", inductor_cudagraphs=True)
    assert on.resolved_inductor_cudagraphs("cuda") and not on.resolved_inductor_cudagraphs("cpu")
    # The cudagraph path captures the cycle itself: never nested Inductor graphs.
    assert not PathConfig(name="cudagraph").resolved_inductor_cudagraphs("cuda")
    with pytest.raises(ConfigError):
        PathConfig(name="nope")


def test_eager_steps_on_the_cudagraph_path_keep_dynamo_out():
    # path.compiled_steps=false: the captured cycle runs the eager steps, so nothing may pull
    # in a compiled piece unless asked: the RNG's hash stays eager like the eager path's.
    eager_steps = PathConfig(name="cudagraph", compiled_steps=False)
    assert not eager_steps.resolved_compile_rng("cuda")
    assert PathConfig(name="cudagraph").resolved_compile_rng("cuda") is COMPILE_RNG_ON_CUDA
    asked = PathConfig(name="cudagraph", compiled_steps=False, compile_rng=True)
    assert asked.resolved_compile_rng("cuda")
    assert not PathConfig(name="eager").resolved_compile_rng("cuda")
    with pytest.raises(ConfigError, match="path=compile always compiles its steps"):
        PathConfig(name="compile", compiled_steps=False)


@pytest.mark.parametrize(
    ("path", "compile_rng", "compiled"),
    [("eager", True, False), ("compile", True, True), ("compile", None, False)],
)
def test_the_executor_compiles_the_rng_hash_where_the_path_resolves_it(path, compile_rng, compiled):
    # (the cudagraph path's eager steps, CUDA only: tests/learner/test_gpu_paths.py)
    options = () if compile_rng is None else (("compile_rng", compile_rng),)
    setup = Setup(batch_size=8, updates_per_step=2, num_envs=4, tiny=True, path_options=options)
    assert build_learner(setup, path).state.rng.compiled is compiled
