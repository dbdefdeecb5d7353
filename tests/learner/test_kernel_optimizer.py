"""The fused optimizer step (learner/kernels/optimizer.py) against its reference: the Triton
kernel through Triton's interpreter on the CPU (TRITON_INTERPRET=1, tests/conftest.py) with every
load and store bounds-checked, on rows at the edges of its block; the op's opcheck, fake
implementation and torch.compile calling it (in place and into fresh tensors); the learner's
paths with the op; on CUDA (gpu) the same at G1 sizes, compiled and captured."""

from __future__ import annotations

import pytest
import torch

from flashsac_bench.learner import kernels
from flashsac_bench.learner.adam import AdamConfig, adam_hyper
from flashsac_bench.learner.kernels import optimizer as K
from flashsac_bench.learner.layout import BN_AFFINE, FREE, RMS, ROWS, Layout
from flashsac_bench.learner.networks import actor_layouts, critic_layouts
from flashsac_bench.learner.projection import FREE_ROW, Projector
from tests.learner.helpers import fused_learner, state_diff, tiny_learner

triton = pytest.importorskip("triton", reason="the kernel tests need Triton (pip install triton)")
from tests.learner.kernel_guard import bounds_checked  # noqa: E402  (needs triton)

# The kernel loops over a row bound it loads: the interpreter of Triton before 3.9 cannot run
# that (3.6, torch 2.11's pin, fails in numpy); the GPU compiles the loop and needs no interpreter.
_OLD_INTERPRETER = tuple(int(p) for p in triton.__version__.split(".")[:2]) < (3, 9)
INTERPRETED = pytest.mark.skipif(
    not kernels.INTERPRETED or _OLD_INTERPRETER,
    reason="the CPU run of the kernels needs TRITON_INTERPRET=1 and Triton >= 3.9's interpreter",
)
CFG = AdamConfig()
TAU = 0.01


def _edge_layout() -> Layout:
    """Rows of 1, BLOCK - 1, BLOCK, BLOCK + 1 and 2 BLOCK + 1 elements, joint BN affine and RMS
    rows, and a free stretch of FREE_ROW + 1 (cut into a full row and a row of one)."""
    b = K.BLOCK
    layout = Layout()
    for name, shape, kind in [
        ("one", (2, 1), ROWS),
        ("below", (2, b - 1), ROWS),
        ("block", (1, b), ROWS),
        ("above", (2, b + 1), ROWS),
        ("two", (1, 2 * b + 1), ROWS),
        ("bn", (2, 2, 3), BN_AFFINE),
        ("rms", (1, 5), RMS),
        ("free", (FREE_ROW + 1,), FREE),
    ]:
        layout.add(name, shape, kind)
    return layout.grouped()


LAYOUTS = {
    "edges": _edge_layout,
    "actor": lambda: actor_layouts(5, 3, 12, 2, 4)[1],  # no target; rows of 5, 12, 10, 24, 48
    "critic": lambda: critic_layouts(10, 20, 1, 4, 11)[1],  # rows of 10 ... 160; head bias
}


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


def _close(got, want):
    """Within fp32 rounding: a few ulp of the values' scale."""
    for a, b in zip(got, want, strict=True):
        if b is None:
            assert a is None
            continue
        torch.testing.assert_close(a, b, rtol=4e-6, atol=4e-7)


def _run(projector, args, ok, in_place: bool):
    """K.step through the op; in place: written over clones of the inputs (the eager and
    cudagraph paths), else into fresh tensors (the compile path)."""
    if not in_place:
        return K.step(projector, CFG, TAU, *args, ok)
    inputs = [x.clone() if x is not None else None for x in args[:5]]
    out = (inputs[0], inputs[2], inputs[3], inputs[4])
    got = K.step(projector, CFG, TAU, *inputs, *args[5:], ok, out=out)
    assert all(a is b for a, b in zip(got, out, strict=True))
    return got


@INTERPRETED
@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("with_target", [True, False])
@pytest.mark.parametrize("name", ["edges", "actor"])
def test_interpreted_op_equals_the_reference(name, with_target, in_place):
    projector, args = _case(LAYOUTS[name](), "cpu", seed=len(name))
    if not with_target:
        args[4] = None
    for flag in (True, False):  # False: the caller's finite flag says skip; nothing moves
        ok = torch.tensor(flag)
        want = K.reference(projector, CFG, TAU, *args, ok)
        with bounds_checked() as lanes:
            got = _run(projector, args, ok, in_place)
        # Every element of params, grad and the moments read twice (the norm, then the write),
        # the target's once; written once in each of 3 or 4 vectors.
        n = args[0].numel()
        assert lanes["stores"] == n * (3 + with_target)
        assert lanes["loads"] >= n * (8 + with_target)
        _close(got, want)
        if not flag:
            old = [args[0], args[2], args[3], args[4]]
            assert all(b is None or torch.equal(a, b) for a, b in zip(got, old, strict=True))


@INTERPRETED
@pytest.mark.slow
def test_interpreted_op_equals_the_reference_on_a_critic():
    projector, args = _case(LAYOUTS["critic"](), "cpu", seed=2)
    ok = torch.tensor(True)
    with bounds_checked():
        got = _run(projector, args, ok, in_place=True)
    _close(got, K.reference(projector, CFG, TAU, *args, ok))


@INTERPRETED
def test_interpreted_op_leaves_everything_when_not_finite():
    projector, args = _case(LAYOUTS["edges"](), "cpu", seed=1)
    args[1] = args[1].clone()
    args[1][3] = float("nan")  # a NaN gradient: the caller's flag is False
    before = [x.clone() for x in (args[0], args[2], args[3], args[4])]
    got = _run(projector, args, torch.tensor(False), in_place=True)
    assert all(torch.equal(a, b) for a, b in zip(got, before, strict=True))


def _op_args(projector, args, ok, after=()):
    """flashsac::adam_project_'s arguments, writing into fresh tensors."""
    p, g, m, v, t, step_size, bc2_sqrt = args
    out = [torch.empty_like(x) if x is not None else None for x in (p, m, v, t)]
    rows, consts = projector.row_table()
    hyper = (1.0 - CFG.beta1, CFG.beta2, 1.0 - CFG.beta2, CFG.eps, TAU)
    flag = ok.to(torch.float32)  # the op's finite flag is 1.0 / 0.0
    return (*out, p, g, m, v, t, rows, consts, step_size, bc2_sqrt, flag, *hyper, list(after))


@pytest.mark.parametrize("interpreted", [True, False])
def test_opcheck(interpreted, monkeypatch):
    if interpreted and (not kernels.INTERPRETED or _OLD_INTERPRETER):
        pytest.skip("the CPU run of the kernels needs TRITON_INTERPRET=1 and Triton >= 3.9")
    monkeypatch.setattr(kernels, "cpu_interprets", interpreted)
    projector, args = _case(LAYOUTS["edges"](), "cpu", seed=3)
    op = torch.ops.flashsac.adam_project_.default
    torch.library.opcheck(op, _op_args(projector, args, torch.tensor(True), after=[args[1]]))
    args[4] = None
    torch.library.opcheck(op, _op_args(projector, args, torch.tensor(True)))


@INTERPRETED
def test_launch_rejects_what_the_kernel_cannot_index():
    projector, args = _case(LAYOUTS["edges"](), "cpu", seed=4)
    ok = torch.tensor(True)
    strided = torch.zeros(2 * args[0].numel())[::2]
    for i, bad in [(0, strided), (1, args[1].double()), (2, args[2][:-1])]:
        broken = list(args)
        broken[i] = bad
        with pytest.raises(ValueError, match="fused kernel argument"):
            K.step(projector, CFG, TAU, *broken, ok)
    op_args = list(_op_args(projector, args, ok))
    op_args[13] = ok  # a bool flag: the op takes 1.0 / 0.0
    with pytest.raises(ValueError, match="'ok'"):
        torch.ops.flashsac.adam_project_(*op_args)


def _compiled_step(backend: str, projector, in_place: bool):
    """A compiled (fullgraph) function that calls the op as the updates do: in place on its
    inputs (the cudagraph path) or into fresh tensors (the compile path)."""

    def fn(params, grad, exp_avg, exp_avg_sq, target, step_size, bc2_sqrt, ok):
        moved = params * 2.0  # another result that reads what the op overwrites
        out = (params, exp_avg, exp_avg_sq, target) if in_place else None
        new = K.step(
            projector, CFG, TAU, params, grad, exp_avg, exp_avg_sq, target, step_size,
            bc2_sqrt, ok, out=out, after=[moved],
        )  # fmt: skip
        return (*new, moved)

    torch._dynamo.reset()
    return fn, torch.compile(fn, fullgraph=True, backend=backend)


def _compare_compiled(backend: str, name: str, rtol: float, atol: float) -> None:
    for in_place in (False, True):
        projector, args = _case(LAYOUTS[name](), "cpu", seed=5)
        ok = torch.tensor(True)
        eager, compiled = _compiled_step(backend, projector, in_place)
        a = [x.clone() for x in args]
        b = [x.clone() for x in args]
        want, got = eager(*a, ok), compiled(*b, ok)
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
        torch.testing.assert_close(b, a, rtol=rtol, atol=atol)  # the same writes in place
        # `moved` read the parameters before the op wrote them
        torch.testing.assert_close(got[-1], args[0] * 2.0, rtol=0, atol=0)


@INTERPRETED
def test_compiled_function_calling_the_op_equals_eager():
    """Dynamo, functionalization and AOTAutograd (aot_eager) around the op: it is called (in
    place: functionalized, then written back into the inputs), not traced."""
    _compare_compiled("aot_eager", "edges", rtol=0, atol=0)


@INTERPRETED
@pytest.mark.slow
def test_inductor_compiled_function_calling_the_op_equals_eager():
    _compare_compiled("inductor", "edges", rtol=0, atol=0)


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
@pytest.mark.parametrize("interpreted", [False, True])
def test_compiled_paths_with_the_ops_agree_bit_for_bit(monkeypatch, interpreted):
    """The compile path's pure updates (the op into fresh tensors) and the cudagraph path's
    writing updates (the op reinplaced into the state), uncaptured: the same ops, the same
    bits; both within rounding of the eager reference. `interpreted`: the ops' kernels run
    inside Inductor's compiled updates through the interpreter."""
    if interpreted and (not kernels.INTERPRETED or _OLD_INTERPRETER):
        pytest.skip("the CPU run of the kernels needs TRITON_INTERPRET=1 and Triton >= 3.9")
    from flashsac_bench.learner import paths

    plain = tiny_learner("eager")
    pure = fused_learner("compile", monkeypatch, interpreted)
    writing = fused_learner("compile", monkeypatch, interpreted)
    writing.path = paths.CapturedPath(writing.path.cycle, "cpu", {})
    writing.path.fallback = True
    for _ in range(2):
        pure.update()
        writing.update()
        plain.update()
    assert max(state_diff(pure, writing).values()) == 0.0
    assert max(state_diff(pure, plain).values()) < 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["critic", "actor", "edges"])
def test_cuda_kernel_equals_the_reference(name):
    layout = {
        "critic": critic_layouts(130, 256, 2, 4, 101)[1],
        "actor": actor_layouts(98, 29, 128, 2, 4)[1],
        "edges": _edge_layout(),
    }[name]
    projector, args = _case(layout, "cuda", seed=3)
    if name == "actor":
        args[4] = None
    for flag in (True, False):
        ok = torch.tensor(flag, device="cuda")
        want = K.reference(projector, CFG, TAU, *args, ok)
        for in_place in (False, True):
            _close(_run(projector, args, ok, in_place), want)
        again = K.step(projector, CFG, TAU, *args, ok)
        assert all(
            a is None or torch.equal(a, b)
            for a, b in zip(again, K.step(projector, CFG, TAU, *args, ok), strict=True)
        )  # fixed blocks: the same bits on every launch
    torch.cuda.synchronize()


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_cuda_inductor_calls_and_captures_the_op(mode):
    """Inductor compiles a function calling the op into fresh tensors (its own CUDA graphs with
    reduce-overhead): the same bits as eager, three calls in a row."""
    projector, args = _case(critic_layouts(130, 256, 2, 4, 101)[1], "cuda", seed=6)
    ok = torch.tensor(True, device="cuda")
    eager, _ = _compiled_step("inductor", projector, in_place=False)
    compiled = torch.compile(eager, fullgraph=True, mode=mode)
    want = eager(*args, ok)
    for _ in range(3):
        torch.testing.assert_close(compiled(*args, ok), want, rtol=0, atol=0)
    torch.cuda.synchronize()
