"""summary.json's `training_config`: the settings a run's numbers depend on, as resolved (the
device `auto` picked, the env plan, the learner's update counts), checked again on resume."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from flashsac_bench.config.root import Config
from flashsac_bench.envs.tasks import task_of
from flashsac_bench.learner.learner import Dims, FlashSACLearner


def learning_starts_rows(c: Config) -> int:
    """Replay rows before the first update."""
    return max(c.replay.learning_starts * c.run.num_envs, c.replay.batch_size)


def static(c: Config) -> dict[str, Any]:
    """What the config alone decides (before any env or learner is built). A group's option
    name is stored under the group's name; device settings as resolved (`auto` picked)."""
    run, replay = asdict(c.run), asdict(c.replay)
    device = c.hardware.resolved_device()
    hardware = {
        **asdict(c.hardware),
        "device": device,
        "dtype": c.hardware.resolved_dtype(),
        "gemm_align": c.hardware.resolved_gemm_align(),
    }
    plan = asdict(c.env_plan())
    return {
        **_pick(run, "iterations", "summary_last", "num_envs"),
        **_pick(replay, "batch_size", "replay_buffer_n"),
        "replay_capacity": c.replay_capacity,
        **_pick(replay, "learning_starts"),
        "learning_starts_rows": learning_starts_rows(c),
        "update": c.update.name,
        **asdict(c.update),
        "path": c.path.name,
        "inductor_options": dict(c.path.inductor_options),
        **_named(
            "hardware",
            _pick(
                hardware,
                "name",
                "device",
                "dtype",
                "matmul_precision",
                "gemm_align",
                "torch_threads",
            ),
        ),
        "backend": None if c.backend is None else c.backend.name,
        **{f"env_{key}": value for key, value in plan.items()},
        "task": c.task.name,
        **task_of(c.task).run_fields(c.task),
        **_pick(run, "seed", "time_limit_s"),
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
    """The path that really runs the update cycle (a failed capture runs the compiled steps
    uncaptured)."""
    if getattr(learner.path, "fallback", False):
        return "compile (cudagraph capture failed)"
    return learner.path.name


def _pick(fields: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: fields[name] for name in names}


def _named(group: str, fields: dict[str, Any]) -> dict[str, Any]:
    """A group's fields with its option `name` stored under the group's name."""
    return {group if key == "name" else key: value for key, value in fields.items()}
