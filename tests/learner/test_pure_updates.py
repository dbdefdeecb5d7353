"""The update functions are pure, and each path's way of writing their results computes the same.

Why it matters: Inductor skips its CUDA graphs for a compiled graph that mutates its inputs, so
the compile path's steps must be pure and write their results after the graph; the cudagraph
path's steps write inside the compiled graph instead (learner.paths). Two detectors, each shown
to fire on the writing steps:
  1. every aten op the update runs, checked for writes into a state tensor's storage;
  2. the graph AOTAutograd hands to the compiler: which of its inputs it mutates.
And both ways of writing give the same bits, eager and compiled.
"""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.backends.common import aot_autograd
from torch._guards import TracingContext
from torch.utils._python_dispatch import TorchDispatchMode

from flashsac_bench.learner import paths
from flashsac_bench.learner.update import actor_update, critic_update, write_tensors
from tests.learner.helpers import BATCH, DIMS, state_diff, tiny_learner


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


def _pure(learner):
    st, s = learner.statics, learner.state

    def critic(rows, eps, divisor, update_target):
        return critic_update(st, s, rows, eps, divisor, update_target)

    def actor(rows, eps):
        return actor_update(st, s, rows, eps)

    return critic, actor


def _writing(learner):
    """The cudagraph path's update bodies: write the tensor results, return the scalars."""
    critic, actor = _pure(learner)
    s = learner.state

    def write_critic(rows, eps, divisor, update_target):
        return write_tensors(s, critic(rows, eps, divisor, update_target))

    def write_actor(rows, eps):
        return write_tensors(s, actor(rows, eps))

    return write_critic, write_actor


def _writes(learner, critic, actor) -> list[str]:
    rows, eps, divisor = _inputs(learner)
    before = learner.state.snapshot()
    storages = {t.untyped_storage().data_ptr(): k for k, t in learner.state.tensors().items()}
    recorder = WriteRecorder(storages)
    with recorder:
        critic(rows, eps, divisor, True)
        actor(rows, eps)
    learner.state.restore(before)
    return recorder.writes


def test_updates_write_no_state_and_the_detector_sees_the_writing_steps_write():
    learner = tiny_learner()
    assert _writes(learner, *_pure(learner)) == []
    before = learner.state.snapshot()
    critic, actor = _pure(learner)
    critic(*_inputs(learner), True)
    actor(*_inputs(learner)[:2])
    after = learner.state.tensors()
    assert all(torch.equal(before[k], after[k]) for k in before)
    written = {w.split("->")[1] for w in _writes(learner, *_writing(learner))}
    assert {"critic.params", "critic.adam.exp_avg", "target.params", "actor.params"} <= written


def _mutated_graph_inputs(fn, *args) -> list[list[int]]:
    found: list[list[int]] = []

    def fw_compiler(gm, example_inputs):
        info = TracingContext.try_get().fw_metadata.input_info
        found.append([i for i, x in enumerate(info) if x.mutates_data or x.mutates_metadata])
        return gm

    torch._dynamo.reset()
    try:
        torch.compile(fn, backend=aot_autograd(fw_compiler=fw_compiler), fullgraph=True)(*args)
    finally:
        torch._dynamo.reset()
    return found


@pytest.mark.slow  # over ~10 s on 2 cores
def test_pure_step_graphs_mutate_none_of_their_inputs():
    learner = tiny_learner()
    rows, eps, divisor = _inputs(learner)
    critic, actor = _pure(learner)
    assert _mutated_graph_inputs(critic, rows, eps, divisor, True) == [[]]
    assert _mutated_graph_inputs(actor, rows, eps) == [[]]
    # Control: the writing steps' graphs mutate their state inputs.
    write_critic, write_actor = _writing(learner)
    assert _mutated_graph_inputs(write_critic, rows, eps, divisor, True)[0] != []
    assert _mutated_graph_inputs(write_actor, rows, eps)[0] != []


@pytest.mark.parametrize(
    "compiled", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["eager", "compiled"]
)
def test_writing_inside_the_step_equals_writing_after_it_bit_for_bit(compiled):
    path = "compile" if compiled else "eager"
    after = tiny_learner(path)
    inside = tiny_learner(path)
    s = inside.state
    if compiled:
        # The cudagraph path's compiled updates, uncaptured (as its fallback runs them).
        inside.path = paths.CapturedPath(inside.path.cycle, "cpu", {"combo_kernels": False})
        inside.path.fallback = True
    else:
        write_critic, write_actor = _writing(inside)

        class Writing(paths.Path):
            def critic(self, rows, eps, divisor, update_target):
                s.scalars.copy_(write_critic(rows, eps, divisor, update_target))

            def actor(self, rows, eps):
                s.scalars.copy_(write_actor(rows, eps))

        inside.path = Writing(inside.path.cycle, "cpu")
    for _ in range(3):
        after.update()
        inside.update()
    assert max(state_diff(after, inside).values()) == 0.0


@pytest.mark.parametrize("path", ["eager", "compile"])
def test_the_cpu_paths_run_the_rng_hash_eagerly(path):
    """The compiled hash is for CUDA (tests/learner/test_gpu_paths.py checks it there); its
    bits equal the eager hash's (tests/learner/test_normalizer_exploration_rng.py)."""
    assert not tiny_learner(path).state.rng.compiled
