"""One critic update and one actor(+temperature) update: THE definition every path executes.

Both are pure functions of (statics, state, batch rows, noise) that return named results
(`CriticResult`, `ActorResult`): the next values of every state tensor they change. Eager runs
them as they are, the compile path wraps each in torch.compile (forward, backward, Adam,
projection and Polyak in one Inductor graph), the cudagraph path captures a whole cycle of
calls (learner.paths). Gradients come from torch.func.grad_and_value w.r.t. ONE flat parameter
vector; in the actor update the critic's parameters are plain inputs, so no critic weight
gradient is ever formed. Every next value is gated by an on-device finite flag (loss and
gradient), so a non-finite step leaves weights, buffers, optimizer state and target untouched,
without a host `if`.

`write` puts a result into the state. Every element is written from its own old value only,
so the order of the writes within one update does not matter; the scalar vector is always
written outside compiled code (learner.state.SCALARS says why).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from flashsac_bench.learner.adam import (
    AdamConfig,
    AdamState,
    adam_apply,
    adam_candidate,
    adam_hyper,
    is_finite,
)
from flashsac_bench.learner.distributional import (
    categorical_projection,
    cross_entropy,
    select_min_q,
)
from flashsac_bench.learner.layout import Layout
from flashsac_bench.learner.networks import (
    NetSpec,
    Network,
    NormConfig,
    actor_mean_log_std,
    actor_policy,
    critic_distribution,
    param_views,
    tanh_normal_sample,
)
from flashsac_bench.learner.projection import Projector
from flashsac_bench.learner.replay import RowLayout
from flashsac_bench.learner.schedule import LRSchedule
from flashsac_bench.learner.state import METRIC_INDEX, METRICS_OFFSET, SCALAR_INDEX, LearnerState


@dataclass(frozen=True)
class UpdateStatics:
    """What the updates need that never changes during a run (compile-time constants)."""

    rows: RowLayout
    actor_spec: NetSpec
    actor_param_layout: Layout
    actor_buffer_layout: Layout
    critic_spec: NetSpec
    critic_param_layout: Layout
    critic_buffer_layout: Layout
    actor_projector: Projector
    critic_projector: Projector
    support: torch.Tensor
    norm: NormConfig
    adam: AdamConfig
    critic_schedule: LRSchedule
    actor_schedule: LRSchedule
    gamma: float
    tau: float
    v_min: float
    v_max: float
    target_entropy: float
    mm_dtype: torch.dtype
    gemm_align: int = 1  # matmul dims padded to multiples of this (networks.param_views)


class CriticResult(NamedTuple):
    """A critic update's next values (gated: the old ones where the step was not finite)."""

    scalars: torch.Tensor  # the whole next LearnerState.scalars vector
    params: torch.Tensor
    exp_avg: torch.Tensor
    exp_avg_sq: torch.Tensor
    target: torch.Tensor | None  # None: this update does not move the target (Polyak)
    buffers: torch.Tensor  # the online critic's BN running statistics
    target_buffers: torch.Tensor

    def destinations(self, s: LearnerState) -> list[torch.Tensor]:
        """The state tensors that `values()` are the next values of, in that order."""
        adam = s.critic_adam
        moved = [] if self.target is None else [s.target_params]
        return [s.critic_params, adam.exp_avg, adam.exp_avg_sq, *moved, s.critic_buffers,
                s.target_buffers]  # fmt: skip

    def values(self) -> list[torch.Tensor]:
        """Every tensor result but the scalar vector."""
        return [v for v in self[1:] if v is not None]


class ActorResult(NamedTuple):
    """An actor + temperature update's next values (the temperature's live in `scalars`)."""

    scalars: torch.Tensor
    params: torch.Tensor
    exp_avg: torch.Tensor
    exp_avg_sq: torch.Tensor
    buffers: torch.Tensor

    def destinations(self, s: LearnerState) -> list[torch.Tensor]:
        adam = s.actor_adam
        return [s.actor_params, adam.exp_avg, adam.exp_avg_sq, s.actor_buffers]

    def values(self) -> list[torch.Tensor]:
        return list(self[1:])


def pack(layout: Layout, values: dict[str, torch.Tensor]) -> torch.Tensor:
    """Inverse of Layout.views: the flat vector holding `values` (all entries required)."""
    return torch.cat([values[name].reshape(-1) for name in layout.entries])


class ScalarWriter:
    """Collects the next values of scalar slots; `build` returns the whole next vector."""

    def __init__(self, scalars: torch.Tensor) -> None:
        self.parts = list(scalars.unbind())

    def set(self, name: str, value: torch.Tensor) -> None:
        self.parts[SCALAR_INDEX[name]] = value.reshape(())

    def add_metric(self, name: str, value: torch.Tensor) -> None:
        i = METRICS_OFFSET + METRIC_INDEX[name]
        self.parts[i] = self.parts[i] + value.reshape(())

    def set_metric(self, name: str, value: torch.Tensor) -> None:
        self.parts[METRICS_OFFSET + METRIC_INDEX[name]] = value.reshape(())

    def build(self) -> torch.Tensor:
        return torch.stack(self.parts)


def write(s: LearnerState, result: CriticResult | ActorResult) -> None:
    """Write one update's results into the state (outside any compiled region): ONE
    multi-tensor copy, one launch on CUDA."""
    torch._foreach_copy_([*result.destinations(s), s.scalars], [*result.values(), result.scalars])


def optimizer_step(
    projector: Projector,
    cfg: AdamConfig,
    tau: float,
    params: torch.Tensor,
    grad: torch.Tensor,
    adam: AdamState,
    target: torch.Tensor | None,
    lr: torch.Tensor,
    ok: torch.Tensor,
) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    """Adam, then the weight projection, then (critic) Polyak toward the projected weights,
    every next value gated by `ok`: ((params, exp_avg, exp_avg_sq[, target]), next Adam step)."""
    step_size, bc2_sqrt, step = adam_hyper(lr, adam.step, cfg)
    next_step = torch.where(ok, step, adam.step)
    new_params, m, v = adam_apply(
        params, grad, adam.exp_avg, adam.exp_avg_sq, step_size, bc2_sqrt, cfg
    )
    new_params = projector(new_params)
    out = (
        torch.where(ok, new_params, params),
        torch.where(ok, m, adam.exp_avg),
        torch.where(ok, v, adam.exp_avg_sq),
    )
    if target is None:
        return out, next_step
    # Polyak on parameters only (BN running buffers are not averaged).
    return (*out, torch.where(ok, torch.lerp(target, new_params, tau), target)), next_step


def critic_grad(
    st: UpdateStatics,
    s: LearnerState,
    rows: torch.Tensor,
    eps_next: torch.Tensor,
    reward_divisor: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The critic update up to its gradient, on rows [B, width]; eps_next [B, A] samples
    a' ~ pi(.|s'). Returns (grad, loss, q_mean, next online BN buffers, next target BN buffers),
    the buffers as flat vectors (not yet gated)."""
    cols = st.rows.split(rows)
    batch = rows.shape[0]
    with torch.no_grad():
        # Next actions from the actor with BN running statistics (eval mode).
        mean, log_std = actor_policy(
            st.actor_param_layout,
            st.actor_buffer_layout,
            s.actor_params,
            s.actor_buffers,
            cols["next_obs"],
            st.actor_spec,
            st.norm,
            st.mm_dtype,
            st.gemm_align,
        )
        next_actions, next_log_prob = tanh_normal_sample(mean, log_std, eps_next)
        alpha = torch.exp(s.log_temp)
        # CrossQ-style joint batch: (s, a) || (s', a') for both the target and online critic,
        # each with BN batch statistics (training mode).
        critic_in = torch.cat([cols["critic_obs"], cols["next_critic_obs"]])
        actions_in = torch.cat([cols["actions"], next_actions])

    def critic_forward(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor]):
        net = Network(p, b, st.critic_spec, st.norm, st.mm_dtype)
        return critic_distribution(net, critic_in, actions_in, st.support, training=True)

    def views(params: torch.Tensor) -> dict[str, torch.Tensor]:
        return param_views(st.critic_param_layout, params, st.mm_dtype, st.gemm_align)

    @torch.no_grad()
    def td_target(target_q: torch.Tensor, target_log_probs: torch.Tensor) -> torch.Tensor:
        next_log_probs = select_min_q(target_q[:, batch:], target_log_probs[:, batch:])
        return categorical_projection(
            torch.exp(next_log_probs),
            cols["rewards"] / reward_divisor,
            1.0 - cols["terminated"],  # truncations bootstrap
            st.gamma,
            alpha * next_log_prob,
            st.v_min,
            st.v_max,
        )

    critic_b = st.critic_buffer_layout.views(s.critic_buffers)
    target_b = st.critic_buffer_layout.views(s.target_buffers)
    with torch.no_grad():
        target_q, target_log_probs, target_new_b = critic_forward(views(s.target_params), target_b)
        target_probs = td_target(target_q, target_log_probs)

    def loss_fn(critic_params: torch.Tensor):
        q, log_probs, new_b = critic_forward(views(critic_params), critic_b)
        # Only the (s, a) half is trained; the (s', a') half shapes the BN statistics.
        loss = cross_entropy(target_probs, log_probs[:, :batch])
        return loss, (new_b, q[:, :batch].mean(), target_new_b)

    grad, (loss, (new_b, q_mean, target_new_b)) = torch.func.grad_and_value(loss_fn, has_aux=True)(
        s.critic_params
    )
    return (
        grad,
        loss,
        q_mean,
        pack(st.critic_buffer_layout, new_b),
        pack(st.critic_buffer_layout, target_new_b),
    )


def critic_update(
    st: UpdateStatics,
    s: LearnerState,
    rows: torch.Tensor,
    eps_next: torch.Tensor,
    reward_divisor: torch.Tensor,
    update_target: bool,
) -> CriticResult:
    """Distributional critic step on rows [B, width]; eps_next [B, A] samples a' ~ pi(.|s');
    with `update_target`, Polyak moves the target toward the new weights."""
    grad, loss, q_mean, new_b, target_new_b = critic_grad(st, s, rows, eps_next, reward_divisor)
    ok = is_finite(loss, grad)
    lr = st.critic_schedule.lr_tensor(s.critic_sched_step)
    target = s.target_params if update_target else None
    new, step = optimizer_step(
        st.critic_projector, st.adam, st.tau, s.critic_params, grad, s.critic_adam, target, lr, ok
    )
    buffers = (
        torch.where(ok, new_b, s.critic_buffers),
        torch.where(ok, target_new_b, s.target_buffers),
    )
    out = ScalarWriter(s.scalars)
    out.set("critic.adam.step", step)
    out.set("critic.sched_step", s.critic_sched_step + 1.0)
    out.add_metric("critic_loss", torch.where(ok, loss.detach(), 0.0))
    out.add_metric("q_mean", torch.where(ok, q_mean.detach(), 0.0))
    out.add_metric("critic_skipped", 1.0 - ok.to(torch.float32))
    out.set_metric("critic_lr", lr)
    params, exp_avg, exp_avg_sq = new[:3]
    return CriticResult(
        out.build(), params, exp_avg, exp_avg_sq, new[3] if target is not None else None, *buffers
    )


def actor_update(
    st: UpdateStatics, s: LearnerState, rows: torch.Tensor, eps: torch.Tensor
) -> ActorResult:
    """Actor step (then temperature step) on rows [B, width]; eps [B, A] reparameterizes a."""
    cols = st.rows.split(rows)
    batch = rows.shape[0]
    obs_in = torch.cat([cols["obs"], cols["next_obs"]])  # 2B rows for BN statistics
    critic_p = param_views(st.critic_param_layout, s.critic_params, st.mm_dtype, st.gemm_align)
    critic_b = st.critic_buffer_layout.views(s.critic_buffers)
    critic = Network(critic_p, critic_b, st.critic_spec, st.norm, st.mm_dtype)
    actor_b = st.actor_buffer_layout.views(s.actor_buffers)
    alpha = torch.exp(s.log_temp).detach()

    def loss_fn(actor_params: torch.Tensor):
        actor_p = param_views(st.actor_param_layout, actor_params, st.mm_dtype, st.gemm_align)
        actor = Network(actor_p, actor_b, st.actor_spec, st.norm, st.mm_dtype)
        mean, log_std, new_b = actor_mean_log_std(actor, obs_in, training=True)
        actions, log_prob = tanh_normal_sample(mean[:batch], log_std[:batch], eps)
        # Online critic with BN running statistics; its parameters are constants here.
        q, _, _ = critic_distribution(
            critic, cols["critic_obs"], actions, st.support, training=False
        )
        loss = (alpha * log_prob - q.min(dim=0).values).mean()
        return loss, (new_b, -log_prob.mean())

    grad, (loss, (new_b, entropy)) = torch.func.grad_and_value(loss_fn, has_aux=True)(
        s.actor_params
    )
    ok = is_finite(loss, grad)
    lr = st.actor_schedule.lr_tensor(s.actor_sched_step)
    new, actor_step = optimizer_step(
        st.actor_projector, st.adam, st.tau, s.actor_params, grad, s.actor_adam, None, lr, ok
    )
    buffers = torch.where(ok, pack(st.actor_buffer_layout, new_b), s.actor_buffers)

    # Temperature: L = alpha * (H - H_target) with H the (detached) entropy of this step.
    entropy = entropy.detach()

    def temp_loss_fn(log_temp: torch.Tensor) -> torch.Tensor:
        return (torch.exp(log_temp) * (entropy - st.target_entropy)).sum()

    temp_grad, temp_loss = torch.func.grad_and_value(temp_loss_fn)(s.log_temp)
    # A skipped actor step skips its temperature step too: they are one update of the pair.
    temp_ok = is_finite(temp_loss, temp_grad) & ok
    log_temp, temp_m, temp_v, temp_step = adam_candidate(
        s.log_temp, temp_grad, s.temp_adam, lr, st.adam
    )
    log_temp = torch.where(temp_ok, log_temp, s.log_temp)

    out = ScalarWriter(s.scalars)
    out.set("actor.adam.step", actor_step)
    out.set("actor.sched_step", s.actor_sched_step + 1.0)
    out.set("temperature.log_temp", log_temp)
    out.set("temperature.adam.exp_avg", torch.where(temp_ok, temp_m, s.temp_adam.exp_avg))
    out.set("temperature.adam.exp_avg_sq", torch.where(temp_ok, temp_v, s.temp_adam.exp_avg_sq))
    out.set("temperature.adam.step", torch.where(temp_ok, temp_step, s.temp_adam.step))
    out.add_metric("actor_loss", torch.where(ok, loss.detach(), 0.0))
    out.add_metric("entropy", torch.where(ok, entropy, 0.0))
    out.add_metric("temperature_loss", torch.where(temp_ok, temp_loss.detach(), 0.0))
    out.set_metric("temperature", torch.exp(log_temp))
    out.add_metric("actor_skipped", 1.0 - ok.to(torch.float32))
    out.set_metric("actor_lr", lr)
    return ActorResult(out.build(), *new, buffers)
