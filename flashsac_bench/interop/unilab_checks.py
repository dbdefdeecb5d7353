"""What a unilab-rl FlashSAC checkpoint fixes (its architecture, zeta, LR peak, reward
normalization) checked against our LearnerConfig, and the upstream constructor arguments that
compute what our config does."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from flashsac_bench.config.learner import LearnerConfig
from flashsac_bench.interop.unilab_names import (
    STATE_KEYS,
    UNILAB_FIXED,
    ConversionError,
    zeta_cdf,
)
from flashsac_bench.learner.distributional import target_entropy


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
        "temp_target_entropy": target_entropy(action, cfg.temp_target_sigma),
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
