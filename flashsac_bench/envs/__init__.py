"""Vectorized environments. `make_env` builds the one named by the task and backend configs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flashsac_bench.envs.contract.api import DeviceEnvStep, DeviceVecEnv, EnvStep, TaskEnv, VecEnv

if TYPE_CHECKING:
    from flashsac_bench.config.backend import BackendConfig
    from flashsac_bench.config.task import BaseTaskConfig

__all__ = [
    "DeviceEnvStep",
    "DeviceVecEnv",
    "EnvStep",
    "TaskEnv",
    "VecEnv",
    "make_env",
    "task_record",
]


def task_record(task_cfg: BaseTaskConfig) -> dict[str, Any]:
    """What a checkpoint carries of the task's model (runner.records.RunInfo.model), which
    resume compares and evaluate / export use: the task's `Task.record` (envs.tasks)."""
    from flashsac_bench.envs.tasks import task_of

    return task_of(task_cfg).record(task_cfg)


def make_env(
    task_cfg: BaseTaskConfig, backend_cfg: BackendConfig | None, num_envs: int, seed: int
) -> VecEnv | DeviceVecEnv:
    """`num_envs` autoresetting envs of `task_cfg.name` stepped by `backend_cfg`: MuJoCo on the
    CPU (in-process thread pool or worker processes, `backend_cfg.plan`; a VecEnv) or MuJoCo
    Warp on the learner's device (a DeviceVecEnv); task=gymnasium steps its envs itself
    (Gymnasium's vector env, a VecEnv; no backend). The task's `Task.make_env` (envs.tasks)
    builds them; ValueError for a backend the task does not run on. Close it when done."""
    from flashsac_bench.envs.tasks import task_of

    return task_of(task_cfg).make_env(task_cfg, backend_cfg, num_envs, seed)
