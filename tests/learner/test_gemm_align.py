"""GEMM alignment (hardware.gemm_align): zero-padded matmuls compute the same function.

The tiny dims are all odd multiples of nothing (in 5 / 10, hidden 12 / 20, heads 6 / 11), so
with align 8 every kind of padding occurs: input columns, hidden rows sliced back, head rows.
"""

from __future__ import annotations

import pytest
import torch

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.hardware import HardwareConfig
from flashsac_bench.learner.layout import ROWS
from flashsac_bench.learner.networks import Network, aligned, critic_distribution, param_views
from tests.learner.helpers import tiny_learner


def test_aligned_rounds_up() -> None:
    assert [aligned(n, 8) for n in (1, 8, 9, 130, 101)] == [8, 8, 16, 136, 104]
    assert aligned(101, 1) == 101


def test_param_views_pad_matmul_weights_with_zeros_only() -> None:
    learner = tiny_learner()
    st, flat = learner.statics, learner.state.critic_params
    plain = param_views(st.critic_param_layout, flat, torch.float32, 1)
    padded = param_views(st.critic_param_layout, flat, torch.float32, 8)
    padded_some = False
    for name, entry in st.critic_param_layout.entries.items():
        w, p = plain[name], padded[name]
        if entry.kind != ROWS:
            assert p.shape == w.shape and torch.equal(p, w), name
            continue
        rows, cols = w.shape[-2:]
        assert p.shape[-2:] == (aligned(rows, 8), aligned(cols, 8)), name
        assert torch.equal(p[..., :rows, :cols], w), name
        pad = p.clone()
        pad[..., :rows, :cols] = 0
        assert torch.count_nonzero(pad) == 0, f"{name}: padding must be exact zeros"
        padded_some |= p.shape != w.shape
    assert padded_some


def test_padded_critic_gives_the_same_values_and_gradients() -> None:
    learner = tiny_learner()
    st, s = learner.statics, learner.state
    g = torch.Generator().manual_seed(5)
    obs = torch.randn(16, learner.dims.critic_obs, generator=g)
    buffers = st.critic_buffer_layout.views(s.critic_buffers)

    def run(align: int):
        params = s.critic_params.clone().requires_grad_(True)
        actions = torch.rand(16, learner.dims.action, generator=torch.Generator().manual_seed(6))
        actions.requires_grad_(True)
        p = param_views(st.critic_param_layout, params, torch.float32, align)
        net = Network(p, buffers, st.critic_spec, st.norm, torch.float32)
        q, log_probs, new_b = critic_distribution(net, obs, actions, st.support, training=True)
        (q.sum() + log_probs[..., 3].sum()).backward()
        return q, log_probs, new_b, params.grad, actions.grad

    ref, pad = run(1), run(8)
    assert pad[1].shape == ref[1].shape  # the head's padding columns are sliced off
    for a, b in zip(ref[:2] + ref[3:], pad[:2] + pad[3:], strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    for k in ref[2]:
        torch.testing.assert_close(pad[2][k], ref[2][k], rtol=1e-5, atol=1e-6)


def test_padded_learner_trains_like_the_unpadded_one() -> None:
    """Whole cycles (critic, actor, temperature, Adam, projection, Polyak, acting)."""
    plain = tiny_learner(seed=3)
    padded = tiny_learner(seed=3, gemm_align=8)
    for _ in range(3):
        plain.update()
        padded.update()
    a, b = plain.state.tensors(), padded.state.tensors()
    for k in a:
        torch.testing.assert_close(b[k], a[k], rtol=1e-4, atol=1e-5, msg=k)
    obs = torch.randn(4, plain.dims.obs, generator=torch.Generator().manual_seed(8))
    torch.testing.assert_close(
        padded.act_deterministic(obs), plain.act_deterministic(obs), rtol=1e-5, atol=1e-6
    )


def test_gemm_align_config() -> None:
    assert HardwareConfig(device="cpu").resolved_gemm_align() == 1
    assert HardwareConfig(device="cuda").resolved_gemm_align() == 8
    assert HardwareConfig(device="cpu", gemm_align=16).resolved_gemm_align() == 16
    with pytest.raises(ConfigError, match="gemm_align"):
        HardwareConfig(gemm_align=-1)
    with pytest.raises(ValueError, match="gemm_align"):
        tiny_learner(gemm_align=0)
