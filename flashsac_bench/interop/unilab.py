"""unilab-rl 1.4.15's FlashSACLearner state <-> our flat learner state, both ways.

UniLab keeps every layer as its own nn.Parameter (`uni_rl/algos/flash_sac/layers.py`); we keep
each network in ONE flat fp32 vector (`learner/layout.py`). Every entry of our layout is one
upstream tensor, or two joined:

  * BN affine: ours [..., 2, d] = stack(weight, bias) along -2 (ensemble: per member);
  * actor heads: ours [2A, h] / [2A] = cat(mean head, log-std head) along 0.

Everything else is the same tensor under another name. Adam is elementwise, so its moments move
with the same map. No uni_rl import is needed here: a user's plain install converts files; the
tests (`tests/interop/`) hold the names and orders below to a real unilab-rl 1.4.15 learner.

`unilab_state(learner)` is UniLab's `FlashSACLearner.get_state_dict()` format (what its runner
saves as `model_<iteration>.pt` and what `load_state_dict` accepts); `load_unilab_state`
writes such a dict into a learner built with a matching config. What a UniLab checkpoint does
NOT hold (gamma, tau, the schedule's shape, ...) comes from our config; `check_architecture`
and `check_hyperparameters` compare what it does hold. docs/unilab_differences.md lists where
the two learners differ on purpose.
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from flashsac_bench.config.learner import LearnerConfig
from flashsac_bench.learner.distributional import target_entropy
from flashsac_bench.learner.layout import Layout

UNILAB_RL_VERSION = "1.4.15"
# UniLab hard-codes these (layers.py / network.py / torch.optim.Adam defaults).
UNILAB_FIXED = {
    "expansion": 4,
    "bn_momentum": 0.01,
    "bn_eps": 1e-5,
    "rms_eps": 1e-6,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_eps": 1e-8,
}
STATE_KEYS = (
    "actor",
    "critic",
    "target_critic",
    "temperature",
    "actor_optimizer",
    "critic_optimizer",
    "temperature_optimizer",
    "actor_scheduler",
    "critic_scheduler",
    "temperature_scheduler",
    "reward_normalizer",
    "update_count",
)

SAME, STACK, CAT = "same", "stack", "cat"


class ConversionError(ValueError):
    """A checkpoint that cannot be converted, said in one line."""


@dataclass(frozen=True)
class Field:
    """Our layout entry `ours` is the upstream tensor(s) `theirs`, joined by `join`."""

    ours: str
    theirs: tuple[str, ...]
    join: str = SAME


# ---------------------------------------------------------------------------- name maps
def _bn(ours: str, module: str) -> list[Field]:
    """(param field, buffer fields) of one BN: affine stacked, running stats one to one."""
    return [
        Field(ours, (f"{module}.weight", f"{module}.bias"), STACK),
        Field(f"{ours}.mean", (f"{module}.running_mean",)),
        Field(f"{ours}.var", (f"{module}.running_var",)),
    ]


def _trunk(blocks: int, lin: str) -> list[Field]:
    """Embedder, blocks, RMSNorm in upstream registration order; `lin` is the Linear weight
    suffix (`w.weight` for UnitLinear, `weight` for EnsembleUnitLinear)."""
    fields = [*_bn("embed.bn", "embedder.norm"), Field("embed.w", (f"embedder.w.{lin}",))]
    for i in range(blocks):
        p = f"encoder.{i}"
        fields += [Field(f"block{i}.w1", (f"{p}.w1.{lin}",)), *_bn(f"block{i}.bn1", f"{p}.norm1")]
        fields += [Field(f"block{i}.w2", (f"{p}.w2.{lin}",)), *_bn(f"block{i}.bn2", f"{p}.norm2")]
    return [*fields, Field("rms", ("post_norm.weight",))]


def actor_fields(blocks: int) -> list[Field]:
    # NormalTanhPolicy registers mean_w, mean_bias, std_w, std_bias, but a module's own
    # Parameters come before its submodules': biases first in state_dict / parameters().
    return [
        *_trunk(blocks, "w.weight"),
        Field("head.b", ("predictor.mean_bias", "predictor.std_bias"), CAT),
        Field("head.w", ("predictor.mean_w.w.weight", "predictor.std_w.w.weight"), CAT),
    ]


def critic_fields(blocks: int) -> list[Field]:
    return [
        *_trunk(blocks, "weight"),
        Field("head.b", ("predictor.logit_bias",)),
        Field("head.w", ("predictor.logit_w.weight",)),
    ]


def _is_buffer(name: str) -> bool:
    return name.endswith((".running_mean", ".running_var"))


def parameter_names(fields: list[Field]) -> list[str]:
    """Upstream names in `module.parameters()` order (= the optimizer's state indices)."""
    return [n for f in fields for n in f.theirs if not _is_buffer(n)]


def state_dict_names(fields: list[Field], actor: bool) -> list[str]:
    """Upstream `state_dict()` key order, the persistent constant buffers included."""
    names = [n for f in fields for n in f.theirs]
    if actor:
        return ["zeta_cdf", *names]
    i = names.index("predictor.logit_bias") + 1  # EnsembleCategoricalValue: bias, support, w
    return [*names[:i], "predictor.support", *names[i:]]


def _split(fields: list[Field], layout: Layout) -> list[Field]:
    """The fields of `layout`'s entries (params or buffers); every entry must have one."""
    mine = [f for f in fields if f.ours in layout.entries]
    uncovered = set(layout.entries) - {f.ours for f in mine}
    if uncovered:
        raise ConversionError(f"no UniLab counterpart for {sorted(uncovered)}")
    return mine


def _join(join: str, parts: list[torch.Tensor]) -> torch.Tensor:
    if join == STACK:  # BN (weight, bias) -> [..., 2, d]
        return torch.stack(parts, -2)
    if join == CAT:  # (mean head, log-std head) -> [2A, ...]
        return torch.cat(parts, 0)
    return parts[0]


def _unjoin(join: str, value: torch.Tensor) -> tuple[torch.Tensor, ...]:
    if join == STACK:
        return value.unbind(-2)
    if join == CAT:
        return value.chunk(2, 0)
    return (value,)


def flat_from_named(
    layout: Layout, fields: list[Field], named: Mapping[str, torch.Tensor]
) -> torch.Tensor:
    """Our flat fp32 vector for `layout` from upstream tensors (params, grads, Adam moments)."""
    flat = torch.empty(layout.numel, dtype=torch.float32)
    for f in _split(fields, layout):
        e = layout.entries[f.ours]
        missing = [n for n in f.theirs if n not in named]
        if missing:
            raise ConversionError(f"missing upstream tensor(s) {missing}")
        joined = _join(f.join, [named[n].detach().to("cpu", torch.float32) for n in f.theirs])
        if tuple(joined.shape) != e.shape:
            raise ConversionError(
                f"{'+'.join(f.theirs)} has shape {tuple(joined.shape)}, expected {e.shape}"
            )
        flat[e.offset : e.offset + e.numel] = joined.reshape(-1)
    return flat


def named_from_flat(
    layout: Layout, fields: list[Field], flat: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Inverse of flat_from_named: upstream name -> tensor (contiguous copies on the CPU)."""
    views = layout.views(flat.detach().to("cpu", torch.float32))
    out: dict[str, torch.Tensor] = {}
    for f in _split(fields, layout):
        parts = _unjoin(f.join, views[f.ours])
        out.update({n: p.clone().contiguous() for n, p in zip(f.theirs, parts, strict=True)})
    return out


def zeta_cdf(mu: float, k_max: int) -> torch.Tensor:
    """FlashSACActor's `zeta_cdf` buffer, computed as upstream does (float32)."""
    ns = torch.arange(1, k_max + 1, dtype=torch.float32)
    pmf = ns.pow(-mu)
    return torch.cumsum(pmf / pmf.sum(), dim=0)


# ---------------------------------------------------------------------------- checks
@dataclass(frozen=True)
class Architecture:
    """What the shapes of a UniLab checkpoint fix."""

    obs_dim: int
    critic_obs_dim: int
    action_dim: int
    actor_hidden_dim: int
    actor_num_blocks: int
    critic_hidden_dim: int
    critic_num_blocks: int
    expansion: int
    num_atoms: int
    v_min: float
    v_max: float
    zeta_max: int


def _blocks(sd: Mapping[str, torch.Tensor], lin: str) -> int:
    n = 0
    while f"encoder.{n}.w1.{lin}" in sd:
        n += 1
    return n


def architecture(sd: Mapping[str, Any]) -> Architecture:
    """The architecture of a UniLab `get_state_dict()` (raises ConversionError if not one)."""
    missing = [k for k in STATE_KEYS if k not in sd]
    if missing:
        raise ConversionError(f"not a unilab-rl FlashSACLearner state: missing keys {missing}")
    actor, critic = sd["actor"], sd["critic"]
    need_a = ("zeta_cdf", "embedder.w.w.weight", "predictor.mean_bias", "predictor.std_w.w.weight")
    need_c = ("embedder.w.weight", "predictor.support", "predictor.logit_w.weight")
    if not all(k in actor for k in need_a) or not all(k in critic for k in need_c):
        raise ConversionError(
            "not a unilab-rl FlashSAC checkpoint: its actor/critic are not FlashSACActor / "
            "FlashSACDoubleCritic state dicts (a UniLab SAC or APPO checkpoint?)"
        )
    members = critic["embedder.w.weight"].shape[0]
    if members != 2:
        raise ConversionError(f"the critic has {members} ensemble members; only 2 are supported")
    a_hidden, obs_dim = actor["embedder.w.w.weight"].shape
    c_hidden, c_in = critic["embedder.w.weight"].shape[1:]
    action_dim = actor["predictor.mean_bias"].shape[0]
    support = critic["predictor.support"]
    # Blocks are d -> expansion * d -> d; no blocks: nothing to check (UniLab's 4 then).
    first = actor.get("encoder.0.w1.w.weight")
    expansion = first.shape[0] // a_hidden if first is not None else UNILAB_FIXED["expansion"]
    return Architecture(
        obs_dim=int(obs_dim),
        critic_obs_dim=int(c_in - action_dim),
        action_dim=int(action_dim),
        actor_hidden_dim=int(a_hidden),
        actor_num_blocks=_blocks(actor, "w.weight"),
        critic_hidden_dim=int(c_hidden),
        critic_num_blocks=_blocks(critic, "weight"),
        expansion=int(expansion),
        num_atoms=int(support.shape[0]),
        v_min=float(support[0]),
        v_max=float(support[-1]),
        zeta_max=int(actor["zeta_cdf"].shape[0]),
    )


def check_supported(cfg: LearnerConfig) -> None:
    """Our config must use the constants UniLab hard-codes, or the learners differ."""
    for key, value in UNILAB_FIXED.items():
        if not math.isclose(float(getattr(cfg, key)), value, rel_tol=1e-9):
            raise ConversionError(
                f"learner.{key}={getattr(cfg, key)} cannot be represented: UniLab's FlashSAC "
                f"hard-codes {value}"
            )


def check_architecture(arch: Architecture, cfg: LearnerConfig) -> None:
    """The config must build the checkpoint's networks; names the override that fixes it."""
    check_supported(cfg)
    pairs = [
        (k, getattr(arch, k))
        for k in ("actor_hidden_dim", "actor_num_blocks", "critic_hidden_dim")
        + ("critic_num_blocks", "expansion", "num_atoms", "zeta_max")
    ]
    pairs += [("v_min", arch.v_min), ("v_max", arch.v_max)]
    for key, value in pairs:
        if not math.isclose(float(getattr(cfg, key)), float(value), rel_tol=1e-6):
            raise ConversionError(
                f"the checkpoint has {key}={value} but the config learner.{key}="
                f"{getattr(cfg, key)}: add learner.{key}={value}"
            )


def check_hyperparameters(sd: Mapping[str, Any], cfg: LearnerConfig) -> None:
    """What the checkpoint records besides shapes: zeta mu, LR peak and schedule, reward
    normalization. Mismatched peaks / switches are errors; a schedule whose current LR does
    not match ours at the same step is a warning (its init/end/decay are not recorded)."""
    if not torch.allclose(sd["actor"]["zeta_cdf"].float(), zeta_cdf(cfg.zeta_mu, cfg.zeta_max)):
        raise ConversionError(
            f"the checkpoint's exploration zeta_cdf is not that of learner.zeta_mu={cfg.zeta_mu}"
        )
    has_reward = sd.get("reward_normalizer") is not None
    if has_reward != cfg.normalize_reward:
        raise ConversionError(
            f"the checkpoint was trained with normalize_reward={has_reward}: add "
            f"learner.normalize_reward={str(has_reward).lower()}"
        )
    if sd.get("obs_normalizer"):
        raise ConversionError(
            "the checkpoint uses obs_normalization=True, which flashsac_bench does not have "
            "(FlashSAC's first BatchNorm normalizes observations)"
        )
    from flashsac_bench.learner.schedule import LRSchedule

    schedule = LRSchedule(
        cfg.lr_init, cfg.lr_peak, cfg.lr_end, cfg.lr_warmup_steps, cfg.lr_decay_steps
    )
    for name in ("critic_scheduler", "actor_scheduler", "temperature_scheduler"):
        sched = sd[name]
        peak = float(sched["base_lrs"][0])
        if not math.isclose(peak, cfg.lr_peak, rel_tol=1e-6):
            raise ConversionError(
                f"the checkpoint's learning_rate_peak is {peak:g}: add learner.lr_peak={peak:g}"
            )
        last = sched.get("_last_lr")
        ours = schedule.lr_at(int(sched["last_epoch"]))
        if last and not math.isclose(float(last[0]), ours, rel_tol=1e-5):
            warnings.warn(
                f"{name}: the checkpoint's current LR {float(last[0]):.6g} at step "
                f"{sched['last_epoch']} differs from the config's schedule ({ours:.6g}); check "
                "learner.lr_init / lr_end / lr_warmup_steps / lr_decay_steps",
                stacklevel=2,
            )


def unilab_learner_kwargs(cfg: LearnerConfig, obs: int, critic_obs: int, action: int) -> dict:
    """`uni_rl.algos.flash_sac.FlashSACLearner(**kwargs)` computing what our config does."""
    check_supported(cfg)
    return {
        "obs_dim": obs,
        "action_dim": action,
        "critic_obs_dim": critic_obs,
        "gamma": cfg.gamma,
        "tau": cfg.tau,
        "actor_lr": cfg.lr_peak,
        "critic_lr": cfg.lr_peak,
        "actor_hidden_dim": cfg.actor_hidden_dim,
        "critic_hidden_dim": cfg.critic_hidden_dim,
        "actor_num_blocks": cfg.actor_num_blocks,
        "critic_num_blocks": cfg.critic_num_blocks,
        "num_atoms": cfg.num_atoms,
        "critic_min_v": cfg.v_min,
        "critic_max_v": cfg.v_max,
        "temp_initial_value": cfg.temp_init,
        "temp_target_sigma": cfg.temp_target_sigma,
        "temp_target_entropy": (
            cfg.target_entropy
            if cfg.target_entropy is not None
            else target_entropy(action, cfg.temp_target_sigma)
        ),
        "actor_noise_zeta_mu": cfg.zeta_mu,
        "actor_noise_zeta_max": cfg.zeta_max,
        "learning_rate_init": cfg.lr_init,
        "learning_rate_peak": cfg.lr_peak,
        "learning_rate_end": cfg.lr_end,
        "learning_rate_warmup_steps": cfg.lr_warmup_steps,
        "learning_rate_decay_steps": cfg.lr_decay_steps,
        "normalize_reward": cfg.normalize_reward,
        "normalized_g_max": cfg.reward_g_max,
        "n_step": 1,
        "obs_normalization": False,
    }


# ---------------------------------------------------------------------------- Adam / schedulers
def _adam_from_unilab(
    opt: Mapping[str, Any], names: list[str], layout: Layout, fields: list[Field], what: str
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """(exp_avg, exp_avg_sq, step) of one torch Adam state dict, in our flat layout."""
    group = opt["param_groups"][0]
    if len(opt["param_groups"]) != 1 or len(group["params"]) != len(names):
        raise ConversionError(f"{what}: expected one param group of {len(names)} parameters")
    if group.get("amsgrad") or group.get("weight_decay") or group.get("maximize"):
        raise ConversionError(f"{what}: amsgrad / weight_decay / maximize are not supported")
    state = opt["state"]
    if not state:  # no step taken yet
        zeros = torch.zeros(layout.numel)
        return zeros, zeros.clone(), 0.0
    by_name, steps = {}, set()
    for i, name in zip(group["params"], names, strict=True):
        if i not in state:
            raise ConversionError(f"{what}: no Adam state for parameter {name}")
        by_name[name] = state[i]
        steps.add(float(state[i]["step"]))
    if len(steps) != 1:
        raise ConversionError(f"{what}: parameters have different Adam step counts {steps}")
    moments = [
        flat_from_named(layout, fields, {n: s[key] for n, s in by_name.items()})
        for key in ("exp_avg", "exp_avg_sq")
    ]
    return moments[0], moments[1], steps.pop()


def _adam_flags(device_type: str) -> dict[str, Any]:
    """The param-group flags UniLab's FlashSACLearner constructs on `device_type`. Optimizer
    .load_state_dict takes them from the file, so they must suit the device that loads it."""
    if device_type not in ("cpu", "cuda"):
        raise ConversionError(f"unilab device must be cpu or cuda, got {device_type!r}")
    cuda = device_type == "cuda"
    return {"fused": cuda, "capturable": cuda, "foreach": None, "differentiable": False}


def _adam_to_unilab(
    per_param: list[dict[str, torch.Tensor]],
    n_params: int,
    lr: float,
    peak: float,
    cfg: LearnerConfig,
    dev: str,
) -> dict[str, Any]:
    """A torch Adam state dict; `per_param` is empty before the first step (torch's too)."""
    group = {
        "lr": lr,
        "betas": (cfg.adam_beta1, cfg.adam_beta2),
        "eps": cfg.adam_eps,
        "weight_decay": 0,
        "amsgrad": False,
        "maximize": False,
        **_adam_flags(dev),
        "decoupled_weight_decay": False,
        "initial_lr": peak,
        "params": list(range(n_params)),
    }
    return {"state": dict(enumerate(per_param)), "param_groups": [group]}


def _scheduler_state(step: int, lr: float, peak: float) -> dict[str, Any]:
    """A LambdaLR state dict after `step` steps (its lambda is a closure: stored as None)."""
    return {
        "base_lrs": [peak],
        "last_epoch": step,
        "_step_count": step + 1,
        "_is_initial": False,
        "_get_lr_called_within_step": False,
        "_last_lr": [lr],
        "lr_lambdas": [None],
    }


# ---------------------------------------------------------------------------- whole learner
def load_unilab_state(learner: Any, sd: Mapping[str, Any]) -> None:
    """Write a UniLab `get_state_dict()` into `learner` (a FlashSACLearner of a matching config).

    Networks, target, temperature, Adam moments and steps, scheduler steps and the reward
    statistics are taken over. The per-env running returns restart at 0 (a resumed run starts
    fresh episodes), as do the exploration noise and the counter RNG (ours; UniLab's torch
    RNG state is not in its checkpoints).
    """
    st = learner.statics
    cfg = learner.cfg
    check_architecture(architecture(sd), cfg)
    check_hyperparameters(sd, cfg)
    a_fields, c_fields = actor_fields(cfg.actor_num_blocks), critic_fields(cfg.critic_num_blocks)
    snap = learner.state.snapshot()

    def put(key: str, value: torch.Tensor) -> None:
        snap[key] = value.reshape(snap[key].shape).to(snap[key].dtype)

    put("actor.params", flat_from_named(st.actor_param_layout, a_fields, sd["actor"]))
    put("actor.buffers", flat_from_named(st.actor_buffer_layout, a_fields, sd["actor"]))
    for ours, theirs in (("critic", "critic"), ("target", "target_critic")):
        put(f"{ours}.params", flat_from_named(st.critic_param_layout, c_fields, sd[theirs]))
        put(f"{ours}.buffers", flat_from_named(st.critic_buffer_layout, c_fields, sd[theirs]))
    put("temperature.log_temp", sd["temperature"]["log_temp"].float())
    for ours, theirs, layout, fields in (
        ("actor", "actor_optimizer", st.actor_param_layout, a_fields),
        ("critic", "critic_optimizer", st.critic_param_layout, c_fields),
    ):
        m, v, step = _adam_from_unilab(sd[theirs], parameter_names(fields), layout, fields, theirs)
        put(f"{ours}.adam.exp_avg", m)
        put(f"{ours}.adam.exp_avg_sq", v)
        put(f"{ours}.adam.step", torch.tensor(step))
    temp_layout = Layout()
    temp_layout.add("log_temp", (1,))
    temp_fields = [Field("log_temp", ("log_temp",))]
    m, v, step = _adam_from_unilab(
        sd["temperature_optimizer"], ["log_temp"], temp_layout, temp_fields, "temperature"
    )
    put("temperature.adam.exp_avg", m)
    put("temperature.adam.exp_avg_sq", v)
    put("temperature.adam.step", torch.tensor(step))
    actor_step = int(sd["actor_scheduler"]["last_epoch"])
    if int(sd["temperature_scheduler"]["last_epoch"]) != actor_step:
        raise ConversionError(
            "the temperature and actor schedulers are at different steps; flashsac_bench "
            "drives both with one counter"
        )
    put("critic.sched_step", torch.tensor(float(sd["critic_scheduler"]["last_epoch"])))
    put("actor.sched_step", torch.tensor(float(actor_step)))
    reward = sd.get("reward_normalizer")
    if reward is not None:
        rms = reward["rms"]
        put("reward.mean", rms["mean"].double())
        put("reward.var", rms["var"].double())
        put("reward.count", rms["count"].double())
        put("reward.returns_abs_max", reward["g_r_max"].float())
        snap["reward.returns"].zero_()
    with torch.no_grad():
        learner.state.restore(snap)
    _warn_if_unprojected(learner)


def _warn_if_unprojected(learner: Any) -> None:
    """UniLab can train without the weight projection (actor_/critic_normalize_parameters=
    False); we always project, so our first update would move such weights a long way."""
    st, s = learner.statics, learner.state
    for name, proj, flat in (
        ("actor", st.actor_projector, s.actor_params),
        ("critic", st.critic_projector, s.critic_params),
    ):
        off = ((proj(flat) - flat).abs().max() / flat.abs().max().clamp_min(1e-30)).item()
        if off > 1e-3:
            warnings.warn(
                f"the checkpoint's {name} is not weight-projected (max relative change "
                f"{off:.2g}; trained with {name}_normalize_parameters=False?): flashsac_bench "
                "always projects, so its first update moves these weights onto the manifold",
                stacklevel=3,
            )


def unilab_state(learner: Any, update_count: int, device_type: str = "cuda") -> dict[str, Any]:
    """`learner`'s state as UniLab's `FlashSACLearner.get_state_dict()`.

    `device_type` is the device the UniLab learner that loads it runs on: its Adam param-group
    flags (fused / capturable) are taken from the file.
    """
    st, s, cfg = learner.statics, learner.state, learner.cfg
    check_supported(cfg)
    a_fields, c_fields = actor_fields(cfg.actor_num_blocks), critic_fields(cfg.critic_num_blocks)
    extra = {
        "zeta_cdf": zeta_cdf(cfg.zeta_mu, cfg.zeta_max),
        "predictor.support": torch.linspace(cfg.v_min, cfg.v_max, cfg.num_atoms),
    }

    def module(fields, layouts_and_flats, actor: bool) -> OrderedDict[str, torch.Tensor]:
        named = dict(extra)
        for layout, flat in layouts_and_flats:
            named.update(named_from_flat(layout, fields, flat))
        return OrderedDict((n, named[n]) for n in state_dict_names(fields, actor))

    def adam(layout, fields, state) -> list[dict[str, torch.Tensor]]:
        m = named_from_flat(layout, fields, state.exp_avg)
        v = named_from_flat(layout, fields, state.exp_avg_sq)
        step = torch.tensor(float(state.step))
        if float(state.step) == 0:
            return []
        return [
            {"step": step.clone(), "exp_avg": m[n], "exp_avg_sq": v[n]}
            for n in parameter_names(fields)
        ]

    critic_step, actor_step = int(s.critic_sched_step), int(s.actor_sched_step)
    critic_lr = st.critic_schedule.lr_at(critic_step)
    actor_lr = st.actor_schedule.lr_at(actor_step)
    peak = cfg.lr_peak
    temp = []
    if float(s.temp_adam.step) > 0:
        temp = [
            {
                "step": torch.tensor(float(s.temp_adam.step)),
                "exp_avg": s.temp_adam.exp_avg.detach().cpu().clone(),
                "exp_avg_sq": s.temp_adam.exp_avg_sq.detach().cpu().clone(),
            }
        ]
    rn = s.reward_normalizer
    reward = None
    if cfg.normalize_reward:
        reward = {
            "rms": {
                "mean": rn.mean.detach().cpu().float().reshape(1),
                "var": rn.var.detach().cpu().float().reshape(1),
                "count": rn.count.detach().cpu().float().reshape(()),
            },
            "g_r": rn.returns.detach().cpu().clone(),
            "g_r_max": rn.returns_abs_max.detach().cpu().clone(),
        }

    def adam_dict(per_param, n_params, lr):
        return _adam_to_unilab(per_param, n_params, lr, peak, cfg, device_type)

    n_actor, n_critic = len(parameter_names(a_fields)), len(parameter_names(c_fields))

    actor = [(st.actor_param_layout, s.actor_params), (st.actor_buffer_layout, s.actor_buffers)]
    critic = [
        (st.critic_param_layout, s.critic_params),
        (st.critic_buffer_layout, s.critic_buffers),
    ]
    target = [
        (st.critic_param_layout, s.target_params),
        (st.critic_buffer_layout, s.target_buffers),
    ]
    return {
        "actor": module(a_fields, actor, True),
        "critic": module(c_fields, critic, False),
        "target_critic": module(c_fields, target, False),
        "temperature": OrderedDict(log_temp=s.log_temp.detach().cpu().clone().reshape(1)),
        "actor_optimizer": adam_dict(
            adam(st.actor_param_layout, a_fields, s.actor_adam), n_actor, actor_lr
        ),
        "critic_optimizer": adam_dict(
            adam(st.critic_param_layout, c_fields, s.critic_adam), n_critic, critic_lr
        ),
        "temperature_optimizer": adam_dict(temp, 1, actor_lr),
        "actor_scheduler": _scheduler_state(actor_step, actor_lr, peak),
        "critic_scheduler": _scheduler_state(critic_step, critic_lr, peak),
        "temperature_scheduler": _scheduler_state(actor_step, actor_lr, peak),
        "obs_normalizer": OrderedDict(),
        "reward_normalizer": reward,
        "update_count": int(update_count),
    }
