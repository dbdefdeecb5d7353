"""What the G1 walk offers (task=g1_walk_flat): MuJoCo on the CPU or MuJoCo Warp on the
learner's device, the walking metrics, goals and robustness conditions, the rendering of the
recorded joint states and a model file that checkpoints carry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flashsac_bench.config.task import TaskConfig
from flashsac_bench.envs.contract.task import Task, no_env

if TYPE_CHECKING:
    from flashsac_bench.config.backend import BackendConfig
    from flashsac_bench.config.task import BaseTaskConfig
    from flashsac_bench.envs.contract.api import DeviceVecEnv, VecEnv


def g1_config(task_cfg: BaseTaskConfig) -> TaskConfig:
    """The G1's schema of a task whose record is G1_WALK (the fields its walking metrics,
    robustness conditions and rendering read); TypeError for any other task."""
    if not isinstance(task_cfg, TaskConfig):
        raise TypeError(f"task {task_cfg.name!r} is not the G1 walk")
    return task_cfg


def _make_env(
    task_cfg: BaseTaskConfig, backend_cfg: BackendConfig | None, num_envs: int, seed: int
) -> VecEnv | DeviceVecEnv:
    """MuJoCo on the CPU (threads or worker processes: a VecEnv) or MuJoCo Warp on the
    learner's device (a DeviceVecEnv), as the backend says."""
    from flashsac_bench.config.backend import MjwarpConfig, MujocoConfig

    task = g1_config(task_cfg)
    # Imported here so that importing the package loads neither MuJoCo nor Warp.
    if isinstance(backend_cfg, MujocoConfig):
        from flashsac_bench.envs.g1.cpu.walk_flat import G1WalkFlat

        return G1WalkFlat(task, backend_cfg, num_envs, seed)
    if isinstance(backend_cfg, MjwarpConfig):
        from flashsac_bench.envs.g1.warp.walk_warp import G1WalkWarp

        return G1WalkWarp(task, backend_cfg, num_envs, seed)
    raise no_env(task_cfg, backend_cfg)


def _record(task_cfg: BaseTaskConfig) -> dict[str, Any]:
    """The G1's model (envs.g1.model.model_record)."""
    from flashsac_bench.envs.g1.model import model_record

    return model_record(g1_config(task_cfg).model_file)


def _export_fields(task_cfg: BaseTaskConfig, record: dict[str, Any]) -> dict[str, Any]:
    """Timing, action scale, joint order and default pose of the model `task_cfg.model_file`
    (the checkpoint's stored model: evaluation.trained.trained_task)."""
    from flashsac_bench.envs.g1.figures import JOINT_NAMES
    from flashsac_bench.envs.g1.layout import G1Layout
    from flashsac_bench.envs.g1.model import task_spec

    task = g1_config(task_cfg)
    layout = G1Layout.from_model(task_spec(task.model_file).compile())
    return {
        "ctrl_dt": task.ctrl_dt,
        "action_scale": task.action_scale,
        "model_sha256": record.get("sha256"),
        "joint_names": list(JOINT_NAMES),
        "default_joint_pos": [float(x) for x in layout.default_joint_pos],
        "joint_targets": "default_joint_pos + action_scale * action (canonical joint order)",
        "observation_layout": (
            "gyro*0.25 (3) | projected gravity (3) | joint pos - default (29) | joint vel * "
            "0.05 (29) | last action (29) | command vx vy wz (3) | gait phase (2); see "
            "flashsac_bench/envs/g1/cpu/walk_flat.py"
        ),
    }


G1_WALK = Task(
    name="g1_walk_flat",
    walks=True,
    robustness=True,
    estimates_cpu_runtime=True,
    renders="states",
    stores_model=True,
    make_env=_make_env,
    record=_record,
    run_fields=lambda task_cfg: {},
    export_fields=_export_fields,
)
