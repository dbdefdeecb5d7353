"""Vectorized environments. `make_env` builds the one named by the task and backend configs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashsac_bench.envs.api import EnvStep, TaskEnv, VecEnv

if TYPE_CHECKING:
    from flashsac_bench.config.backend import BackendConfig
    from flashsac_bench.config.task import TaskConfig
    from flashsac_bench.envs.g1_walk_flat import G1WalkFlat

__all__ = ["EnvStep", "TaskEnv", "VecEnv", "make_env"]


def make_env(
    task_cfg: TaskConfig, backend_cfg: BackendConfig, num_envs: int, seed: int
) -> G1WalkFlat:
    """`num_envs` autoresetting envs of `task_cfg.name` stepped by `backend_cfg` (in-process
    thread pool or worker processes, `backend_cfg.plan`). Close it when done."""
    if task_cfg.name == "g1_walk_flat" and backend_cfg.name == "mujoco":
        # Imported here so that importing the package does not load MuJoCo.
        from flashsac_bench.envs.g1_walk_flat import G1WalkFlat

        return G1WalkFlat(task_cfg, backend_cfg, num_envs, seed)
    raise ValueError(f"no env for task {task_cfg.name!r} on backend {backend_cfg.name!r}")
