"""The fused critic head (learner/kernels/categorical.py) against its references: the TD target
and the cross-entropy with its gradient rows, the Triton kernels through Triton's interpreter
on the CPU (TRITON_INTERPRET=1, tests/conftest.py) with every load and store bounds-checked,
at the edges of their blocks; the ops' fake implementations, opcheck, gradients by autograd and
torch.func, torch.compile calling the ops; on CUDA (gpu) the same at G1 sizes, compiled and
captured."""

from __future__ import annotations

import pytest
import torch

from flashsac_bench.learner import kernels
from flashsac_bench.learner.kernels import categorical as K
from tests.learner.helpers import fused_learner, state_diff, tiny_learner

triton = pytest.importorskip("triton", reason="the kernel tests need Triton (pip install triton)")
from tests.learner.kernel_guard import bounds_checked  # noqa: E402  (needs triton)

INTERPRETED = pytest.mark.skipif(
    not kernels.INTERPRETED, reason="the CPU run of the kernels needs TRITON_INTERPRET=1"
)
V_MIN, V_MAX, GAMMA = -5.0, 5.0, 0.97
# The smallest support, a CHUNK of target atoms -1 / 0 / +1, G1's 101, BLOCK_K -1 / 0.
ATOMS = [2, 3, K.CHUNK - 1, K.CHUNK, K.CHUNK + 1, 101, K.BLOCK_K - 1, K.BLOCK_K]


def _case(members=2, batch=5, atoms=21, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g) * scale).to(device)

    logits = randn(members, 2 * batch, atoms, scale=2.0)
    rewards = randn(batch, scale=3.0)  # some rewards push atoms past both ends of the support
    bootstrap = (torch.rand(batch, generator=g) > 0.3).float().to(device)
    bonus = randn(batch, scale=0.5)
    target = torch.softmax(randn(batch, atoms), -1)
    support = torch.linspace(V_MIN, V_MAX, atoms, device=device)
    return logits, support, rewards, bootstrap, bonus, target


def _td(fn, logits, support, rewards, bootstrap, bonus):
    return fn(logits, support, rewards, bootstrap, GAMMA, bonus, V_MIN, V_MAX)


def _loss(fn, target, support):
    """logits -> (loss + 0.3 q_mean, (loss, q_mean)) of the fused or the reference head."""

    def f(x):
        loss, q = fn(x, target, support)
        return loss + 0.3 * q, (loss, q)

    return f


def _rows_of(logits, target, support):
    """(ce, q, dce, dq) of the reference, the gradient rows by autograd of ce and q."""
    x = logits.detach().clone().requires_grad_()
    log_probs = torch.log_softmax(x, -1)
    ce = -(target * log_probs).sum(-1)
    q = (torch.exp(log_probs) * support).sum(-1)
    (dce,) = torch.autograd.grad(ce.sum(), x, retain_graph=True)
    (dq,) = torch.autograd.grad(q.sum(), x)
    return ce.detach(), q.detach(), dce, dq


@INTERPRETED
@pytest.mark.parametrize("atoms", ATOMS)
def test_td_target_op_equals_the_reference_at_block_edges(atoms):
    logits, support, rewards, bootstrap, bonus, _ = _case(atoms=atoms, seed=atoms)
    nxt = logits[:, 5:]  # the (s', a') half: a strided view, as the learner passes it
    want = _td(K.td_target_reference, nxt, support, rewards, bootstrap, bonus)
    with bounds_checked() as lanes:
        got = _td(K.td_target, nxt, support, rewards, bootstrap, bonus)
    assert lanes["stores"] == 5 * atoms  # the kernel ran, every target atom written once
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got.sum(-1), torch.ones(5))  # mass kept


@INTERPRETED
@pytest.mark.parametrize("members, batch, atoms", [(1, 1, 2), (3, 2, 7), (2, 1, 129 - 1)])
def test_td_target_op_at_one_row_and_other_member_counts(members, batch, atoms):
    logits, support, rewards, bootstrap, bonus, _ = _case(members, batch, atoms)
    with bounds_checked():
        got = _td(K.td_target, logits[:, :batch], support, rewards, bootstrap, bonus)
    want = _td(K.td_target_reference, logits[:, :batch], support, rewards, bootstrap, bonus)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@INTERPRETED
def test_td_target_op_breaks_ties_as_argmin():
    logits, support, rewards, bootstrap, bonus, _ = _case(atoms=33)
    tied = torch.stack([logits[0, :5], logits[0, :5] + 0.0])  # identical members
    torch.testing.assert_close(
        _td(K.td_target, tied, support, rewards, bootstrap, bonus),
        _td(K.td_target_reference, tied, support, rewards, bootstrap, bonus),
        rtol=1e-5,
        atol=1e-6,
    )


@INTERPRETED
@pytest.mark.parametrize("atoms", ATOMS)
def test_cross_entropy_op_equals_the_reference_at_block_edges(atoms):
    logits, support, *_, target = _case(atoms=atoms, seed=atoms)
    online = logits[:, :5]
    with bounds_checked() as lanes:
        got = torch.ops.flashsac.cross_entropy_rows(online, target, support)
    assert lanes["stores"] == 2 * 5 * (2 + 2 * atoms)  # ce, q and both gradient rows
    want = _rows_of(online, target, support)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(got, K.cross_entropy_rows_reference(online, target, support), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@INTERPRETED
def test_gradients_through_the_fused_head_equal_the_references():
    """loss + 0.3 q_mean through `cross_entropy` (the op's gradient rows attached with plain
    ops): the same loss, q and gradient as the reference, by autograd and by torch.func."""
    logits, support, *_, target = _case(atoms=101)
    online = logits[:, :5]
    fused, ref = (
        _loss(K.cross_entropy, target, support),
        _loss(K.cross_entropy_reference, target, support),
    )
    got, (loss, q) = torch.func.grad(fused, has_aux=True)(online)
    want, (want_loss, want_q) = torch.func.grad(ref, has_aux=True)(online)
    torch.testing.assert_close((got, loss, q), (want, want_loss, want_q), rtol=1e-5, atol=1e-7)
    x = online.clone().requires_grad_()
    fused(x)[0].backward()
    torch.testing.assert_close(x.grad, want, rtol=1e-5, atol=1e-7)


def test_fake_implementations_match_the_real_outputs():
    """Shapes, dtypes and strides of every output under FakeTensorMode equal the real ones
    (the reference implementation or the interpreted kernel, whichever the CPU runs)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    logits, support, rewards, bootstrap, bonus, target = _case(atoms=33)
    td_args = (logits[:, 5:], support, rewards, bootstrap, GAMMA, bonus, V_MIN, V_MAX)
    calls = [
        (torch.ops.flashsac.td_target, td_args),
        (torch.ops.flashsac.cross_entropy_rows, (logits[:, :5], target, support)),
    ]
    for op, args in calls:
        real = op(*args)
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            fake_args = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
            fake = op(*fake_args)
        real, fake = (x if isinstance(x, tuple) else (x,) for x in (real, fake))
        for r, f in zip(real, fake, strict=True):
            assert (f.shape, f.dtype, f.stride()) == (r.shape, r.dtype, r.stride())


@pytest.mark.parametrize("interpreted", [True, False])
def test_opcheck(interpreted, monkeypatch):
    if interpreted and not kernels.INTERPRETED:
        pytest.skip("the CPU run of the kernels needs TRITON_INTERPRET=1")
    monkeypatch.setattr(kernels, "cpu_interprets", interpreted)
    logits, support, rewards, bootstrap, bonus, target = _case(atoms=33)
    td_args = (logits[:, 5:], support, rewards, bootstrap, GAMMA, bonus, V_MIN, V_MAX)
    torch.library.opcheck(torch.ops.flashsac.td_target.default, td_args)
    ce_args = (logits[:, :5].contiguous(), target, support)
    torch.library.opcheck(torch.ops.flashsac.cross_entropy_rows.default, ce_args)


@INTERPRETED
def test_launches_reject_what_the_kernels_cannot_index():
    logits, support, rewards, bootstrap, bonus, target = _case(atoms=K.BLOCK_K + 1)
    with pytest.raises(ValueError, match="atoms"):
        K.cross_entropy(logits[:, :5], target, support)
    logits, support, rewards, bootstrap, bonus, target = _case(atoms=21)
    with pytest.raises(ValueError, match="float32"):
        K.cross_entropy(logits[:, :5].double(), target, support)
    with pytest.raises(ValueError, match="shape"):
        _td(K.td_target, logits[:, 5:], support, rewards[:4], bootstrap, bonus)
    with pytest.raises(ValueError, match="shape"):
        K.cross_entropy(logits[:, :5], target[:, :20], support)
    with pytest.raises(ValueError, match="atoms"):
        K.cross_entropy(logits[:, :5, :1], target[:, :1], support[:1])
    with pytest.raises(ValueError, match="unit stride"):
        kernels.require("x", logits[..., ::2], logits.device, torch.float32, contiguous=False)
    with pytest.raises(ValueError, match="not contiguous"):
        kernels.require("x", target.t(), target.device, torch.float32)


def _compiled_head(backend: str):
    """A compiled (fullgraph) function of the learner's shape: the target by the TD-target op,
    the loss's gradient by torch.func through the cross-entropy op."""

    def head(logits, support, rewards, bootstrap, bonus):
        batch = logits.shape[1] // 2
        with torch.no_grad():
            nxt = logits[:, batch:]
            target = _td(K.td_target, nxt, support, rewards, bootstrap, bonus)
        loss = _loss(K.cross_entropy, target, support)
        return torch.func.grad(loss, has_aux=True)(logits[:, :batch])

    torch._dynamo.reset()
    return head, torch.compile(head, fullgraph=True, backend=backend)


@INTERPRETED
def test_compiled_function_calling_the_ops_equals_eager():
    """Dynamo and AOTAutograd (aot_eager) around the ops: the ops are called, not traced."""
    args = _case(atoms=33)[:5]
    eager, compiled = _compiled_head("aot_eager")
    torch.testing.assert_close(compiled(*args), eager(*args), rtol=0, atol=0)


@INTERPRETED
@pytest.mark.slow
def test_inductor_compiled_function_calling_the_ops_equals_eager():
    args = _case(atoms=101)[:5]
    eager, compiled = _compiled_head("inductor")
    torch.testing.assert_close(compiled(*args), eager(*args), rtol=1e-6, atol=1e-7)


def test_eager_learner_with_the_ops_matches_the_reference(monkeypatch):
    plain = tiny_learner("eager")
    fused = fused_learner("eager", monkeypatch)
    for _ in range(2):
        fused.update()
        plain.update()
    assert max(state_diff(fused, plain).values()) < 1e-5


def _as_accurate(got, fp32, exact, floor=0.0):
    """The kernel's output is as close to the float64 oracle as torch's own float32 reference
    on the same device: within twice the reference's worst error, 8 float32 ulps of the largest
    value, or `floor`, whichever is most (the rows' sums run in another order). On CUDA the two
    round otherwise (torch's kernels contract a * b + c into FMAs, the fused kernels are built
    without), so neither is the other's bits."""
    exact = exact.to(got.device, torch.float64)
    ref_error = (fp32.double() - exact).abs().max().item()
    budget = max(2 * ref_error, 8 * exact.abs().max().item() * 2.0**-23, floor)
    worst = (got.double() - exact).abs().max().item()
    assert worst <= budget, (worst, budget, ref_error)


def _td_as_accurate(*td_args):
    """The TD target op against the float64 oracle, as accurate as torch's float32 reference."""
    floor = _projection_floor(td_args[0].shape[-1])
    exact = _td(K.td_target_reference, *_double(*td_args))
    fp32 = _td(K.td_target_reference, *td_args)
    _as_accurate(_td(K.td_target, *td_args), fp32, exact, floor)


def _projection_floor(atoms: int) -> float:
    """The TD target's mass split follows the target's position b = (z - v_min) / delta in
    [0, atoms - 1]: one float32 ulp of b moves up to (atoms - 1) * 2^-23 of mass."""
    return (atoms - 1) * 2.0**-23


def _double(*tensors):
    return [t.double() for t in tensors]


@pytest.mark.gpu
@pytest.mark.parametrize("atoms", ATOMS)
def test_cuda_kernels_equal_the_references_at_block_edges(atoms):
    logits, support, rewards, bootstrap, bonus, target = _case(batch=37, atoms=atoms, device="cuda")
    nxt, online = logits[:, 37:], logits[:, :37]
    _td_as_accurate(nxt, support, rewards, bootstrap, bonus)
    got = torch.ops.flashsac.cross_entropy_rows(online, target, support)
    fp32, exact = _rows_of(online, target, support), _rows_of(*_double(online, target, support))
    for a, b, c in zip(got, fp32, exact, strict=True):
        _as_accurate(a, b, c)
    torch.cuda.synchronize()


@pytest.mark.gpu
def test_cuda_kernels_equal_the_references_at_g1_sizes():
    logits, support, rewards, bootstrap, bonus, target = _case(batch=2048, atoms=101, device="cuda")
    nxt, online = logits[:, 2048:], logits[:, :2048]
    _td_as_accurate(nxt, support, rewards, bootstrap, bonus)
    fused, ref = (
        _loss(K.cross_entropy, target, support),
        _loss(K.cross_entropy_reference, target, support),
    )
    got, (loss, q) = torch.func.grad(fused, has_aux=True)(online)
    want, (want_loss, want_q) = torch.func.grad(ref, has_aux=True)(online)
    exact_ref = _loss(K.cross_entropy_reference, target.double(), support.double())
    exact, (exact_loss, exact_q) = torch.func.grad(exact_ref, has_aux=True)(online.double())
    for a, b, c in ((loss, want_loss, exact_loss), (q, want_q, exact_q), (got, want, exact)):
        _as_accurate(a, b, c)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_cuda_inductor_calls_and_captures_the_ops(mode):
    """Inductor compiles a function calling the ops (its own CUDA graphs with
    reduce-overhead): the same values as eager, three calls in a row."""
    args = _case(batch=256, atoms=101, device="cuda")[:5]
    eager, _ = _compiled_head("inductor")
    compiled = torch.compile(eager, fullgraph=True, mode=mode)
    want = eager(*args)
    for _ in range(3):
        torch.testing.assert_close(compiled(*args), want, rtol=1e-5, atol=1e-7)
    torch.cuda.synchronize()
