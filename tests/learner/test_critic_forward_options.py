"""path.joint_critic_forward and path.shared_input_stats compute the critic update unchanged.

Both only regroup work: the target and online critic as one 4-member ensemble (every op is per
member), and the input BN's batch statistics of the common 2B input computed once. On the CPU
in eager mode the gradient, loss, Q mean and both critics' next BN buffers come out bit for bit
as in the default code; a sabotage check (one target member's weights perturbed, in the joint
run only) shows the comparison sees the target half.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from helpers import BATCH, DIMS, state_diff, tiny_learner

from flashsac_bench.learner.updates import critic_grad

OPTIONS = [
    {"joint_critic_forward": True},
    {"shared_input_stats": True},
    {"joint_critic_forward": True, "shared_input_stats": True},
]


def _inputs(learner):
    g = torch.Generator().manual_seed(3)
    rows = learner.ring.storage[:BATCH].clone()
    return rows, torch.randn(BATCH, DIMS.action, generator=g), torch.tensor(1.3)


def _trained(learner):
    """A few cycles first, so that target != online and BN buffers have moved."""
    for _ in range(2):
        learner.update()
    return learner


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o))
def test_critic_grad_values_and_gradient_are_bit_identical(options):
    learner = _trained(tiny_learner())
    st, s = learner.statics, learner.state
    assert not torch.equal(s.target_params, s.critic_params)
    base = critic_grad(st, s, *_inputs(learner))
    other = critic_grad(replace(st, **options), s, *_inputs(learner))
    names = ("grad", "loss", "q_mean", "online buffers", "target buffers")
    for name, a, b in zip(names, base, other, strict=True):
        assert torch.equal(a, b), f"{name} differs by {(a - b).abs().max().item()}"
    assert base[0].abs().sum() > 0


def test_joint_forward_comparison_sees_the_target_half():
    learner = _trained(tiny_learner())
    st, s = learner.statics, learner.state
    base = critic_grad(st, s, *_inputs(learner))
    # Sabotage: the joint run sees slightly different target weights than the default run.
    target = s.target_params.clone()
    s.target_params.add_(1e-3 * torch.randn_like(s.target_params))
    joint = critic_grad(replace(st, joint_critic_forward=True), s, *_inputs(learner))
    s.target_params.copy_(target)
    assert not torch.equal(base[0], joint[0])  # the TD target moved: so did the gradient
    assert not torch.equal(base[4], joint[4])  # and the target's BN statistics


@pytest.mark.parametrize("path", ["eager", "compile"])
def test_whole_cycles_with_both_options_match_the_default(path):
    both = tiny_learner(path, path_options=OPTIONS[2])
    plain = tiny_learner(path)
    for _ in range(3):
        both.update()
        plain.update()
    diff = state_diff(both, plain)
    if path == "eager":
        assert max(diff.values()) == 0.0, diff
    else:  # different Inductor kernels for the regrouped work: fp32 rounding
        assert max(diff.values()) < 1e-5, diff
    torch._dynamo.reset()
