"""A loaded policy acts on a probe batch before anything uses it.

Finite tensors of sane size (runner.checkpoint.check_payload) can still make a policy that
cannot act: weights that overflow in a matmul give NaN actions for every input, and an exported
or resumed policy would carry them on. So before evaluate, export, convert or a resume use a
checkpoint's learner, its actor runs (eval mode: BatchNorm running statistics, as it acts) on a
fixed batch: zero observations, and standard-normal ones at scales 1, 10 and 100 (the BatchNorm
statistics normalize whatever the env gives). Its actions, tanh(mean), must be finite and in
[-1, 1]; read from a checkpoint before any learner is built (`probe_payload`: the preflight of
a resume), its mean and log-std must be finite too, and its tensors must fit the config's
network sizes.
"""

from __future__ import annotations

from typing import Any

import torch

from flashsac_bench.config.learner import LearnerConfig
from flashsac_bench.learner.learner import FlashSACLearner
from flashsac_bench.learner.networks import NormConfig, actor_layouts, actor_policy

PROBE_SCALES = (0.0, 1.0, 10.0, 100.0)
PROBE_ROWS_PER_SCALE = 16
PROBE_SEED = 0


def probe_batch(obs_dim: int) -> torch.Tensor:
    """The fixed probe observations [len(PROBE_SCALES) * PROBE_ROWS_PER_SCALE, obs_dim]."""
    gen = torch.Generator().manual_seed(PROBE_SEED)
    normal = torch.randn(PROBE_ROWS_PER_SCALE, obs_dim, generator=gen)
    return torch.cat([normal * scale for scale in PROBE_SCALES])


def _verdict(actions: torch.Tensor, *more: torch.Tensor) -> str | None:
    """What is wrong with the probe batch's actions (and the other outputs `more`, per row)."""
    finite = torch.isfinite(actions).all(-1)
    for t in more:
        finite &= torch.isfinite(t).all(-1)
    bad_rows = int((~finite).sum())
    if bad_rows:
        return (
            f"its actor gives non-finite outputs for {bad_rows} of {actions.shape[0]} probe "
            "observations: this policy cannot act (its weights or BatchNorm statistics are "
            "broken)"
        )
    if not bool((actions.abs() <= 1.0).all()):
        return "its actor's actions on the probe observations leave [-1, 1]"
    return None


@torch.no_grad()
def probe_learner(learner: FlashSACLearner) -> str | None:
    """What is wrong with the learner's acting policy on the probe batch (its deterministic
    actions, as evaluate and export use it); None when it acts."""
    obs = probe_batch(learner.dims.obs).to(learner.device)
    return _verdict(learner.act_deterministic(obs).float())


@torch.no_grad()
def probe_payload(payload: dict[str, Any], cfg: LearnerConfig) -> str | None:
    """The same probe on a checkpoint's learner tensors, without building a learner (cheap: the
    preflight of a resume), for networks of `cfg`'s sizes."""
    learner = payload["learner"]
    obs_dim, _, action_dim = (int(d) for d in learner["dims"])
    tensors = learner["tensors"]
    spec, params_layout, buffers_layout = actor_layouts(
        obs_dim, action_dim, cfg.actor_hidden_dim, cfg.actor_num_blocks, cfg.expansion
    )
    params, buffers = tensors.get("actor.params"), tensors.get("actor.buffers")
    sizes = (params_layout.numel, buffers_layout.numel)
    if not all(isinstance(t, torch.Tensor) for t in (params, buffers)) or sizes != (
        params.numel(),
        buffers.numel(),
    ):
        return (
            "its actor tensors do not fit its learner config (learner.actor_hidden_dim, "
            "actor_num_blocks, expansion)"
        )
    norm = NormConfig(cfg.bn_momentum, cfg.bn_eps, cfg.rms_eps)
    mean, log_std = actor_policy(
        params_layout,
        buffers_layout,
        params.float(),
        buffers.float(),
        probe_batch(obs_dim),
        spec,
        norm,
        torch.float32,
    )
    return _verdict(torch.tanh(mean), mean, log_std)
