"""GEMM alignment (hardware.gemm_align): zero-padded matmuls compute the same function.

The tiny dims are all odd multiples of nothing (in 5 / 10, hidden 12 / 20, heads 6 / 11), so
with align 8 every kind of padding occurs: input columns, hidden rows sliced back, head rows.
"""

from __future__ import annotations

import pytest
import torch
from helpers import tiny_learner

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.hardware import HardwareConfig
from flashsac_bench.learner.layout import ROWS
from flashsac_bench.learner.networks import Network, aligned, critic_distribution, param_views


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
    """Whole cycles (critic, actor, temperature, Adam, projection, Polyak, acting); the
    grouped layout kept packed so the flat vectors compare (aligned: the test below)."""
    plain = tiny_learner(seed=3)
    padded = tiny_learner(seed=3, gemm_align=8, path_options={"aligned_layout": False})
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


def _offsets(layout) -> dict[str, int]:
    return {name: e.offset for name, e in layout.entries.items()}


def test_aligned_layout_starts_every_group_on_the_gemm_boundary() -> None:
    from flashsac_bench.learner.layout import FREE, GAP_PREFIX
    from flashsac_bench.learner.networks import actor_layouts, critic_layouts

    for build, args in (
        (actor_layouts, (98, 29, 128, 2, 4)),
        (critic_layouts, (130, 512, 2, 4, 101)),
    ):
        plain, packed = build(*args)[1], build(*args, group_align=8)[1]
        names = [n for n in packed.entries if not n.startswith(GAP_PREFIX)]
        assert names == list(plain.entries)  # the same entries, in the same order
        assert all(packed.entries[n].shape == plain.entries[n].shape for n in names)
        gaps = [e for n, e in packed.entries.items() if n.startswith(GAP_PREFIX)]
        assert all(e.kind == FREE and e.init is None and e.numel < 8 for e in gaps)
        assert all(
            packed.entries[n].offset % 8 == 0 for n in names if plain.entries[n].kind == ROWS
        )
    # the G1 actor is what needs it: its embed BN pair (196 elements) shifts the block w2s
    plain = actor_layouts(98, 29, 128, 2, 4)[1]
    assert _offsets(plain)["block0.w2"] % 8 == 4


def test_aligned_layout_learns_the_same_bits() -> None:
    """Whole cycles: every named parameter, Adam moment and target the same, gaps zero."""
    from flashsac_bench.learner.layout import GAP_PREFIX

    plain = tiny_learner(
        seed=3, gemm_align=8, actor_hidden_dim=12, path_options={"aligned_layout": False}
    )
    packed = tiny_learner(
        seed=3, gemm_align=8, actor_hidden_dim=12, path_options={"aligned_layout": True}
    )
    layouts = {
        "actor": (plain.statics.actor_param_layout, packed.statics.actor_param_layout),
        "critic": (plain.statics.critic_param_layout, packed.statics.critic_param_layout),
    }
    assert any(n.startswith(GAP_PREFIX) for _, lp in layouts.values() for n in lp.entries)
    for _ in range(3):
        plain.update()
        packed.update()
    a, b = plain.state.tensors(), packed.state.tensors()
    compared = 0
    for key in a:
        net = (
            "actor"
            if key.startswith("actor")
            else "critic"
            if key.startswith(("critic", "target"))
            else None
        )
        if net is None or a[key].shape == b[key].shape:
            assert torch.equal(a[key], b[key]), key
            continue
        lp, lq = layouts[net]
        va, vb = lp.views(a[key]), lq.views(b[key])
        for name, view in vb.items():
            if name.startswith(GAP_PREFIX):
                assert not view.any(), (key, name)
            else:
                assert torch.equal(view, va[name]), (key, name)
        compared += 1
    # params and Adam moments of every network with gaps (the critic's target too)
    gapped = [net for net, (_, lq) in layouts.items() if lq.numel != layouts[net][0].numel]
    assert compared == sum(4 if net == "critic" else 3 for net in gapped) > 0


def test_a_state_of_either_layout_loads_into_the_other_by_name() -> None:
    """Evaluation and export build the learner unaligned: a checkpoint of the aligned layout
    (and back) is re-laid by entry name, and both continue with the same bits."""
    plain = tiny_learner(seed=4, gemm_align=8, path_options={"aligned_layout": False})
    packed = tiny_learner(seed=4, gemm_align=8, path_options={"aligned_layout": True})
    assert packed.state.actor_params.numel() > plain.state.actor_params.numel()
    assert packed.num_parameters() == plain.num_parameters()  # gaps are not parameters
    plain.update()
    packed.update()
    sd_plain, sd_packed = plain.state_dict(), packed.state_dict()
    assert (sd_plain["layout_align"], sd_packed["layout_align"]) == (1, 8)
    plain.load_state_dict(sd_packed)
    packed.load_state_dict(sd_plain)
    a, b = plain.state_dict()["tensors"], packed.state_dict()["tensors"]
    assert all(torch.equal(a[k], sd_plain["tensors"][k]) for k in a)
    assert all(torch.equal(b[k], sd_packed["tensors"][k]) for k in b)
    older = {k: v for k, v in sd_plain.items() if k != "layout_align"}  # before the option
    packed.load_state_dict(older)
    assert all(torch.equal(packed.state_dict()["tensors"][k], sd_packed["tensors"][k]) for k in b)
