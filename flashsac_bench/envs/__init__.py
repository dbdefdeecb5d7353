"""Vectorized environments. `make_env` builds the one named by the task and backend configs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashsac_bench.envs.api import DeviceEnvStep, DeviceVecEnv, EnvStep, TaskEnv, VecEnv

if TYPE_CHECKING:
    from flashsac_bench.config.backend import BackendConfig
    from flashsac_bench.config.task import TaskConfig
    from flashsac_bench.envs.g1_walk_flat import G1WalkFlat
    from flashsac_bench.envs.g1_warp import G1WalkWarp

__all__ = ["DeviceEnvStep", "DeviceVecEnv", "EnvStep", "TaskEnv", "VecEnv", "make_env"]


def make_env(
    task_cfg: TaskConfig, backend_cfg: BackendConfig, num_envs: int, seed: int
) -> G1WalkFlat | G1WalkWarp:
    """`num_envs` autoresetting envs of `task_cfg.name` stepped by `backend_cfg`: MuJoCo on the
    CPU (in-process thread pool or worker processes, `backend_cfg.plan`; a VecEnv) or MuJoCo
    Warp on the learner's device (a DeviceVecEnv). Close it when done."""
    from flashsac_bench.config.backend import MjwarpConfig, MujocoConfig

    # Imported here so that importing the package loads neither MuJoCo nor Warp.
    if task_cfg.name == "g1_walk_flat" and isinstance(backend_cfg, MujocoConfig):
        from flashsac_bench.envs.g1_walk_flat import G1WalkFlat

        return G1WalkFlat(task_cfg, backend_cfg, num_envs, seed)
    if task_cfg.name == "g1_walk_flat" and isinstance(backend_cfg, MjwarpConfig):
        from flashsac_bench.envs.g1_warp import G1WalkWarp

        return G1WalkWarp(task_cfg, backend_cfg, num_envs, seed)
    raise ValueError(f"no env for task {task_cfg.name!r} on backend {backend_cfg.name!r}")
