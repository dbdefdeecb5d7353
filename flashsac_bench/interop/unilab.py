"""unilab-rl 1.4.15's FlashSACLearner state <-> our flat learner state, both ways.

unilab_names maps every upstream tensor to our flat layout (no uni_rl import: a user's plain
install converts files); unilab_checks compares a checkpoint with our config. Their public
names are importable from here too.

`unilab_state(learner)` is UniLab's `FlashSACLearner.get_state_dict()` format (what its runner
saves as `model_<iteration>.pt` and what `load_state_dict` accepts); `load_unilab_state`
writes such a dict into a learner built with a matching config. What a UniLab checkpoint does
NOT hold (gamma, tau, the schedule's shape, ...) comes from our config; `check_architecture`
and `check_hyperparameters` compare what it does hold. docs/unilab_differences.md lists where
the two learners differ on purpose.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import torch

from flashsac_bench.config.learner import LearnerConfig
from flashsac_bench.interop.unilab_checks import (
    Architecture,
    architecture,
    check_architecture,
    check_hyperparameters,
    check_supported,
    unilab_learner_kwargs,
)
from flashsac_bench.interop.unilab_names import (
    STATE_KEYS,
    UNILAB_FIXED,
    UNILAB_RL_VERSION,
    ConversionError,
    Field,
    actor_fields,
    as_float32,
    critic_fields,
    flat_from_named,
    named_from_flat,
    parameter_names,
    require_float,
    state_dict_names,
    zeta_cdf,
)
from flashsac_bench.learner.layout import Layout

__all__ = [
    "STATE_KEYS",
    "UNILAB_FIXED",
    "UNILAB_RL_VERSION",
    "Architecture",
    "ConversionError",
    "Field",
    "actor_fields",
    "architecture",
    "check_architecture",
    "check_hyperparameters",
    "check_supported",
    "critic_fields",
    "flat_from_named",
    "load_unilab_state",
    "named_from_flat",
    "parameter_names",
    "state_dict_names",
    "unilab_learner_kwargs",
    "unilab_state",
    "zeta_cdf",
]


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
    put("temperature.log_temp", as_float32("log_temp", sd["temperature"]["log_temp"]))
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
        put("reward.mean", require_float("rms.mean", rms["mean"]).double())
        put("reward.var", require_float("rms.var", rms["var"]).double())
        put("reward.count", require_float("rms.count", rms["count"]).double())
        put("reward.returns_abs_max", as_float32("g_r_max", reward["g_r_max"]))
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


def _adam_rows(layout: Any, fields: Any, state: Any) -> list[dict[str, torch.Tensor]]:
    """One Adam state per parameter, in UniLab's parameter order (none before a first step)."""
    if float(state.step) == 0:
        return []
    m = named_from_flat(layout, fields, state.exp_avg)
    v = named_from_flat(layout, fields, state.exp_avg_sq)
    step = torch.tensor(float(state.step))
    return [
        {"step": step.clone(), "exp_avg": m[n], "exp_avg_sq": v[n]} for n in parameter_names(fields)
    ]


def _temperature_adam(state: Any) -> list[dict[str, torch.Tensor]]:
    """The temperature's Adam state as UniLab's one-parameter group (none before a step)."""
    if float(state.step) == 0:
        return []
    return [
        {
            "step": torch.tensor(float(state.step)),
            "exp_avg": state.exp_avg.detach().cpu().clone(),
            "exp_avg_sq": state.exp_avg_sq.detach().cpu().clone(),
        }
    ]


def _reward_normalizer(rn: Any) -> dict[str, Any]:
    """The reward normalizer's statistics under UniLab's names."""
    return {
        "rms": {
            "mean": rn.mean.detach().cpu().float().reshape(1),
            "var": rn.var.detach().cpu().float().reshape(1),
            "count": rn.count.detach().cpu().float().reshape(()),
        },
        "g_r": rn.returns.detach().cpu().clone(),
        "g_r_max": rn.returns_abs_max.detach().cpu().clone(),
    }


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

    critic_step, actor_step = int(s.critic_sched_step), int(s.actor_sched_step)
    critic_lr = st.critic_schedule.lr_at(critic_step)
    actor_lr = st.actor_schedule.lr_at(actor_step)
    peak = cfg.lr_peak
    temp = _temperature_adam(s.temp_adam)
    reward = _reward_normalizer(s.reward_normalizer) if cfg.normalize_reward else None

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
            _adam_rows(st.actor_param_layout, a_fields, s.actor_adam), n_actor, actor_lr
        ),
        "critic_optimizer": adam_dict(
            _adam_rows(st.critic_param_layout, c_fields, s.critic_adam), n_critic, critic_lr
        ),
        "temperature_optimizer": adam_dict(temp, 1, actor_lr),
        "actor_scheduler": _scheduler_state(actor_step, actor_lr, peak),
        "critic_scheduler": _scheduler_state(critic_step, critic_lr, peak),
        "temperature_scheduler": _scheduler_state(actor_step, actor_lr, peak),
        "obs_normalizer": OrderedDict(),
        "reward_normalizer": reward,
        "update_count": int(update_count),
    }
