"""The fused optimizer step (learner/kernels/optimizer.py) against its reference: the Triton
kernel through Triton's interpreter on the CPU (TRITON_INTERPRET=1, tests/conftest.py), the
same kernel on CUDA (gpu), and the custom op's plumbing in the learner's three paths."""

from __future__ import annotations

import os

import pytest
import torch

from flashsac_bench.learner.adam import AdamConfig, adam_hyper
from flashsac_bench.learner.kernels import optimizer as K
from flashsac_bench.learner.networks import actor_layouts, critic_layouts
from flashsac_bench.learner.projection import Projector
from tests.learner.helpers import fused_learner, state_diff, tiny_learner

triton = pytest.importorskip("triton", reason="the kernel tests need Triton (pip install triton)")
CFG = AdamConfig()
TAU = 0.01


def _case(layout, device, seed=0, step=5.0):
    """A projected parameter vector, a gradient, Adam moments and a target near it."""
    projector = Projector(layout, device, gather=True)
    g = torch.Generator().manual_seed(seed)
    n = layout.numel

    def randn(scale=1.0):
        return (torch.randn(n, generator=g) * scale).to(device)

    params = projector(randn())
    grad, exp_avg = randn(0.1), randn(0.01)
    exp_avg_sq = (torch.rand(n, generator=g) * 1e-3).to(device)
    target = params + randn(0.01)
    lr, count = torch.tensor(3e-4, device=device), torch.tensor(step, device=device)
    step_size, bc2_sqrt, _ = adam_hyper(lr, count, CFG)
    return projector, [params, grad, exp_avg, exp_avg_sq, target, step_size, bc2_sqrt]


def _launch(projector, args, ok, out):
    rows, consts = projector.row_table()
    p, g, m, v, t, step_size, bc2_sqrt = args
    hyper = (1.0 - CFG.beta1, CFG.beta2, 1.0 - CFG.beta2, CFG.eps, TAU)
    K.launch(
        K.adam_project_kernel, *out, p, g, m, v, t, rows, consts, step_size, bc2_sqrt, ok, *hyper
    )


def _close(got, want):
    """Within fp32 rounding: a few ulp of the values' scale."""
    for a, b in zip(got, want, strict=True):
        if b is None:
            assert a is None
            continue
        torch.testing.assert_close(a, b, rtol=4e-6, atol=4e-7)


LAYOUTS = {
    "critic": critic_layouts(10, 20, 1, 4, 11)[1],  # rows of 10, 20, 22, 40, 80, 160; head bias
    "actor": actor_layouts(5, 3, 12, 2, 4)[1],  # no target; rows of 5, 12, 10, 24, 48, 96
}


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU run of the interpreter")
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_interpreted_kernel_equals_the_reference(name):
    assert os.environ.get("TRITON_INTERPRET") == "1"
    projector, args = _case(LAYOUTS[name], "cpu")
    if name == "actor":
        args[4] = None
    ok = torch.tensor(True)
    want = K.reference(projector, CFG, TAU, *args[:5], *args[5:], ok)
    out = [torch.empty_like(x) if x is not None else None for x in args[:4] + [args[4]]]
    out = [out[0], out[2], out[3], out[4]]
    _launch(projector, args, ok, out)
    _close(out, want)
    # In place (the eager and cudagraph paths): the same values written over the inputs.
    inputs = [x.clone() if x is not None else None for x in args[:5]]
    state = [inputs[0], inputs[2], inputs[3], inputs[4]]
    _launch(projector, inputs + args[5:], ok, state)
    _close(state, want)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU run of the interpreter")
def test_interpreted_kernel_leaves_everything_when_not_finite():
    projector, args = _case(LAYOUTS["critic"], "cpu", seed=1)
    args[1] = args[1].clone()
    args[1][3] = float("nan")  # a NaN gradient: the caller's flag is False
    before = [x.clone() for x in (args[0], args[2], args[3], args[4])]
    out = [args[0], args[2], args[3], args[4]]
    _launch(projector, args, torch.tensor(False), out)
    assert all(torch.equal(a, b) for a, b in zip(out, before, strict=True))


def test_the_ops_cpu_implementation_equals_the_reference():
    """The op's CPU implementation (its plumbing tests below run it) computes the reference."""
    projector, args = _case(LAYOUTS["critic"], "cpu", seed=2)
    ok = torch.tensor(True)
    want = K.reference(projector, CFG, TAU, *args, ok)
    got = K.step(projector, CFG, TAU, *args, ok)
    _close(got, want)
    got = K.step(projector, CFG, TAU, *args[:4], None, *args[5:], ok)
    _close(got, (*want[:3], None))


def test_eager_with_the_op_writes_in_place_and_matches_the_reference(monkeypatch):
    plain = tiny_learner("eager")
    fused = fused_learner("eager", monkeypatch)
    assert not plain.statics.kernels
    params = fused.state.critic_params
    for _ in range(2):
        fused.update()
        plain.update()
    assert fused.state.critic_params is params
    assert max(state_diff(fused, plain).values()) < 1e-5


@pytest.mark.slow
def test_compiled_paths_with_the_op_agree_bit_for_bit(monkeypatch):
    """The compile path's pure updates (the op into fresh tensors) and the cudagraph path's
    writing updates (the op reinplaced into the state), uncaptured: the same op, the same bits;
    both within rounding of the eager reference."""
    from flashsac_bench.learner import paths

    plain = tiny_learner("eager")
    pure = fused_learner("compile", monkeypatch)
    writing = fused_learner("compile", monkeypatch)
    writing.path = paths.CapturedPath(writing.path.cycle, "cpu", {})
    writing.path.fallback = True
    for _ in range(2):
        pure.update()
        writing.update()
        plain.update()
    assert max(state_diff(pure, writing).values()) == 0.0
    assert max(state_diff(pure, plain).values()) < 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["critic", "actor"])
def test_cuda_kernel_equals_the_reference_at_g1_sizes(name):
    layout = (
        critic_layouts(130, 256, 2, 4, 101)[1]
        if name == "critic"
        else actor_layouts(98, 29, 128, 2, 4)[1]
    )
    projector, args = _case(layout, "cuda", seed=3)
    if name == "actor":
        args[4] = None
    for flag in (True, False):
        ok = torch.tensor(flag, device="cuda")
        want = K.reference(projector, CFG, TAU, *args, ok)
        _close(K.step(projector, CFG, TAU, *args, ok), want)
        again = K.step(projector, CFG, TAU, *args, ok)
        assert all(
            a is None or torch.equal(a, b)
            for a, b in zip(again, K.step(projector, CFG, TAU, *args, ok), strict=True)
        )  # fixed blocks: the same bits on every launch
