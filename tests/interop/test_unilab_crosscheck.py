"""Our learner against unilab-rl 1.4.15's FlashSACLearner (CPU, fp32): same converted weights,
same batch, same injected noise, one critic + actor + temperature update, Polyak and projection.

Every place where the two differ on purpose has a named switch or tolerance here and an entry in
docs/unilab_differences.md (item numbers below). The sabotage tests edit one op of our update at
a time and require the cross-check to fail.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch

try:
    import uni_rl
    from uni_rl.algos.flash_sac import FlashSACLearner as UniLabLearner  # noqa: F401
except ImportError as err:  # a user's plain install
    pytest.skip(
        f"unilab-rl is not importable ({err}); `pip install --no-deps unilab-rl==1.4.15` "
        "(CI does) to run the cross-check",
        allow_module_level=True,
    )

from flashsac_bench.interop import unilab as ui
from flashsac_bench.learner.distributional import categorical_projection
from flashsac_bench.learner.layout import Layout
from flashsac_bench.learner.projection import Projector
from tests.interop import crosscheck_lib as X

if uni_rl.__version__ != ui.UNILAB_RL_VERSION:
    pytest.skip(
        f"the cross-check is pinned to unilab-rl {ui.UNILAB_RL_VERSION}, "
        f"found {uni_rl.__version__}",
        allow_module_level=True,
    )


def _base(small: bool) -> dict:
    """Our learner after warm-up updates, its state and its UniLab conversion (before the
    compared update), and UniLab's run of that update on our batch and noise."""
    learner = X.make_learner(small=small)
    before = learner.state.snapshot()
    sd_before = ui.unilab_state(learner, 0, "cpu")
    ours, inputs = X.run_ours(learner)
    after_ours = learner.state.snapshot()
    theirs_learner = X.unilab_learner(learner, copy.deepcopy(sd_before))
    theirs = X.run_theirs(learner, theirs_learner, inputs)
    after_theirs = X.state_after_theirs(learner, theirs_learner)
    learner.state.restore(before)
    return {
        "learner": learner,
        "before": before,
        "sd_before": sd_before,
        "ours": ours,
        "inputs": inputs,
        "after_ours": after_ours,
        "theirs": theirs,
        "after_theirs": after_theirs,
    }


@pytest.fixture(scope="module")
def base():
    """G1 sizes (obs 98, critic obs 101, actions 29, hidden 128 / 256, 101 atoms)."""
    return _base(small=False)


@pytest.fixture(scope="module")
def small():
    """Small networks for the sabotage tests (X.SMALL_*)."""
    return _base(small=True)


# ---------------------------------------------------------------------------- layout
def test_parameter_counts_names_and_orders_match_unilab(base):
    learner = base["learner"]
    theirs = X.unilab_learner(learner)
    n_actor = sum(p.numel() for p in theirs.actor.parameters())
    n_critic = sum(p.numel() for p in theirs.critic.parameters())
    assert (n_actor, n_critic) == (285_054, 2_226_898)  # the counts, G1 sizes
    assert learner.num_parameters()["actor"] == n_actor
    assert learner.num_parameters()["critic"] == n_critic
    a, c = ui.actor_fields(2), ui.critic_fields(2)
    # Adam state indices follow parameters(); the file's key order follows state_dict().
    assert ui.parameter_names(a) == [n for n, _ in theirs.actor.named_parameters()]
    assert ui.parameter_names(c) == [n for n, _ in theirs.critic.named_parameters()]
    assert ui.state_dict_names(a, True) == list(theirs.actor.state_dict())
    assert ui.state_dict_names(c, False) == list(theirs.critic.state_dict())
    assert torch.equal(theirs.actor.zeta_cdf, ui.zeta_cdf(2.0, 16))
    assert theirs.target_entropy == pytest.approx(learner.statics.target_entropy, rel=1e-12)


def test_conversion_round_trips_are_exact(base):
    learner = base["learner"]
    # ours -> UniLab -> ours: every converted tensor bit for bit
    theirs = X.unilab_learner(learner)
    scratch = copy.deepcopy(learner)
    ui.load_unilab_state(scratch, theirs.get_state_dict())
    ta, tb = learner.state.tensors(), scratch.state.tensors()
    for key in ta:
        if key.startswith(("rng.", "explore.", "metrics", "reward.returns")):
            continue  # ours alone / reset on conversion (load_unilab_state's docstring)
        if key in ("reward.mean", "reward.var", "reward.count"):  # float64 -> float32 -> 64
            assert torch.allclose(ta[key], tb[key], rtol=1e-7, atol=0), key
            continue
        assert torch.equal(ta[key], tb[key]), key
    # UniLab (after its own update: Adam state, schedulers, BN stats) -> ours -> UniLab
    batch = X.unilab_batch(learner, base["inputs"]["rows"])
    theirs.update_critic(batch)
    theirs.update_actor(batch)
    theirs.soft_update_target()
    sd = theirs.get_state_dict()
    ui.load_unilab_state(scratch, sd)
    back = ui.unilab_state(scratch, sd["update_count"], "cpu")
    for name in ("actor", "critic", "target_critic", "temperature"):
        assert list(back[name]) == list(sd[name])
        for k, v in sd[name].items():
            assert torch.equal(back[name][k], v), (name, k)
    for name in ("actor_optimizer", "critic_optimizer", "temperature_optimizer"):
        for i, st in sd[name]["state"].items():
            for k in ("step", "exp_avg", "exp_avg_sq"):
                assert torch.equal(back[name]["state"][i][k], st[k]), (name, i, k)
        assert back[name]["param_groups"][0]["lr"] == pytest.approx(
            sd[name]["param_groups"][0]["lr"], rel=1e-12
        )
    for name in ("actor_scheduler", "critic_scheduler", "temperature_scheduler"):
        assert back[name]["last_epoch"] == sd[name]["last_epoch"]
    X.unilab_learner(learner, back)  # and UniLab's load_state_dict takes it


# ---------------------------------------------------------------------------- the cross-check
def _checks(base, ours=None, after_ours=None, theirs=None) -> list[X.Check]:
    return X.compare(
        base["learner"],
        ours or base["ours"],
        theirs or base["theirs"],
        base["before"],
        after_ours or base["after_ours"],
        base["after_theirs"],
    )


@pytest.mark.parametrize("size", ["base", "small"])
def test_one_update_matches_unilab(size, request):
    base = request.getfixturevalue(size)
    checks = _checks(base)
    names = {c.name for c in checks}
    for needed in X.INTERMEDIATES:
        assert needed in names
    assert any(n.startswith("after.target.params[") for n in names)
    bad = X.failures(checks)
    assert not bad, "\n" + X.report(bad)
    # The compared update really moved everything compared (so each check can fail).
    for key in X.STATE_KEYS:
        assert not torch.equal(base["before"][key], base["after_ours"][key]), key


def test_batch_follows_our_env_contract(base):
    c = base["learner"].statics.rows.split(base["inputs"]["rows"])
    assert c["terminated"].sum() > 0 and c["truncated"].sum() > 0  # both kinds in the batch
    assert not (c["terminated"] * c["truncated"]).any()  # never both (item 3 covers that case)


@pytest.mark.parametrize("sabotage", X.SABOTAGES, ids=lambda s: s.name)
def test_sabotaged_op_fails_the_cross_check(small, sabotage, monkeypatch):
    """On the small networks (test_one_update_matches_unilab[small] passes there)."""
    base = small
    bad, inputs = _edited_update_failures(base, sabotage, monkeypatch)
    # the same batch and noise as the compared update: only the edited op differs
    assert torch.equal(inputs["rows"], base["inputs"]["rows"])
    assert torch.equal(inputs["eps_actor"], base["inputs"]["eps_actor"])
    assert bad, f"editing {sabotage.old!r} -> {sabotage.new!r} went unnoticed"


@pytest.mark.parametrize("module", sorted({s.module for s in X.SABOTAGES}))
def test_unedited_module_copy_passes_the_cross_check(small, module, monkeypatch):
    """The control of the sabotage tests: the same re-execution and rebinding with a no-op
    edit passes, so each sabotage's failure comes from its one edited op."""
    first = next(s for s in X.SABOTAGES if s.module == module)
    noop = X.Sabotage(f"noop_{module}", module, first.old, first.old)
    bad, _ = _edited_update_failures(small, noop, monkeypatch)
    assert not bad, "\n" + X.report(bad)


def _edited_update_failures(base, edit, monkeypatch):
    """(failed checks, inputs) of one update of ours with `edit` applied to its module."""
    learner = base["learner"]
    learner.state.restore(base["before"])
    try:
        update_mod = X.install(edit, learner, monkeypatch)
        ours, inputs = X.run_ours(learner, update_mod)
        after = learner.state.snapshot()
    finally:
        learner.state.restore(base["before"])
    return X.failures(_checks(base, ours=ours, after_ours=after)), inputs


# ---------------------------------------------------------------------------- differences
def _run_theirs(base, switches: X.Switches) -> X.Record:
    learner = base["learner"]
    theirs = X.unilab_learner(learner, copy.deepcopy(base["sd_before"]))
    return X.run_theirs(learner, theirs, base["inputs"], switches)


def test_item1_shipped_log_prob_differs_by_its_cancellation_bound(base):
    """UPSTREAM_LOG_PROB_FROM_NOISE off: UniLab's Normal.log_prob(u) recomputes
    (u - mean) / std from the rounded u; its error is bounded by sum |eps| eps32 |u| / std."""
    shipped = _run_theirs(base, X.Switches(log_prob_from_noise=False))
    ours = base["ours"]
    learner = base["learner"]
    eps32 = torch.finfo(torch.float32).eps
    for prefix, eps in (
        ("critic.next", base["inputs"]["eps_next"]),
        ("actor.", base["inputs"]["eps_actor"]),
    ):
        sep = "_" if prefix.endswith("next") else ""
        lp = f"{prefix}{sep}log_prob"
        b = eps.shape[0]
        mean = ours.values[f"{prefix}{sep}mean"][:b].double()
        std = ours.values[f"{prefix}{sep}log_std"][:b].double().exp()
        u = mean + std * eps.double()
        bound = (eps.abs() * eps32 * u.abs() / std).sum(-1)
        bound += 8 * eps32 * (eps.double() ** 2 + 1.0 + std.log().abs()).sum(-1)
        diff = (shipped.values[lp].double() - ours.values[lp].double()).abs()
        assert (diff <= bound).all(), (diff - bound).max()
        # ... and it is a real difference: larger than with the switch on
        switched = (base["theirs"].values[lp].double() - ours.values[lp].double()).abs()
        assert diff.max() > 4 * switched.max()
    assert learner.cfg.temp_init > 0  # the difference reaches the losses only through alpha


def test_item1_minimal_reproduction():
    mean, std, eps = torch.tensor([3.0]), torch.tensor([1e-4]), torch.tensor([1.0])
    u = mean + std * eps
    shipped = torch.distributions.Normal(mean, std).log_prob(u)
    exact = -0.5 * eps**2 - std.log() - 0.5 * math.log(2 * math.pi)
    assert (shipped - exact).abs().item() > 1e-4  # rounding of u (ulp 2.4e-7) / std 1e-4


def test_item2_shipped_bin_width_differs_by_its_fp32_bound(base):
    """UPSTREAM_EXACT_BIN_WIDTH off: UniLab's bin width is support[1] - support[0] of the
    float32 support; atom i then lands at i * (1 + r) with r its relative rounding."""
    shipped = _run_theirs(base, X.Switches(exact_bin_width=False))
    cfg = base["learner"].cfg
    support = torch.linspace(cfg.v_min, cfg.v_max, cfg.num_atoms)
    dz = (cfg.v_max - cfg.v_min) / (cfg.num_atoms - 1)
    r = abs(float(support[1] - support[0]) - dz) / dz
    assert r > 0  # fp32's -4.9 is not exact
    bound = (cfg.num_atoms - 1) * r * 1.01 + 1e-6  # mass moved per atom <= its position error
    diff = (shipped.values["critic.td_target"] - base["ours"].values["critic.td_target"]).abs()
    assert 1e-6 < diff.max().item() <= bound


def test_item2_minimal_reproduction():
    from uni_rl.algos.flash_sac.update import compute_categorical_td_target

    k = 101
    support = torch.linspace(-5.0, 5.0, k)
    probs = torch.zeros(1, k)
    probs[0, 90] = 1.0  # all mass on z = 4.0
    zero, one = torch.zeros(1), torch.ones(1)
    # reward 0, bootstrap, gamma 1, no entropy: the projection must return its input
    theirs = compute_categorical_td_target(support, probs.log(), zero, zero, zero, zero, 1.0)
    ours = categorical_projection(probs, zero, one, 1.0, zero, -5.0, 5.0)
    assert torch.allclose(ours, probs, rtol=0, atol=1e-6)
    assert theirs[0, 91].item() > 1e-5  # UniLab moves mass to the next atom


def test_item3_both_flags_bootstrap_upstream_but_not_here():
    """A row both terminated and truncated (our env never emits one; UniLab's env contract
    allows it): UniLab bootstraps it (clamp(1 - done + truncated)), we do not."""
    from uni_rl.algos.flash_sac.update import compute_categorical_td_target

    g = torch.Generator().manual_seed(3)
    k, b = 101, 4
    logp = torch.log_softmax(torch.randn(b, k, generator=g), -1)
    reward, entropy = torch.randn(b, generator=g), torch.randn(b, generator=g) * 0.1
    support = torch.linspace(-5.0, 5.0, k)
    one = torch.ones(b)
    theirs = compute_categorical_td_target(support, logp, reward, one, one, entropy, 0.97)
    as_if_alive = categorical_projection(logp.exp(), reward, one, 0.97, entropy, -5.0, 5.0)
    ours = categorical_projection(logp.exp(), reward, 1.0 - one, 0.97, entropy, -5.0, 5.0)
    assert torch.allclose(theirs, as_if_alive, atol=2e-4)  # item 2's bin width aside
    assert (theirs - ours).abs().max() > 0.1


def test_item4_non_finite_step_is_skipped_more_completely_here(base):
    """A NaN reward: both skip the critic's optimizer step; UniLab (CPU) still writes the BN
    running statistics and Polyak-averages the target, we leave the critic side untouched."""
    learner = base["learner"]
    learner.state.restore(base["before"])
    rows = base["inputs"]["rows"].clone()
    col = learner.statics.rows.span("rewards")[0]
    rows[0, col] = float("nan")
    s, before = learner.state, base["before"]
    try:
        learner.path.critic(rows, base["inputs"]["eps_next"], base["inputs"]["divisor"], True)
        ours = s.snapshot()
    finally:
        learner.state.restore(before)
    theirs = X.unilab_learner(learner, copy.deepcopy(base["sd_before"]))
    with X.injected_noise([base["inputs"]["eps_next"]], log_prob_from_noise=True):
        metrics = theirs.update_critic(X.unilab_batch(learner, rows))
    theirs.soft_update_target()
    after = X.state_after_theirs(learner, theirs)
    assert math.isnan(metrics["Loss/critic"])
    for key in ("critic.params", "critic.buffers", "target.params", "target.buffers"):
        assert torch.equal(ours[key], before[key]), key  # ours: nothing written
    for key in ("critic.adam.exp_avg", "critic.adam.exp_avg_sq", "critic.adam.step"):
        assert torch.equal(ours[key], before[key]) and torch.equal(after[key], before[key])
    # UniLab re-projects the unchanged critic (rounding only) ...
    assert torch.allclose(after["critic.params"], before["critic.params"], rtol=0, atol=1e-6)
    # ... but writes the BN statistics of both critics and moves the target
    assert not torch.equal(after["critic.buffers"], before["critic.buffers"])
    assert not torch.equal(after["target.buffers"], before["target.buffers"])
    moved = (after["target.params"] - before["target.params"]).abs().max().item()
    assert moved > 1e-6
    assert float(ours["critic.sched_step"]) == float(after["critic.sched_step"])  # both step

    # A NaN critic observation makes the actor loss NaN but not the entropy: UniLab still takes
    # the temperature step; ours skips the pair (one update of actor + temperature).
    rows = base["inputs"]["rows"].clone()
    rows[0, learner.statics.rows.span("critic_obs")[0]] = float("nan")
    try:
        learner.path.actor(rows, base["inputs"]["eps_actor"])
        ours = s.snapshot()
    finally:
        learner.state.restore(before)
    theirs = X.unilab_learner(learner, copy.deepcopy(base["sd_before"]))
    filler = torch.zeros_like(base["inputs"]["eps_actor"])
    with X.injected_noise([torch.cat([base["inputs"]["eps_actor"], filler])], True):
        metrics = theirs.update_actor(X.unilab_batch(learner, rows))
    after = X.state_after_theirs(learner, theirs)
    assert math.isnan(metrics["Loss/actor"]) and math.isfinite(metrics["Loss/temperature"])
    for key in ("actor.params", "actor.buffers", "temperature.log_temp"):
        assert torch.equal(ours[key], before[key]), key
    assert torch.equal(after["actor.adam.exp_avg"], before["actor.adam.exp_avg"])
    assert not torch.equal(after["temperature.log_temp"], before["temperature.log_temp"])
    assert not torch.equal(after["actor.buffers"], before["actor.buffers"])


def test_item5_exploration_repeat_counter_is_shared_here_and_per_env_upstream(base):
    learner = base["learner"]
    theirs = X.unilab_learner(learner)
    n, steps = X.NUM_ENVS, 24
    obs = torch.randn(n, learner.dims.obs, generator=torch.Generator().manual_seed(5))
    torch.manual_seed(0)
    prev_t = prev_o = None
    mixed_upstream = mixed_ours = False
    for _ in range(steps):
        theirs.actor.explore(obs)
        learner.act(obs)
        t, o = theirs.actor._noise.clone(), learner.state.explore.noise.clone()
        if prev_t is not None:
            changed_t = (t != prev_t).any(-1)
            changed_o = (o != prev_o).any(-1)
            mixed_upstream |= bool(changed_t.any() and not changed_t.all())
            mixed_ours |= bool(changed_o.any() and not changed_o.all())
        prev_t, prev_o = t, o
    learner.state.restore(base["before"])
    assert mixed_upstream  # per-env counters: some envs resample while others hold
    assert not mixed_ours  # one counter: all envs resample together (official FlashSAC)


def test_item6_rms_projection_eps_only_matters_for_degenerate_gamma():
    from uni_rl.algos.flash_sac.layers import EnsembleUnitRMSNorm

    layout = Layout()
    layout.add("rms", (2, 256), "rms")
    proj = Projector(layout.grouped(), "cpu")
    up = EnsembleUnitRMSNorm(2, 256)
    for scale in (1.0, 1e-4 / 16):  # ||gamma|| ~ 16 (trained nets: sqrt(256)) and ~ 1e-4
        gamma = torch.randn(2, 256, generator=torch.Generator().manual_seed(1)) * scale
        with torch.no_grad():
            up.weight.copy_(gamma)
        up.normalize_parameters()
        ours = proj(gamma.reshape(-1)).view(2, 256)
        # ours: sqrt(d) g / max(|g|, 1e-8) (F.normalize); UniLab: sqrt(d) g / sqrt(|g|^2 + 1e-8)
        norm2 = gamma.double().pow(2).sum(-1)
        expected = (norm2 / (norm2 + 1e-8)).sqrt()
        ratio = up.weight.norm(dim=-1).double() / ours.norm(dim=-1).double()
        assert torch.allclose(ratio, expected, rtol=1e-6)
        if scale == 1.0:
            assert torch.allclose(ours, up.weight, rtol=1e-6, atol=0)  # invisible in fp32
        else:
            assert (1 - ratio).min() > 0.2  # |g|^2 ~ 1e-8: the eps halves the norm's square


def test_reward_normalizer_matches_unilab_on_the_same_stream():
    """REWARD_STATS_RTOL: ours accumulate in float64, UniLab's RunningMeanStd in float32."""
    from uni_rl.algos.flash_sac.learner import RewardNormalizer as UniLabRewardNormalizer

    from flashsac_bench.learner.reward_normalizer import RewardNormalizer

    n, t, gamma = 32, 200, 0.97
    g = torch.Generator().manual_seed(11)
    rewards = torch.randn(t, n, generator=g) * 0.7 + 0.2
    dones = (torch.rand(t, n, generator=g) < 0.05).float()
    ours = RewardNormalizer(n, gamma, 5.0, True, "cpu")
    for i in range(t):
        ours.update(rewards[i], dones[i])
    theirs = UniLabRewardNormalizer(gamma, 5.0, torch.device("cpu"))
    theirs.update_from_transitions(rewards, dones)
    rtol = X.REWARD_STATS_RTOL
    assert torch.allclose(ours.returns, theirs.g_r, rtol=1e-6, atol=1e-6)
    assert ours.returns_abs_max.item() == pytest.approx(theirs.g_r_max.item(), rel=1e-6)
    assert ours.mean.item() == pytest.approx(theirs.rms.mean.item(), rel=rtol)
    assert ours.var.item() == pytest.approx(theirs.rms.var.item(), rel=rtol)
    assert ours.count.item() == pytest.approx(theirs.rms.count.item(), rel=rtol)
    one = torch.ones(())
    assert (one / ours.divisor()).item() == pytest.approx(theirs.normalize(one).item(), rel=rtol)
    # and the comparison can fail: a different gamma moves the statistics well beyond it
    other = RewardNormalizer(n, gamma * 1.01, 5.0, True, "cpu")
    for i in range(t):
        other.update(rewards[i], dones[i])
    assert abs(other.var.item() / theirs.rms.var.item() - 1) > 100 * rtol


@pytest.mark.parametrize("warmup", [0, 1000])
def test_lr_schedule_matches_unilab(warmup):
    """Ours drives every optimizer from its step counter; UniLab's LambdaLR: peak * lambda."""
    from uni_rl.algos.flash_sac.update import build_lr_lambda

    from flashsac_bench.learner.schedule import LRSchedule

    init, peak, end, decay = 1e-4, 3e-4, 1.5e-4, 500_000
    ours = LRSchedule(init, peak, end, warmup, decay)
    lam = build_lr_lambda(init, peak, end, warmup, decay)
    for step in (0, 1, 500, 999, 1000, 1001, 250_000, 499_999, 500_000, 700_000):
        assert ours.lr_at(step) == pytest.approx(peak * lam(step), rel=1e-12), step
        assert ours.lr_tensor(torch.tensor(float(step))).item() == pytest.approx(
            peak * lam(step), rel=1e-6
        ), step
