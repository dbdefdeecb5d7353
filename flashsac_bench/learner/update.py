"""THE definition every path executes: one critic update and one actor (+ temperature) update.

`critic_update` and `actor_update` are pure functions of (statics, state, batch rows, noise)
that return named results (`CriticResult`, `ActorResult`): the next values of every state
tensor they change. Gradients come from torch.func.grad_and_value w.r.t. the named parameter
views of ONE flat vector (one gradient tensor per layer, concatenated once); in the actor
update the critic's parameters are plain inputs, so no critic weight gradient is ever formed.
Every next value is gated by an on-device finite flag (loss and gradient), so a non-finite
update leaves weights, buffers, optimizer state and target untouched, without a host `if`.

One iteration's updates are a cycle of these (learner.cycle). One critic update, by calls:
`learner.update` -> `paths.Path.run` -> `Cycle.run` -> `Path.critic` -> `critic_update`, and
the path writes its `CriticResult` (`write`).

`write` puts a result into the state. Every element is written from its own old value only,
so the order of the writes within one update does not matter; the scalar vector is always
written outside compiled code (learner.state.SCALARS says why).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

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
    matmul_views,
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
    """A critic update's next values (gated: the old ones where the update was not finite)."""

    scalars: torch.Tensor  # the whole next LearnerState.scalars vector
    params: torch.Tensor
    exp_avg: torch.Tensor
    exp_avg_sq: torch.Tensor
    buffers: torch.Tensor  # the online critic's BN running statistics
    target_buffers: torch.Tensor
    target: torch.Tensor | None  # None: not moved by this update (Polyak)

    def assignments(self, s: LearnerState) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """(state tensor, its next value) for every tensor result left to write but the
        scalar vector."""
        pairs = [
            (s.critic_params, self.params),
            (s.critic_adam.exp_avg, self.exp_avg),
            (s.critic_adam.exp_avg_sq, self.exp_avg_sq),
            (s.critic_buffers, self.buffers),
            (s.target_buffers, self.target_buffers),
            (s.target_params, self.target),
        ]
        return [(dst, value) for dst, value in pairs if value is not None]


class ActorResult(NamedTuple):
    """An actor + temperature update's next values (the temperature's live in `scalars`)."""

    scalars: torch.Tensor
    params: torch.Tensor
    exp_avg: torch.Tensor
    exp_avg_sq: torch.Tensor
    buffers: torch.Tensor

    def assignments(self, s: LearnerState) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """(state tensor, its next value) for every tensor result left to write but the
        scalar vector."""
        return [
            (s.actor_params, self.params),
            (s.actor_adam.exp_avg, self.exp_avg),
            (s.actor_adam.exp_avg_sq, self.exp_avg_sq),
            (s.actor_buffers, self.buffers),
        ]


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
    pairs = [*result.assignments(s), (s.scalars, result.scalars)]
    torch._foreach_copy_([dst for dst, _ in pairs], [value for _, value in pairs])


def write_tensors(s: LearnerState, result: CriticResult | ActorResult) -> torch.Tensor:
    """Inside a compiled update: write every tensor result, hand the scalar vector back (the
    caller writes it outside compiled code)."""
    for dst, value in result.assignments(s):
        dst.copy_(value)
    return result.scalars


class OptimizerStep(NamedTuple):
    """The next values of one network's optimizer step (gated by the finite flag)."""

    params: torch.Tensor
    exp_avg: torch.Tensor
    exp_avg_sq: torch.Tensor
    target: torch.Tensor | None  # the Polyak-moved target (None: not moved)
    step: torch.Tensor  # the next Adam step count


def optimizer_step(
    st: UpdateStatics,
    projector: Projector,
    params: torch.Tensor,
    grad: torch.Tensor,
    adam: AdamState,
    target: torch.Tensor | None,
    lr: torch.Tensor,
    ok: torch.Tensor,
) -> OptimizerStep:
    """Adam, then the weight projection, then (critic) Polyak toward the projected weights,
    every next value the old one where not `ok`."""
    step_size, bc2_sqrt, step = adam_hyper(lr, adam.step, st.adam)
    new_params, m, v = adam_apply(
        params, grad, adam.exp_avg, adam.exp_avg_sq, step_size, bc2_sqrt, st.adam
    )
    new_params = projector(new_params)
    # Polyak on parameters only (BN running buffers are not averaged).
    moved = (
        None if target is None else torch.where(ok, torch.lerp(target, new_params, st.tau), target)
    )
    return OptimizerStep(
        params=torch.where(ok, new_params, params),
        exp_avg=torch.where(ok, m, adam.exp_avg),
        exp_avg_sq=torch.where(ok, v, adam.exp_avg_sq),
        target=moved,
        step=torch.where(ok, step, adam.step),
    )


def grad_and_value(layout: Layout, flat: torch.Tensor, loss_fn):
    """The gradient of `loss_fn(named fp32 parameter views) -> (loss, aux)`, as (flat gradient,
    (loss, aux)).

    Differentiating w.r.t. the named views instead of the flat vector gives one gradient per
    layer, concatenated once: a flat input would make every view's backward a full-size zero
    vector plus an accumulating add (one per layer), which eager runs as launches. Under
    torch.compile it is torch.func.grad_and_value (Dynamo traces it); in eager the autograd
    engine runs the same backward formulas (the same bits) without functorch's wrapper around
    every op."""
    views = layout.views(flat)
    if torch.compiler.is_compiling():
        grads, value = torch.func.grad_and_value(loss_fn, has_aux=True)(views)
        return pack(layout, grads), value
    with torch.enable_grad():
        leaves = {name: view.detach().requires_grad_() for name, view in views.items()}
        loss, aux = loss_fn(leaves)
        found = torch.autograd.grad(loss, list(leaves.values()), allow_unused=True)
    grads = {
        name: torch.zeros_like(leaf) if g is None else g
        for (name, leaf), g in zip(leaves.items(), found, strict=True)
    }
    aux = torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.detach, aux)
    return pack(layout, grads), (loss.detach(), aux)


class CriticGrad(NamedTuple):
    """A critic update up to its gradient; the BN running statistics as flat vectors, not yet
    gated."""

    grad: torch.Tensor
    loss: torch.Tensor
    q_mean: torch.Tensor
    buffers: torch.Tensor  # the online critic's next BN running statistics
    target_buffers: torch.Tensor  # the target critic's


class JointBatch(NamedTuple):
    """A critic update's inputs beside its parameters, none of them differentiated."""

    critic_in: torch.Tensor  # CrossQ-style joint batch: critic obs of (s || s')
    actions_in: torch.Tensor  # actions of (a || a'), a' ~ pi(.|s')
    # How the next-state distribution moves onto the support (categorical_projection's
    # arguments after the probabilities).
    shift: tuple[Any, ...]


@torch.no_grad()
def joint_batch(
    st: UpdateStatics,
    s: LearnerState,
    cols: dict[str, torch.Tensor],
    eps_next: torch.Tensor,
    reward_divisor: torch.Tensor,
) -> JointBatch:
    """Next actions from the actor with BN running statistics (eval mode), then the joint batch
    (s, a) || (s', a') that the target and the online critic both see, each with BN batch
    statistics (training mode), and the TD shift."""
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
    critic_in = torch.cat([cols["critic_obs"], cols["next_critic_obs"]])
    actions_in = torch.cat([cols["actions"], next_actions])
    shift = (
        cols["rewards"] / reward_divisor,
        1.0 - cols["terminated"],  # truncations bootstrap
        st.gamma,
        alpha * next_log_prob,
        st.v_min,
        st.v_max,
    )
    return JointBatch(critic_in, actions_in, shift)


def critic_grad(
    st: UpdateStatics,
    s: LearnerState,
    rows: torch.Tensor,
    eps_next: torch.Tensor,
    reward_divisor: torch.Tensor,
) -> CriticGrad:
    """The critic update up to its gradient, on rows [B, width]; eps_next [B, A] samples
    a' ~ pi(.|s')."""
    batch = rows.shape[0]
    critic_in, actions_in, shift = joint_batch(st, s, st.rows.split(rows), eps_next, reward_divisor)

    def critic_forward(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor]):
        net = Network(p, b, st.critic_spec, st.norm, st.mm_dtype)
        return critic_distribution(net, critic_in, actions_in, st.support, training=True)

    @torch.no_grad()
    def td_target(target_q: torch.Tensor, target_log_probs: torch.Tensor) -> torch.Tensor:
        next_log_probs = select_min_q(target_q[:, batch:], target_log_probs[:, batch:])
        return categorical_projection(torch.exp(next_log_probs), *shift)

    layout = st.critic_param_layout
    critic_b = st.critic_buffer_layout.views(s.critic_buffers)
    target_b = st.critic_buffer_layout.views(s.target_buffers)

    with torch.no_grad():
        target_p = param_views(layout, s.target_params, st.mm_dtype, st.gemm_align)
        target_q, target_log_probs, target_new_b = critic_forward(target_p, target_b)
        target_probs = td_target(target_q, target_log_probs)

    def loss_fn(p: dict[str, torch.Tensor]):
        online = matmul_views(layout, p, st.mm_dtype, st.gemm_align)
        # Only the (s, a) half is trained; the (s', a') half shapes the BN statistics.
        q, log_probs, new_b = critic_forward(online, critic_b)
        loss = cross_entropy(target_probs, log_probs[:, :batch])
        return loss, (new_b, q[:, :batch].mean())

    grad, (loss, (new_b, q_mean)) = grad_and_value(layout, s.critic_params, loss_fn)
    return CriticGrad(
        grad=grad,
        loss=loss,
        q_mean=q_mean,
        buffers=pack(st.critic_buffer_layout, new_b),
        target_buffers=pack(st.critic_buffer_layout, target_new_b),
    )


def critic_update(
    st: UpdateStatics,
    s: LearnerState,
    rows: torch.Tensor,
    eps_next: torch.Tensor,
    reward_divisor: torch.Tensor,
    update_target: bool,
) -> CriticResult:
    """Distributional critic update on rows [B, width]; eps_next [B, A] samples a' ~ pi(.|s');
    with `update_target`, Polyak moves the target toward the new weights."""
    g = critic_grad(st, s, rows, eps_next, reward_divisor)
    ok = is_finite(g.loss, g.grad)
    lr = st.critic_schedule.lr_tensor(s.critic_sched_step)
    target = s.target_params if update_target else None
    new = optimizer_step(
        st, st.critic_projector, s.critic_params, g.grad, s.critic_adam, target, lr, ok
    )
    out = ScalarWriter(s.scalars)
    out.set("critic.adam.step", new.step)
    out.set("critic.sched_step", s.critic_sched_step + 1.0)
    out.add_metric("critic_loss", torch.where(ok, g.loss.detach(), 0.0))
    out.add_metric("q_mean", torch.where(ok, g.q_mean.detach(), 0.0))
    out.add_metric("critic_skipped", 1.0 - ok.to(torch.float32))
    out.set_metric("critic_lr", lr)
    return CriticResult(
        scalars=out.build(),
        params=new.params,
        exp_avg=new.exp_avg,
        exp_avg_sq=new.exp_avg_sq,
        buffers=torch.where(ok, g.buffers, s.critic_buffers),
        target_buffers=torch.where(ok, g.target_buffers, s.target_buffers),
        target=new.target,
    )


def actor_update(
    st: UpdateStatics,
    s: LearnerState,
    rows: torch.Tensor,
    eps: torch.Tensor,
) -> ActorResult:
    """Actor update (then temperature update) on rows [B, width]; eps [B, A] reparameterizes
    a."""
    cols = st.rows.split(rows)
    batch = rows.shape[0]
    obs_in = torch.cat([cols["obs"], cols["next_obs"]])  # 2B rows for BN statistics
    critic_p = param_views(st.critic_param_layout, s.critic_params, st.mm_dtype, st.gemm_align)
    critic_b = st.critic_buffer_layout.views(s.critic_buffers)
    critic = Network(critic_p, critic_b, st.critic_spec, st.norm, st.mm_dtype)
    actor_b = st.actor_buffer_layout.views(s.actor_buffers)
    alpha = torch.exp(s.log_temp).detach()
    layout = st.actor_param_layout

    def loss_fn(p: dict[str, torch.Tensor]):
        actor_p = matmul_views(layout, p, st.mm_dtype, st.gemm_align)
        actor = Network(actor_p, actor_b, st.actor_spec, st.norm, st.mm_dtype)
        mean, log_std, new_b = actor_mean_log_std(actor, obs_in, training=True)
        actions, log_prob = tanh_normal_sample(mean[:batch], log_std[:batch], eps)
        # Online critic with BN running statistics; its parameters are constants here.
        q, _, _ = critic_distribution(
            critic, cols["critic_obs"], actions, st.support, training=False
        )
        loss = (alpha * log_prob - q.min(dim=0).values).mean()
        return loss, (new_b, -log_prob.mean())

    grad, (loss, (new_b, entropy)) = grad_and_value(layout, s.actor_params, loss_fn)
    ok = is_finite(loss, grad)
    lr = st.actor_schedule.lr_tensor(s.actor_sched_step)
    new = optimizer_step(st, st.actor_projector, s.actor_params, grad, s.actor_adam, None, lr, ok)
    buffers = torch.where(ok, pack(st.actor_buffer_layout, new_b), s.actor_buffers)

    # Temperature: L = alpha * (H - H_target) with H the (detached) entropy of this update.
    entropy = entropy.detach()

    def temp_loss_fn(log_temp: torch.Tensor) -> torch.Tensor:
        return (torch.exp(log_temp) * (entropy - st.target_entropy)).sum()

    temp_grad, temp_loss = torch.func.grad_and_value(temp_loss_fn)(s.log_temp)
    # A skipped actor update skips its temperature update too: they are one update of the pair.
    temp_ok = is_finite(temp_loss, temp_grad) & ok
    log_temp, temp_m, temp_v, temp_step = adam_candidate(
        s.log_temp, temp_grad, s.temp_adam, lr, st.adam
    )
    log_temp = torch.where(temp_ok, log_temp, s.log_temp)

    out = ScalarWriter(s.scalars)
    out.set("actor.adam.step", new.step)
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
    return ActorResult(
        scalars=out.build(),
        params=new.params,
        exp_avg=new.exp_avg,
        exp_avg_sq=new.exp_avg_sq,
        buffers=buffers,
    )
