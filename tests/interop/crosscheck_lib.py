"""Run one update of our learner and of unilab-rl's FlashSACLearner on the same state, batch and
noise, record every intermediate both compute, and compare them (tests/interop).

Ours: `FlashSACLearner.update()` (eager) with a one-critic + one-actor plan; spies on the
functions `learner/update.py` calls record their outputs, so the numbers are those of the real
update, not of a re-implementation. Theirs: `update_critic`, `update_actor`,
`soft_update_target` with forward hooks on its modules and wrappers around its TD-target
helpers; `torch.distributions.normal._standard_normal` (what `Normal.rsample` draws from) is
replaced by a queue of our counter-RNG noise.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
import types
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from flashsac_bench.config.learner import LearnerConfig
from flashsac_bench.config.update import UpdateConfig
from flashsac_bench.interop import unilab as ui
from flashsac_bench.learner import paths as paths_mod
from flashsac_bench.learner import update
from flashsac_bench.learner.learner import Dims, FlashSACLearner

DIMS = Dims()  # G1: obs 98, critic obs 101, actions 29 -- the sizes UniLab trains
BATCH = 64
# The sabotage tests run ~45 edited updates: on networks this size each takes milliseconds
# instead of a second (the comparison code and its tolerances are the same).
SMALL_DIMS = Dims(obs=10, critic_obs=12, action=4)
SMALL_LEARNER = {"actor_hidden_dim": 16, "critic_hidden_dim": 32}
SMALL_BATCH = 16
NUM_ENVS = 16
FILL_STEPS = 16
WARM_CYCLES = 2  # our updates before the compared one: Adam moments, BN stats, steps non-trivial
F32_EPS = torch.finfo(torch.float32).eps

# --- tolerances: each comparison's, with its reason (docs/unilab_differences.md) ------------
# Same math, different summation order (einsum vs matmul, F.batch_norm vs var_mean, scatter_add
# vs the hat-function projection): relative to the largest element of the compared tensor.
CROSSCHECK_RTOL = 1e-5
# A stored fp32 weight w + dw rounds to an ulp of w; two correct updates of the same weight may
# differ by a few such roundings (and the projection's norm reduction order moves every element
# of a row by its factor's rounding). State deltas are therefore compared with
# |da - db| <= CROSSCHECK_RTOL * max|db| + STATE_ULPS * eps32 * max|w|.
STATE_ULPS = 4.0
# Reward statistics: ours accumulate in float64 (counts reach 1e9 in long runs), UniLab's in
# float32; over the test's stream the float32 rounding stays below this.
REWARD_STATS_RTOL = 2e-6
# A BN running mean moves by momentum * (batch mean - running mean). Where the batch mean is
# zero in exact arithmetic (the features after a BN'd embedding are zero-mean), both learners
# write momentum * rounding noise of size eps32 * std: the running-mean comparison gets that
# floor, momentum * STATE_ULPS * eps32 * sqrt(max running var).
BN_MEAN_FLOOR_ULPS = STATE_ULPS


@dataclass(frozen=True)
class Switches:
    """The two places where UniLab's shipped code rounds differently from ours on purpose-less
    grounds (docs/unilab_differences.md, items 1 and 2). On: its update is compared with that
    one rounding removed, everything else as shipped; tests/interop checks each shipped
    difference against its own bound with the switch off."""

    # UPSTREAM_LOG_PROB_FROM_NOISE: Normal.log_prob evaluated from the injected noise.
    log_prob_from_noise: bool = True
    # UPSTREAM_EXACT_BIN_WIDTH: compute_categorical_td_target's bin width (v_max - v_min)/(K-1)
    # instead of support[1] - support[0] of the float32 support.
    exact_bin_width: bool = True


UPSTREAM_BIN_WIDTH_LINE = "bin_width = (support[..., 1:2] - support_min).clamp_min(1e-8)"
EXACT_BIN_WIDTH_LINE = "bin_width = (support_max - support_min) / (num_bins - 1)"


def mutant(module: types.ModuleType, replacements: list[tuple[str, str]]) -> types.ModuleType:
    """`module` re-executed from its source with each `old` text (which must occur exactly
    once) replaced by `new`: the shipped code with exactly the named edits."""
    src = inspect.getsource(module)
    for old, new in replacements:
        count = src.count(old)
        if count != 1:
            raise AssertionError(f"{module.__name__}: {old!r} occurs {count} times, not once")
        src = src.replace(old, new)
    out = types.ModuleType(module.__name__)
    out.__file__ = module.__file__
    exec(compile(src, f"<edited {module.__file__}>", "exec"), out.__dict__)
    return out


@dataclass
class Record:
    """What one side computed, by name (tensors on the CPU, float32/64)."""

    values: dict[str, torch.Tensor] = field(default_factory=dict)

    def put(self, name: str, value: Any) -> None:
        self.values[name] = _plain(torch.as_tensor(value)).detach().clone()


def _plain(t: torch.Tensor) -> torch.Tensor:
    """A tensor that escaped a torch.func transform, unwrapped to the plain tensor."""
    while torch._C._functorch.is_functorch_wrapped_tensor(t):
        t = torch._C._functorch.get_unwrapped(t)
    return t


# ---------------------------------------------------------------------------- setup
def make_learner(seed: int = 0, small: bool = False) -> FlashSACLearner:
    """Our learner with UniLab-default hyperparameters (gamma 0.97 as in our config), filled
    ring and reward statistics, after WARM_CYCLES updates. G1 sizes, or SMALL_* ones."""
    cfg = LearnerConfig(**(SMALL_LEARNER if small else {}))
    learner = FlashSACLearner(
        cfg,
        UpdateConfig(updates_per_step=1, policy_frequency=1),
        SMALL_DIMS if small else DIMS,
        num_envs=NUM_ENVS,
        batch_size=SMALL_BATCH if small else BATCH,
        replay_capacity=NUM_ENVS * FILL_STEPS,
        seed=seed,
    )
    g = torch.Generator().manual_seed(1000 + seed)
    n, d = NUM_ENVS, learner.dims
    for _ in range(FILL_STEPS):
        rewards = torch.randn(n, generator=g) * 0.5 + 0.3
        terminated = torch.rand(n, generator=g) < 0.15
        # Our env contract: terminated wins, the two flags are never both set.
        truncated = (torch.rand(n, generator=g) < 0.1) & ~terminated
        learner.ring.insert(
            obs=torch.randn(n, d.obs, generator=g),
            critic_obs=torch.randn(n, d.critic_obs, generator=g),
            next_obs=torch.randn(n, d.obs, generator=g),
            next_critic_obs=torch.randn(n, d.critic_obs, generator=g),
            actions=torch.rand(n, d.action, generator=g) * 2 - 1,
            rewards=rewards,
            terminated=terminated.float(),
            truncated=truncated.float(),
        )
        learner.update_reward_stats(rewards, (terminated | truncated).float())
    for _ in range(WARM_CYCLES):
        learner.update()
    return learner


def unilab_learner(learner: FlashSACLearner, sd: dict[str, Any] | None = None):
    """unilab-rl's CPU fp32 learner with the kwargs matching ours, holding `sd` (default: our
    learner's state converted)."""
    from uni_rl.algos.flash_sac import FlashSACLearner as UniLabLearner

    d = learner.dims
    kwargs = ui.unilab_learner_kwargs(learner.cfg, d.obs, d.critic_obs, d.action)
    theirs = UniLabLearner(
        **kwargs,
        device="cpu",
        use_amp=False,
        use_compile=False,
        compile_full_objectives=False,
        use_whole_cycle_cuda_graph=False,
    )
    theirs.load_state_dict(sd if sd is not None else ui.unilab_state(learner, 0, "cpu"))
    return theirs


# ---------------------------------------------------------------------------- our side
@contextmanager
def _spy(module: types.ModuleType, name: str, calls: list) -> Iterator[None]:
    real = getattr(module, name)

    def wrapper(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append((args, out))
        return out

    setattr(module, name, wrapper)
    try:
        yield
    finally:
        setattr(module, name, real)


SPIED = (
    "actor_policy",
    "tanh_normal_sample",
    "critic_distribution",
    "select_min_q",
    "categorical_projection",
    "actor_mean_log_std",
    "optimizer_step",  # the critic's and the actor's Adam + gate + projection (+ Polyak)
    "adam_candidate",  # the temperature's Adam step
)


def run_ours(
    learner: FlashSACLearner, update_mod: types.ModuleType = update
) -> tuple[Record, dict[str, torch.Tensor]]:
    """One cycle (critic + Polyak, then actor + temperature) with every intermediate recorded;
    also returns the batch rows and noise it drew (for the UniLab side). `update_mod`: the
    module whose critic_update / actor_update run (an edited copy in the sabotage tests)."""
    calls: dict[str, list] = defaultdict(list)
    inputs: dict[str, torch.Tensor] = {}
    real_c, real_a = update_mod.critic_update, update_mod.actor_update
    saved = paths_mod.critic_update, paths_mod.actor_update

    def critic_update(st, s, rows, eps_next, divisor, update_target, **kwargs):
        inputs.update(rows=rows.clone(), eps_next=eps_next.clone(), divisor=divisor.clone())
        return real_c(st, s, rows, eps_next, divisor, update_target, **kwargs)

    def actor_update(st, s, rows, eps, **kwargs):
        inputs.update(actor_rows=rows.clone(), eps_actor=eps.clone())
        return real_a(st, s, rows, eps, **kwargs)

    paths_mod.critic_update, paths_mod.actor_update = critic_update, actor_update
    try:
        with ExitStack() as stack:
            for name in SPIED:
                stack.enter_context(_spy(update_mod, name, calls[name]))
            learner.update()
    finally:
        paths_mod.critic_update, paths_mod.actor_update = saved
    assert torch.equal(inputs["rows"], inputs["actor_rows"]), "one batch for both updates"
    rec = Record()
    (mean, log_std) = calls["actor_policy"][0][1]
    rec.put("critic.next_mean", mean)
    rec.put("critic.next_log_std", log_std)
    next_action, next_log_prob = calls["tanh_normal_sample"][0][1]
    rec.put("critic.next_action", next_action)
    rec.put("critic.next_log_prob", next_log_prob)
    target_q, target_logp, _ = calls["critic_distribution"][0][1]
    rec.put("critic.target_q", target_q)
    rec.put("critic.target_log_probs", target_logp)
    rec.put("critic.min_q_next_log_probs", calls["select_min_q"][0][1])
    rec.put("critic.td_target", calls["categorical_projection"][0][1])
    online_q, online_logp, _ = calls["critic_distribution"][1][1]
    rec.put("critic.online_q", online_q)
    rec.put("critic.online_log_probs", online_logp)
    # optimizer_step(statics, projector, params, grad, ...): the gradient is argument 3.
    rec.put("critic.grad", calls["optimizer_step"][0][0][3])
    a_mean, a_log_std, _ = calls["actor_mean_log_std"][0][1]
    rec.put("actor.mean", a_mean)
    rec.put("actor.log_std", a_log_std)
    action, log_prob = calls["tanh_normal_sample"][1][1]
    rec.put("actor.action", action)
    rec.put("actor.log_prob", log_prob)
    rec.put("actor.q", calls["critic_distribution"][2][1][0])
    rec.put("actor.grad", calls["optimizer_step"][1][0][3])
    rec.put("temperature.grad", calls["adam_candidate"][0][0][1])
    m = learner.read_metrics()
    for ours, name in (
        ("critic_loss", "critic.loss"),
        ("actor_loss", "actor.loss"),
        ("entropy", "actor.entropy"),
        ("temperature_loss", "temperature.loss"),
    ):
        rec.put(name, m[ours])
    return rec, inputs


# ---------------------------------------------------------------------------- their side
def unilab_batch(learner: FlashSACLearner, rows: torch.Tensor) -> dict[str, torch.Tensor]:
    """UniLab's batch contract from our rows: dones = terminated | truncated."""
    c = learner.statics.rows.split(rows)
    return {
        "obs": c["obs"],
        "actions": c["actions"],
        "rewards": c["rewards"],
        "next_obs": c["next_obs"],
        "dones": ((c["terminated"] + c["truncated"]) > 0).float(),
        "truncated": c["truncated"],
        "critic": c["critic_obs"],
        "next_critic": c["next_critic_obs"],
    }


@contextmanager
def injected_noise(queue: list[torch.Tensor], log_prob_from_noise: bool) -> Iterator[None]:
    """Normal.rsample draws these tensors, in order, instead of torch's RNG.

    log_prob_from_noise (switch UPSTREAM_LOG_PROB_FROM_NOISE, docs/unilab_differences.md):
    Normal.log_prob(u) recomputes (u - mean) / std from the rounded sample u, which cancels
    catastrophically where std << |mean|; ours uses the noise itself (-eps^2 / 2 - log std - ..).
    With the switch on, UniLab's log_prob is evaluated the same way (same gradient paths:
    -log(scale)), so the rest of its update is compared without that rounding error.
    """
    import torch.distributions.normal as normal_mod

    real_draw, real_log_prob = normal_mod._standard_normal, normal_mod.Normal.log_prob
    last: list[torch.Tensor] = []

    def draw(shape, dtype, device):
        assert queue, "UniLab drew more noise than injected"
        eps = queue.pop(0)
        assert tuple(eps.shape) == tuple(shape), (tuple(eps.shape), tuple(shape))
        last[:] = [eps]
        return eps.to(dtype=dtype, device=device)

    def log_prob(self, value):
        eps = last[0]
        return -0.5 * eps * eps - self.scale.log() - 0.5 * math.log(2 * math.pi)

    normal_mod._standard_normal = draw
    if log_prob_from_noise:
        normal_mod.Normal.log_prob = log_prob
    try:
        yield
    finally:
        normal_mod._standard_normal = real_draw
        normal_mod.Normal.log_prob = real_log_prob


def run_theirs(
    learner: FlashSACLearner,
    theirs: Any,
    inputs: dict[str, torch.Tensor],
    switches: Switches = Switches(),
) -> Record:
    """UniLab's critic update, actor + temperature update, Polyak -- on our batch and noise."""
    import uni_rl.algos.flash_sac.learner as ul

    rec = Record()
    outs: dict[str, list] = defaultdict(list)
    hooks = [
        getattr(theirs, name).register_forward_hook(
            lambda _m, _a, out, name=name: outs[name].append(out)
        )
        for name in ("actor", "critic", "target_critic")
    ]
    real_sel, real_td = ul.select_min_q_log_probs, ul.compute_categorical_td_target
    td_fn = real_td
    if switches.exact_bin_width:
        import uni_rl.algos.flash_sac.update as uu

        td_fn = mutant(uu, [(UPSTREAM_BIN_WIDTH_LINE, EXACT_BIN_WIDTH_LINE)])
        td_fn = td_fn.compute_categorical_td_target

    def sel(*a, **k):
        out = real_sel(*a, **k)
        outs["select"].append(out)
        return out

    def td(*a, **k):
        out = td_fn(*a, **k)
        outs["td"].append(out)
        return out

    ul.select_min_q_log_probs, ul.compute_categorical_td_target = sel, td
    batch = unilab_batch(learner, inputs["rows"])
    b = inputs["rows"].shape[0]
    # Critic: the actor samples B next actions. Actor: 2B rows are sampled, the first half used
    # (the second half's noise cannot matter; an independent draw makes sure it does not).
    filler = torch.randn(b, learner.dims.action, generator=torch.Generator().manual_seed(7))
    queue = [inputs["eps_next"], torch.cat([inputs["eps_actor"], filler])]
    try:
        with injected_noise(queue, switches.log_prob_from_noise):
            cm = theirs.update_critic(batch)
            critic_grads = {n: p.grad.clone() for n, p in theirs.critic.named_parameters()}
            am = theirs.update_actor(batch)
            actor_grads = {n: p.grad.clone() for n, p in theirs.actor.named_parameters()}
            temp_grad = theirs.temperature.log_temp.grad.clone()
            theirs.soft_update_target()
        assert not queue, "UniLab drew less noise than injected"
    finally:
        for h in hooks:
            h.remove()
        ul.select_min_q_log_probs, ul.compute_categorical_td_target = real_sel, real_td
    st = learner.statics
    a_fields = ui.actor_fields(learner.cfg.actor_num_blocks)
    c_fields = ui.critic_fields(learner.cfg.critic_num_blocks)
    next_action, info = outs["actor"][0]
    rec.put("critic.next_mean", info["mean"])
    rec.put("critic.next_log_std", info["std"].log())
    rec.put("critic.next_action", next_action)
    rec.put("critic.next_log_prob", info["log_prob"])
    q, qinfo = outs["target_critic"][0]
    rec.put("critic.target_q", q)
    rec.put("critic.target_log_probs", qinfo["log_prob"])
    rec.put("critic.min_q_next_log_probs", outs["select"][0])
    rec.put("critic.td_target", outs["td"][0])
    q, qinfo = outs["critic"][0]
    rec.put("critic.online_q", q)
    rec.put("critic.online_log_probs", qinfo["log_prob"])
    rec.put("critic.grad", ui.flat_from_named(st.critic_param_layout, c_fields, critic_grads))
    action, info = outs["actor"][1]
    rec.put("actor.mean", info["mean"])
    rec.put("actor.log_std", info["std"].log())
    rec.put("actor.action", action[:b])
    rec.put("actor.log_prob", info["log_prob"][:b])
    rec.put("actor.q", outs["critic"][1][0])
    rec.put("actor.grad", ui.flat_from_named(st.actor_param_layout, a_fields, actor_grads))
    rec.put("temperature.grad", temp_grad)
    rec.put("critic.loss", cm["Loss/critic"])
    rec.put("actor.loss", am["Loss/actor"])
    rec.put("actor.entropy", am["Loss/entropy"])
    rec.put("temperature.loss", am["Loss/temperature"])
    return rec


def state_after_theirs(learner: FlashSACLearner, theirs: Any) -> dict[str, torch.Tensor]:
    """UniLab's state after its update, in our names and layout (via a scratch learner)."""
    scratch = copy.deepcopy(learner)
    ui.load_unilab_state(scratch, theirs.get_state_dict())
    return scratch.state.snapshot()


# ---------------------------------------------------------------------------- comparison
@dataclass(frozen=True)
class Check:
    name: str
    error: float  # normalized: <= 1 passes
    detail: str


def _rel(a: torch.Tensor, b: torch.Tensor, rtol: float) -> tuple[float, str]:
    a, b = a.double(), b.double()
    if a.shape != b.shape:
        return math.inf, f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
    scale = b.abs().max().item() if b.numel() else 0.0
    diff = (a - b).abs().max().item() if b.numel() else 0.0
    if not math.isfinite(diff):
        return math.inf, "non-finite"
    rel = diff / scale if scale > 0 else (0.0 if diff == 0 else math.inf)
    return rel / rtol, f"max|diff| {diff:.3g}, rel {rel:.3g} (rtol {rtol:g})"


INTERMEDIATES = (
    "critic.next_mean",
    "critic.next_log_std",
    "critic.next_action",
    "critic.next_log_prob",
    "critic.target_q",
    "critic.target_log_probs",
    "critic.min_q_next_log_probs",
    "critic.td_target",
    "critic.online_q",
    "critic.online_log_probs",
    "critic.loss",
    "critic.grad",
    "actor.mean",
    "actor.log_std",
    "actor.action",
    "actor.log_prob",
    "actor.q",
    "actor.loss",
    "actor.entropy",
    "actor.grad",
    "temperature.loss",
    "temperature.grad",
)

# State compared after the update: what one critic + actor + temperature update, the Polyak
# step and the projection write. (rng / explore / metrics are ours alone.)
STATE_KEYS = (
    "actor.params",
    "actor.buffers",
    "critic.params",
    "critic.buffers",
    "target.params",
    "target.buffers",
    "temperature.log_temp",
    "actor.adam.exp_avg",
    "actor.adam.exp_avg_sq",
    "critic.adam.exp_avg",
    "critic.adam.exp_avg_sq",
    "temperature.adam.exp_avg",
    "temperature.adam.exp_avg_sq",
)
STEP_KEYS = ("actor.adam.step", "critic.adam.step", "temperature.adam.step")
STEP_KEYS += ("critic.sched_step", "actor.sched_step")


def _layout_of(learner: FlashSACLearner, key: str):
    st = learner.statics
    if key.startswith("actor.") and key != "actor.buffers":
        return st.actor_param_layout
    if key == "actor.buffers":
        return st.actor_buffer_layout
    if key.endswith(".buffers"):
        return st.critic_buffer_layout
    if key.startswith(("critic.", "target.")):
        return st.critic_param_layout
    return None


def _state_delta_check(
    name: str, before: torch.Tensor, ours: torch.Tensor, theirs: torch.Tensor, floor: float = 0.0
) -> Check:
    """before / ours / theirs: float64 copies of one state tensor (or layout entry)."""
    da, db = ours - before, theirs - before
    if not torch.isfinite(da).all():
        return Check(name, math.inf, "non-finite")
    diff = (da - db).abs().max().item()
    allowed = CROSSCHECK_RTOL * db.abs().max().item()
    allowed += STATE_ULPS * F32_EPS * theirs.abs().max().item() + floor
    err = diff / allowed if allowed > 0 else (0.0 if diff == 0 else math.inf)
    return Check(name, err, f"max|d_ours - d_unilab| {diff:.3g}, allowed {allowed:.3g}")


def compare(
    learner: FlashSACLearner,
    ours: Record,
    theirs: Record,
    before: dict[str, torch.Tensor],
    after_ours: dict[str, torch.Tensor],
    after_theirs: dict[str, torch.Tensor],
) -> list[Check]:
    checks = []
    for name in INTERMEDIATES:
        err, detail = _rel(ours.values[name], theirs.values[name], CROSSCHECK_RTOL)
        checks.append(Check(name, err, detail))
    for key in STATE_KEYS:
        layout = _layout_of(learner, key)
        b, a, t = (x[key].double() for x in (before, after_ours, after_theirs))
        if layout is None:
            checks.append(_state_delta_check(f"after.{key}", b, a, t))
            continue
        # Per layout entry: a wrong update of one layer shows, however small that layer is.
        b, a, t = (layout.views(x) for x in (b, a, t))
        for entry in layout.entries:
            floor = 0.0
            if entry.endswith(".mean"):  # the BN running-mean noise floor (see its constant)
                std = t[entry.removesuffix(".mean") + ".var"].max().sqrt().item()
                floor = learner.cfg.bn_momentum * BN_MEAN_FLOOR_ULPS * F32_EPS * std
            name = f"after.{key}[{entry}]"
            checks.append(_state_delta_check(name, b[entry], a[entry], t[entry], floor))
    for key in STEP_KEYS:
        same = float(after_ours[key]) == float(after_theirs[key])
        detail = f"{float(after_ours[key])} vs {float(after_theirs[key])}"
        checks.append(Check(f"after.{key}", 0.0 if same else math.inf, detail))
    return checks


def failures(checks: list[Check]) -> list[Check]:
    return [c for c in checks if not c.error <= 1.0]


def report(checks: list[Check]) -> str:
    return "\n".join(
        f"{'FAIL' if not c.error <= 1 else 'ok  '} {c.name}: {c.detail}" for c in checks
    )


# ---------------------------------------------------------------------------- sabotage
@dataclass(frozen=True)
class Sabotage:
    """One op of our update changed: `old` (exactly once in `module`) becomes `new`."""

    name: str
    module: str  # under flashsac_bench.learner
    old: str
    new: str


SABOTAGES = (
    # critic update (learner/updates.py)
    Sabotage(
        "critic_reward_scale",
        "update",
        'cols["rewards"] / reward_divisor',
        'cols["rewards"] / (reward_divisor * 1.01)',
    ),
    Sabotage(
        "critic_truncation_cuts_bootstrap",
        "update",
        '1.0 - cols["terminated"],',
        '1.0 - cols["terminated"] - cols["truncated"],',
    ),
    Sabotage("critic_gamma", "update", "st.gamma,\n", "st.gamma * 1.01,\n"),
    Sabotage(
        "critic_entropy_bonus", "update", "alpha * next_log_prob,", "1.01 * alpha * next_log_prob,"
    ),
    Sabotage("critic_next_action_from_obs", "update", 'cols["next_obs"],\n', 'cols["obs"],\n'),
    Sabotage(
        "critic_joint_batch",
        "update",
        'torch.cat([cols["critic_obs"], cols["next_critic_obs"]])',
        'torch.cat([cols["critic_obs"], cols["critic_obs"]])',
    ),
    Sabotage(
        "critic_min_q_wrong_half",
        "update",
        "select_min_q(target_q[:, batch:]",
        "select_min_q(target_q[:, :batch]",
    ),
    Sabotage("critic_loss_wrong_half", "update", "log_probs[:, :batch])", "log_probs[:, batch:])"),
    Sabotage(
        "critic_online_action_is_policy",
        "update",
        'cols["actions"], next_actions',
        "next_actions, next_actions",
    ),
    Sabotage(
        "critic_target_is_online",
        "update",
        "param_views(layout, s.target_params,",
        "param_views(layout, s.critic_params,",
    ),
    Sabotage(
        "critic_lr",
        "update",
        "lr = st.critic_schedule.lr_tensor(s.critic_sched_step)",
        "lr = 1.01 * st.critic_schedule.lr_tensor(s.critic_sched_step)",
    ),
    Sabotage(
        "critic_sched_step", "update", "s.critic_sched_step + 1.0", "s.critic_sched_step + 2.0"
    ),
    Sabotage(
        "critic_bn_stats_dropped",
        "update",
        "torch.where(ok, g.buffers, s.critic_buffers)",
        "s.critic_buffers",
    ),
    Sabotage(
        "target_bn_stats_from_online",
        "update",
        "pack(st.critic_buffer_layout, target_new_b)",
        "pack(st.critic_buffer_layout, new_b)",
    ),
    # the optimizer step (update.optimizer_step)
    Sabotage(
        "polyak_tau",
        "update",
        "torch.lerp(target, new_params, st.tau)",
        "torch.lerp(target, new_params, 1.01 * st.tau)",
    ),
    Sabotage(
        "polyak_toward_pre_step_params",
        "update",
        "torch.lerp(target, new_params, st.tau)",
        "torch.lerp(target, params, st.tau)",
    ),
    Sabotage(
        "projection_skipped",
        "update",
        "new_params = projector(new_params)",
        "new_params = new_params",
    ),
    # actor update
    Sabotage(
        "actor_bn_batch",
        "update",
        'torch.cat([cols["obs"], cols["next_obs"]])',
        'torch.cat([cols["obs"], cols["obs"]])',
    ),
    Sabotage(
        "actor_alpha",
        "update",
        "alpha = torch.exp(s.log_temp).detach()",
        "alpha = 1.01 * torch.exp(s.log_temp).detach()",
    ),
    Sabotage("actor_max_q", "update", "q.min(dim=0).values", "q.max(dim=0).values"),
    Sabotage(
        "actor_sample_wrong_half",
        "update",
        "mean[:batch], log_std[:batch], eps",
        "mean[batch:], log_std[batch:], eps",
    ),
    Sabotage(
        "actor_q_on_next_critic_obs",
        "update",
        'critic, cols["critic_obs"], actions, st.support',
        'critic, cols["next_critic_obs"], actions, st.support',
    ),
    Sabotage(
        "actor_critic_in_train_mode",
        "update",
        "st.support, training=False",
        "st.support, training=True",
    ),
    Sabotage(
        "actor_lr",
        "update",
        "lr = st.actor_schedule.lr_tensor(s.actor_sched_step)",
        "lr = 1.01 * st.actor_schedule.lr_tensor(s.actor_sched_step)",
    ),
    Sabotage("actor_sched_step", "update", "s.actor_sched_step + 1.0", "s.actor_sched_step + 2.0"),
    Sabotage(
        "actor_bn_stats_dropped",
        "update",
        "torch.where(ok, pack(st.actor_buffer_layout, new_b), s.actor_buffers)",
        "s.actor_buffers",
    ),
    # temperature update
    Sabotage(
        "temperature_entropy_estimate", "update", "-log_prob.mean()", "-1.01 * log_prob.mean()"
    ),
    Sabotage(
        "temperature_target_entropy",
        "update",
        "(entropy - st.target_entropy)",
        "(entropy - 1.01 * st.target_entropy)",
    ),
    Sabotage(
        "temperature_loss_on_log_alpha",
        "update",
        "torch.exp(log_temp) * (entropy",
        "log_temp * (entropy",
    ),
    Sabotage(
        "temperature_lr",
        "update",
        "s.log_temp, temp_grad, s.temp_adam, lr, st.adam",
        "s.log_temp, temp_grad, s.temp_adam, 1.01 * lr, st.adam",
    ),
    Sabotage(
        "temperature_step_dropped",
        "update",
        "torch.where(temp_ok, log_temp, s.log_temp)",
        "s.log_temp",
    ),
    Sabotage(
        "temperature_exp_avg_dropped",
        "update",
        "torch.where(temp_ok, temp_m, s.temp_adam.exp_avg)",
        "s.temp_adam.exp_avg",
    ),
    Sabotage(
        "temperature_exp_avg_sq_dropped",
        "update",
        "torch.where(temp_ok, temp_v, s.temp_adam.exp_avg_sq)",
        "s.temp_adam.exp_avg_sq",
    ),
    Sabotage(
        "temperature_adam_step_not_counted",
        "update",
        "torch.where(temp_ok, temp_step, s.temp_adam.step)",
        "s.temp_adam.step",
    ),
    # networks (learner/networks.py)
    Sabotage(
        "bn_momentum",
        "networks",
        "torch.lerp(mean_buf, mean.squeeze(-2), norm.bn_momentum)",
        "torch.lerp(mean_buf, mean.squeeze(-2), 1.01 * norm.bn_momentum)",
    ),
    Sabotage(
        "bn_running_var_biased", "networks", "var.squeeze(-2) * (n / (n - 1))", "var.squeeze(-2)"
    ),
    Sabotage(
        "bn_eps",
        "networks",
        "torch.rsqrt(var + norm.bn_eps)",
        "torch.rsqrt(var + 100 * norm.bn_eps)",
    ),
    Sabotage("residual_after_relu", "networks", "h = h + torch.relu(y)", "h = torch.relu(h + y)"),
    Sabotage("rms_eps", "networks", "eps=norm.rms_eps", "eps=1000 * norm.rms_eps"),
    Sabotage(
        "log_std_squash", "networks", "(1.0 + torch.tanh(raw))", "(1.0 + torch.tanh(1.01 * raw))"
    ),
    Sabotage(
        "tanh_jacobian",
        "networks",
        "log_det = 2.0 * (_LOG2 - u - F.softplus(-2.0 * u))",
        "log_det = 2.02 * (_LOG2 - u - F.softplus(-2.0 * u))",
    ),
    Sabotage(
        "gaussian_log_density",
        "networks",
        "-0.5 * eps * eps - log_std",
        "-0.5 * eps * eps - 1.01 * log_std",
    ),
    Sabotage(
        "critic_expected_value",
        "networks",
        "q = (torch.exp(log_probs) * support).sum(-1)",
        "q = (torch.exp(log_probs) * support * 1.01).sum(-1)",
    ),
    Sabotage("critic_head_bias_dropped", "networks", ' + p["head.b"].unsqueeze(-2)', ""),
    # distributional (learner/distributional.py)
    Sabotage(
        "min_q_member_argmax", "distributional", "torch.argmin(q, dim=0)", "torch.argmax(q, dim=0)"
    ),
    Sabotage(
        "projection_entropy_sign",
        "distributional",
        "support - entropy_bonus.unsqueeze(-1)",
        "support + entropy_bonus.unsqueeze(-1)",
    ),
    Sabotage(
        "cross_entropy_scale",
        "distributional",
        "* log_probs).sum(-1).mean()",
        "* log_probs).sum(-1).mean() * 1.01",
    ),
    # Adam (learner/adam.py)
    Sabotage("adam_beta1", "adam", "grad, 1.0 - cfg.beta1)", "grad, 1.01 * (1.0 - cfg.beta1))"),
    Sabotage(
        "adam_beta2",
        "adam",
        "(1.0 - cfg.beta2) * grad * grad",
        "1.01 * (1.0 - cfg.beta2) * grad * grad",
    ),
    Sabotage(
        "adam_bias_correction1",
        "adam",
        "torch.pow(cfg.beta1, step)",
        "torch.pow(cfg.beta1, step + 1.0)",
    ),
    Sabotage(
        "adam_bias_correction2",
        "adam",
        "torch.pow(cfg.beta2, step)",
        "torch.pow(cfg.beta2, step + 1.0)",
    ),
    Sabotage("adam_eps", "adam", "+ cfg.eps", "+ 1e3 * cfg.eps"),
    # weight projection (learner/projection.py)
    Sabotage("projection_norm", "projection", "g.numer / norm", "g.numer / (1.01 * norm)"),
    Sabotage("projection_bn_eps", "projection", "BN_EPS = 1e-8", "BN_EPS = 1e-2"),
)


def install(sabotage: Sabotage, learner: FlashSACLearner, monkeypatch: Any) -> types.ModuleType:
    """Put the edited module in use (monkeypatch undoes it); returns the update module the
    cycle then runs (edited, or the real one calling the edited functions)."""
    import importlib

    real = importlib.import_module(f"flashsac_bench.learner.{sabotage.module}")
    edited = mutant(real, [(sabotage.old, sabotage.new)])
    if sabotage.module == "update":
        return edited
    if sabotage.module == "projection":
        st = learner.statics
        gather = st.actor_projector.gather
        projectors = {
            "actor_projector": edited.Projector(st.actor_param_layout, learner.device, gather),
            "critic_projector": edited.Projector(st.critic_param_layout, learner.device, gather),
        }
        edited_statics = dataclasses.replace(st, **projectors)
        monkeypatch.setattr(learner, "statics", edited_statics)
        monkeypatch.setattr(learner.path.cycle, "statics", edited_statics)
        return update
    # networks / distributional / adam: rebind the functions that update.py imported from it
    for name, obj in vars(update).items():
        if callable(obj) and getattr(obj, "__module__", None) == real.__name__:
            if isinstance(obj, types.FunctionType) and hasattr(edited, name):
                monkeypatch.setattr(update, name, getattr(edited, name))
    return update


def crosscheck(small: bool = False) -> list[Check]:
    """The cross-check of tests/interop/test_unilab_crosscheck.py, standalone."""
    learner = make_learner(small=small)
    before = learner.state.snapshot()
    sd = ui.unilab_state(learner, 0, "cpu")
    ours, inputs = run_ours(learner)
    after_ours = learner.state.snapshot()
    theirs_learner = unilab_learner(learner, sd)
    theirs = run_theirs(learner, theirs_learner, inputs)
    return compare(
        learner, ours, theirs, before, after_ours, state_after_theirs(learner, theirs_learner)
    )


if __name__ == "__main__":  # python tests/interop/crosscheck_lib.py: the table in the docs
    for small in (False, True):
        checks = crosscheck(small)
        print(
            f"== {'small' if small else 'G1'} sizes: {len(checks)} checks, "
            f"{len(failures(checks))} failed; worst (normalized error, <= 1 passes):"
        )
        for c in sorted(checks, key=lambda c: -c.error)[:6]:
            print(f"  {c.error:.3f}  {c.name}: {c.detail}")
        intermediates = [c for c in checks if not c.name.startswith("after.")]
        worst = max(intermediates, key=lambda c: c.error)
        print(f"  worst intermediate: {worst.name}: {worst.detail}")
