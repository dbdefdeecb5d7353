"""summary.json's `training_config`: the settings a run's numbers depend on, as resolved (the
device `auto` picked, the env plan, the learner's update counts), checked again on resume."""

from __future__ import annotations

from typing import Any

from flashsac_bench.config.backend import EnvPlan
from flashsac_bench.config.root import Config
from flashsac_bench.learner.learner import Dims, FlashSACLearner


def learning_starts_rows(c: Config) -> int:
    """Replay rows before the first update."""
    return max(c.replay.learning_starts * c.run.num_envs, c.replay.batch_size)


def static(c: Config) -> dict[str, Any]:
    """What the config alone decides (before any env or learner is built)."""
    return {
        "iterations": c.run.iterations,
        "summary_last": c.run.summary_last,
        "skip_first": c.run.skip_first,
        "num_envs": c.run.num_envs,
        "batch_size": c.replay.batch_size,
        "replay_buffer_n": c.replay.replay_buffer_n,
        "replay_capacity": c.replay_capacity,
        "learning_starts": c.replay.learning_starts,
        "learning_starts_rows": learning_starts_rows(c),
        "update": c.update.name,
        "updates_per_step": c.update.updates_per_step,
        "policy_frequency": c.update.policy_frequency,
        "target_frequency": c.update.target_frequency,
        "policy_before_critic": c.update.policy_before_critic,
        "path": c.path.name,
        "compile_mode": c.path.compile_mode,
        "inductor_cudagraphs": c.path.resolved_inductor_cudagraphs(c.hardware.resolved_device()),
        "hardware": c.hardware.name,
        "device": c.hardware.resolved_device(),
        "dtype": c.hardware.resolved_dtype(),
        "matmul_precision": c.hardware.matmul_precision,
        "gemm_align": c.hardware.resolved_gemm_align(),
        "torch_threads": c.hardware.torch_threads,
        "backend": c.backend.name,
        **_env_plan_fields(c.backend.plan(c.run.num_envs)),
        "task": c.task.name,
        "seed": c.run.seed,
        "time_limit_s": c.run.time_limit_s,
        "capture_device_steps": c.run.capture_device_steps,
        "overlap_store": c.run.overlap_store,
    }


def learner_fields(learner: FlashSACLearner, dims: Dims) -> dict[str, Any]:
    """What the built learner decides: updates per iteration, dims, parameters."""
    critic_ops = [op for op in learner.ops if op.kind == "critic"]
    return {
        "critic_updates_per_iteration": learner.n_critic,
        "actor_updates_per_iteration": learner.n_actor,
        # The temperature is updated together with every actor update.
        "temperature_updates_per_iteration": learner.n_actor,
        "target_updates_per_iteration": sum(op.update_target for op in critic_ops),
        "obs_dim": dims.obs,
        "critic_obs_dim": dims.critic_obs,
        "action_dim": dims.action,
        "parameters": learner.num_parameters(),
    }


def executor_name(learner: FlashSACLearner) -> str:
    """The path that really runs the update cycle (a failed capture falls back to compile)."""
    ex = learner.executor
    if getattr(ex, "fallback", False):
        return "compile (cudagraph capture failed)"
    return str(ex.name)


def _env_plan_fields(plan: EnvPlan) -> dict[str, Any]:
    return {
        "env_mode": plan.mode,
        "env_workers": plan.workers,
        "env_threads": plan.threads,
    }
