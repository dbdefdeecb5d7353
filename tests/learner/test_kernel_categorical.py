"""The fused critic head (learner/kernels/categorical.py) against its references: the TD target
and the cross-entropy (forward and backward), the Triton kernels through Triton's interpreter on
the CPU (TRITON_INTERPRET=1, tests/conftest.py), on CUDA (gpu), and the ops in the learner."""

from __future__ import annotations

import pytest
import torch

from flashsac_bench.learner.kernels import categorical as K
from tests.learner.helpers import fused_learner, state_diff, tiny_learner

triton = pytest.importorskip("triton", reason="the kernel tests need Triton (pip install triton)")
CPU_ONLY = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU run of the interpreter")
V_MIN, V_MAX, GAMMA = -5.0, 5.0, 0.97


def _case(members=2, batch=6, atoms=21, device="cpu", seed=0):
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


def _td(kernel_launch, logits, support, rewards, bootstrap, bonus):
    return kernel_launch(logits, support, rewards, bootstrap, GAMMA, bonus, V_MIN, V_MAX)


@CPU_ONLY
@pytest.mark.parametrize("atoms", [21, 101])
def test_interpreted_td_target_equals_the_reference(atoms):
    logits, support, rewards, bootstrap, bonus, _ = _case(atoms=atoms)
    nxt = logits[:, 6:]  # the (s', a') half, a strided view as the learner passes it
    want = _td(K.td_target_reference, nxt, support, rewards, bootstrap, bonus)

    def interpreted(*args):
        return K.launch_td_target(K.td_target_kernel, *args)

    got = _td(interpreted, nxt, support, rewards, bootstrap, bonus)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got.sum(-1), torch.ones(6))  # mass kept
    # A tie between the members picks the first (argmin's convention): identical logits.
    tied = torch.stack([nxt[0], nxt[0] + 0.0])
    torch.testing.assert_close(
        _td(interpreted, tied, support, rewards, bootstrap, bonus),
        _td(K.td_target_reference, tied, support, rewards, bootstrap, bonus),
        rtol=1e-5,
        atol=1e-6,
    )


@CPU_ONLY
def test_interpreted_cross_entropy_forward_and_backward_equal_autograd_of_the_reference():
    logits, support, *_, target = _case(atoms=101)
    online = logits[:, :6]
    ce, q, lse = K.launch_cross_entropy(K.cross_entropy_kernel, online, target, support)
    want_loss, want_q = K.cross_entropy_reference(online, target, support)
    torch.testing.assert_close(ce.mean(), want_loss, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(q.mean(), want_q, rtol=1e-6, atol=1e-6)
    # backward: d(loss + 0.3 * q_mean)/dlogits, by autograd through the reference
    x = online.clone().requires_grad_()
    loss, q_mean = K.cross_entropy_reference(x, target, support)
    (loss + 0.3 * q_mean).backward()
    n = ce.numel()
    grad_ce, grad_q = torch.full_like(ce, 1.0 / n), torch.full_like(q, 0.3 / n)
    got = K.launch_cross_entropy_backward(
        K.cross_entropy_backward_kernel, grad_ce, grad_q, online, target, support, q, lse
    )
    torch.testing.assert_close(got, x.grad, rtol=1e-5, atol=1e-8)


def test_the_ops_differentiate_like_the_reference_under_torch_func():
    """The ops' CPU implementations through CrossEntropyRows, under torch.func.grad as the
    learner differentiates them: loss, q and gradient equal the reference's."""
    logits, support, *_, target = _case(atoms=11)
    logits = logits[:, :6]

    def fused(x):
        loss, q = K.cross_entropy(x, target, support)
        return loss, q

    def reference(x):
        return K.cross_entropy_reference(x, target, support)

    got, (loss, q) = torch.func.grad_and_value(fused, has_aux=True)(logits)
    want, (want_loss, want_q) = torch.func.grad_and_value(reference, has_aux=True)(logits)
    torch.testing.assert_close((got, loss, q), (want, want_loss, want_q), rtol=1e-5, atol=1e-7)


def test_eager_with_the_ops_matches_the_reference(monkeypatch):
    plain = tiny_learner("eager")
    fused = fused_learner("eager", monkeypatch)
    for _ in range(2):
        fused.update()
        plain.update()
    assert max(state_diff(fused, plain).values()) < 1e-5


@pytest.mark.gpu
def test_cuda_kernels_equal_the_references_at_g1_sizes():
    logits, support, rewards, bootstrap, bonus, target = _case(batch=2048, atoms=101, device="cuda")
    nxt, online = logits[:, 2048:], logits[:, :2048]
    torch.testing.assert_close(
        _td(K.td_target, nxt, support, rewards, bootstrap, bonus),
        _td(K.td_target_reference, nxt, support, rewards, bootstrap, bonus),
        rtol=1e-5,
        atol=1e-6,
    )
    x = online.clone().requires_grad_()
    loss, q = K.cross_entropy(x, target, support)
    (loss + 0.3 * q).backward()
    y = online.clone().requires_grad_()
    want_loss, want_q = K.cross_entropy_reference(y, target, support)
    (want_loss + 0.3 * want_q).backward()
    torch.testing.assert_close((loss, q), (want_loss, want_q), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(x.grad, y.grad, rtol=1e-4, atol=1e-9)
