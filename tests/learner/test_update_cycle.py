"""The update cycle: what it changes, finite guard, checkpoint round trip, update plans."""

from __future__ import annotations

import math

import pytest
import torch

from flashsac_bench.config.update import UpdateConfig
from flashsac_bench.learner.cycle import plan_cycle
from tests.learner.helpers import BATCH, DIMS, fill_ring, state_diff, tiny_learner

ALWAYS_CHANGES = {"rng.counter", "metrics"}


def changed(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> set[str]:
    return {k for k in before if not torch.equal(before[k], after[k])}


def _rows_and_noise(learner, seed=0):
    g = torch.Generator().manual_seed(seed)
    rows = learner.ring.storage[:BATCH].clone()
    return rows, torch.randn(BATCH, DIMS.action, generator=g)


def test_plans_follow_unilab_order():
    u2 = plan_cycle(UpdateConfig(updates_per_step=2, policy_frequency=2))
    assert [(op.kind, op.batch) for op in u2] == [("critic", 0), ("actor", 0), ("critic", 1)]
    u8 = plan_cycle(UpdateConfig(updates_per_step=8, policy_frequency=2))
    assert sum(op.kind == "critic" for op in u8) == 8
    assert [op.batch for op in u8 if op.kind == "actor"] == [0, 2, 4, 6]
    every = plan_cycle(UpdateConfig(updates_per_step=2, policy_frequency=1))
    assert [op.kind for op in every] == ["critic", "actor", "critic", "actor"]
    assert all(op.update_target for op in u8 if op.kind == "critic")  # Polyak after each


def test_full_cycle_changes_exactly_the_expected_state():
    learner = tiny_learner()
    before = learner.state.snapshot()
    learner.update()
    after = learner.state.tensors()
    unchanged = set(before) - changed(before, after)
    # Acting state, reward statistics and the RNG seed are not the update's business.
    assert unchanged == {
        "rng.key",
        "explore.noise",
        "explore.count",
        "explore.repeat",
        "reward.returns",
        "reward.returns_abs_max",
        "reward.mean",
        "reward.var",
        "reward.count",
    }
    assert after["critic.adam.step"].item() == 2  # u2: 2 critic updates
    assert after["actor.adam.step"].item() == 1  # 1 actor update
    assert after["temperature.adam.step"].item() == 1
    assert after["critic.sched_step"].item() == 2 and after["actor.sched_step"].item() == 1
    m = learner.read_metrics()
    assert m["critic_skipped"] == 0 and m["actor_skipped"] == 0
    assert all(math.isfinite(v) for v in m.values())


def test_critic_step_touches_only_critic_side():
    learner = tiny_learner()
    rows, eps = _rows_and_noise(learner)
    before = learner.state.snapshot()
    learner.path.critic(rows, eps, torch.tensor(1.0), True)
    after = learner.state.tensors()
    assert changed(before, after) == {
        "critic.params",
        "critic.buffers",
        "critic.adam.exp_avg",
        "critic.adam.exp_avg_sq",
        "critic.adam.step",
        "critic.sched_step",
        "target.params",
        "target.buffers",
        "metrics",
    }
    # Polyak by hand: target <- target + tau * (online - target), tau = 0.01.
    expected = before["target.params"] + 0.01 * (after["critic.params"] - before["target.params"])
    torch.testing.assert_close(after["target.params"], expected)


def test_critic_step_without_target_update_leaves_target_params():
    learner = tiny_learner()
    rows, eps = _rows_and_noise(learner)
    before = learner.state.snapshot()
    learner.path.critic(rows, eps, torch.tensor(1.0), False)
    assert torch.equal(learner.state.target_params, before["target.params"])


def test_actor_step_touches_only_actor_and_temperature():
    learner = tiny_learner()
    rows, eps = _rows_and_noise(learner)
    before = learner.state.snapshot()
    learner.path.actor(rows, eps)
    after = learner.state.tensors()
    assert changed(before, after) == {
        "actor.params",
        "actor.buffers",
        "actor.adam.exp_avg",
        "actor.adam.exp_avg_sq",
        "actor.adam.step",
        "actor.sched_step",
        "temperature.log_temp",
        "temperature.adam.exp_avg",
        "temperature.adam.exp_avg_sq",
        "temperature.adam.step",
        "metrics",
    }
    # First Adam step moves by lr * sign(grad); grad of alpha*(H - H_target) wrt log_temp is
    # alpha*(H - H_target), whose sign is that of (H - H_target).
    m = learner.read_metrics()
    h_target = learner.statics.target_entropy
    direction = -math.copysign(1.0, m["entropy"] - h_target)
    delta = (after["temperature.log_temp"] - before["temperature.log_temp"]).item()
    # float32 log_temp ~ -4.6 resolves ~5e-7, hence the tolerance.
    assert math.isclose(delta, direction * 3e-4, rel_tol=1e-2)


# Which updates a NaN in each column must stop: rewards only enter the critic's target, actor
# observations only the actor (and next actions), critic observations both.
@pytest.mark.parametrize(
    ("column", "critic_skips", "actor_skips"),
    [("rewards", True, False), ("obs", False, True), ("critic_obs", True, True)],
)
def test_non_finite_loss_skips_without_touching_weights_or_optimizer(
    column, critic_skips, actor_skips
):
    learner = tiny_learner()
    a, b = learner.statics.rows.span(column)
    learner.ring.storage[:, a:b] = float("nan")
    before = learner.state.snapshot()
    learner.update()
    after = learner.state.tensors()
    m = learner.read_metrics()
    assert m["critic_skipped"] == (2 if critic_skips else 0)
    assert m["actor_skipped"] == (1 if actor_skips else 0)
    # Schedules advance regardless (they count attempted updates).
    assert after["critic.sched_step"].item() == 2 and after["actor.sched_step"].item() == 1
    for prefixes, skipped in (
        (("critic.", "target."), critic_skips),
        (("actor.", "temperature."), actor_skips),
    ):
        keys = [k for k in before if k.startswith(prefixes) and not k.endswith("sched_step")]
        if skipped:
            for k in keys:
                assert torch.equal(before[k], after[k]), k
        else:
            assert any(not torch.equal(before[k], after[k]) for k in keys)
            assert all(torch.isfinite(after[k]).all() for k in keys)


def test_state_dict_round_trip_reproduces_next_update_bit_for_bit():
    a = tiny_learner(seed=0)
    a.update()
    sd, ring = a.state_dict(), a.ring.state_dict()
    b = tiny_learner(seed=5, fill_steps=2)  # different weights and replay contents
    assert max(state_diff(a, b).values()) > 0
    b.load_state_dict(sd)
    b.ring.load_state_dict(ring)
    a.update()
    b.update()
    assert all(v == 0.0 for v in state_diff(a, b).values()), state_diff(a, b)


def test_load_state_dict_rejects_other_dims():
    a = tiny_learner()
    sd = a.state_dict()
    sd["dims"] = (1, 2, 3)
    with pytest.raises(ValueError, match="dims"):
        a.load_state_dict(sd)


def test_update_requires_a_batch_in_the_ring():
    learner = tiny_learner(fill_steps=1)  # 4 rows < batch 8
    with pytest.raises(RuntimeError, match="fewer than batch_size"):
        learner.update()
    fill_ring(learner, 1)
    learner.update()


def test_u8_cycle_counts():
    learner = tiny_learner(updates_per_step=8, policy_frequency=2, fill_steps=16)
    learner.update()
    s = learner.state
    assert s.critic_adam.step.item() == 8 and s.actor_adam.step.item() == 4
    assert s.temp_adam.step.item() == 4
