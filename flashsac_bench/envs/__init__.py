"""Vectorized environments. `make_env` builds the one named by the task and backend configs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flashsac_bench.envs.api import DeviceEnvStep, DeviceVecEnv, EnvStep, TaskEnv, VecEnv

if TYPE_CHECKING:
    from flashsac_bench.config.backend import BackendConfig
    from flashsac_bench.config.task import BaseTaskConfig
    from flashsac_bench.envs.g1_walk_flat import G1WalkFlat
    from flashsac_bench.envs.g1_warp import G1WalkWarp
    from flashsac_bench.envs.gymnasium_env import GymnasiumVecEnv

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
    resume compares and evaluate / export use: the G1's model (envs.g1_model.model_record), a
    Gymnasium env's id and facts (envs.gymnasium_env.EnvFacts.record: making one env checks
    the id). Every record has `sha256` (what identifies it) and `model_file`."""
    from flashsac_bench.config.task import GymnasiumTaskConfig, TaskConfig

    if isinstance(task_cfg, GymnasiumTaskConfig):
        task_cfg.check_available()
        from flashsac_bench.envs.gymnasium_env import check_task

        return check_task(task_cfg).record()
    assert isinstance(task_cfg, TaskConfig)
    from flashsac_bench.envs.g1_model import model_record

    return model_record(task_cfg.model_file)


def make_env(
    task_cfg: BaseTaskConfig, backend_cfg: BackendConfig | None, num_envs: int, seed: int
) -> G1WalkFlat | G1WalkWarp | GymnasiumVecEnv:
    """`num_envs` autoresetting envs of `task_cfg.name` stepped by `backend_cfg`: MuJoCo on the
    CPU (in-process thread pool or worker processes, `backend_cfg.plan`; a VecEnv) or MuJoCo
    Warp on the learner's device (a DeviceVecEnv); task=gymnasium steps its envs itself
    (Gymnasium's vector env, a VecEnv; no backend). Close it when done."""
    from flashsac_bench.config.backend import MjwarpConfig, MujocoConfig
    from flashsac_bench.config.task import GymnasiumTaskConfig, TaskConfig

    # Imported here so that importing the package loads neither MuJoCo, Warp nor Gymnasium.
    if isinstance(task_cfg, GymnasiumTaskConfig) and backend_cfg is None:
        task_cfg.check_available()  # the one line naming the [gymnasium] extra
        from flashsac_bench.envs.gymnasium_env import GymnasiumVecEnv

        return GymnasiumVecEnv(task_cfg, num_envs, seed)
    if isinstance(task_cfg, TaskConfig) and isinstance(backend_cfg, MujocoConfig):
        from flashsac_bench.envs.g1_walk_flat import G1WalkFlat

        return G1WalkFlat(task_cfg, backend_cfg, num_envs, seed)
    if isinstance(task_cfg, TaskConfig) and isinstance(backend_cfg, MjwarpConfig):
        from flashsac_bench.envs.g1_warp import G1WalkWarp

        return G1WalkWarp(task_cfg, backend_cfg, num_envs, seed)
    backend = "no backend" if backend_cfg is None else f"backend {backend_cfg.name!r}"
    raise ValueError(f"no env for task {task_cfg.name!r} on {backend}")
