"""What task=gymnasium offers: Gymnasium's vector env (no backend), an env id that the run
record and the exported policy name, and an episode that the env renders itself. The G1's
walking metrics, goals and robustness conditions do not apply."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flashsac_bench.config.task import GymnasiumTaskConfig
from flashsac_bench.envs.contract.task import Task, no_env

if TYPE_CHECKING:
    from flashsac_bench.config.backend import BackendConfig
    from flashsac_bench.config.task import BaseTaskConfig
    from flashsac_bench.envs.contract.api import DeviceVecEnv, VecEnv


def gymnasium_config(task_cfg: BaseTaskConfig) -> GymnasiumTaskConfig:
    """The schema of a task whose record is GYMNASIUM; TypeError for any other task."""
    if not isinstance(task_cfg, GymnasiumTaskConfig):
        raise TypeError(f"task {task_cfg.name!r} is not task=gymnasium")
    return task_cfg


def _make_env(
    task_cfg: BaseTaskConfig, backend_cfg: BackendConfig | None, num_envs: int, seed: int
) -> VecEnv | DeviceVecEnv:
    """Gymnasium's vector env (a VecEnv): the task steps its envs itself, on no backend."""
    task = gymnasium_config(task_cfg)
    if backend_cfg is not None:
        raise no_env(task_cfg, backend_cfg)
    task.check_available()  # the one line naming the [gymnasium] extra
    # Imported here so that importing the package loads no Gymnasium.
    from flashsac_bench.envs.gymnasium.env import GymnasiumVecEnv

    return GymnasiumVecEnv(task, num_envs, seed)


def _record(task_cfg: BaseTaskConfig) -> dict[str, Any]:
    """The env's id and facts (envs.gymnasium.env.EnvFacts.record): making one env checks
    the id."""
    task = gymnasium_config(task_cfg)
    task.check_available()
    from flashsac_bench.envs.gymnasium.env import check_task

    return check_task(task).record()


def _probe(task_cfg: BaseTaskConfig) -> tuple[int, int, int]:
    """Its extra installed, its env id known to Gymnasium and an env the adapter can step
    (envs.gymnasium.env.check_task makes one); (obs, critic obs, action) sizes."""
    task = gymnasium_config(task_cfg)
    task.check_available()
    from flashsac_bench.envs.gymnasium.env import check_task

    facts = check_task(task)
    return facts.obs_dim, facts.obs_dim, facts.action_dim


def _export_fields(task_cfg: BaseTaskConfig, record: dict[str, Any]) -> dict[str, Any]:
    """The env's own observation; its actions are the policy's mapped onto its bounds."""
    return {
        "env_id": gymnasium_config(task_cfg).env_id,
        "gymnasium": record.get("gymnasium"),
        "dt": record.get("dt"),
        "action_low": record.get("action_low"),
        "action_high": record.get("action_high"),
        "env_action": "action_low + (action + 1) / 2 * (action_high - action_low)",
    }


GYMNASIUM = Task(
    name="gymnasium",
    walks=False,
    robustness=False,
    estimates_cpu_runtime=False,
    renders="episode",
    stores_model=False,
    make_env=_make_env,
    record=_record,
    run_fields=lambda task_cfg: {"env_id": gymnasium_config(task_cfg).env_id},
    export_fields=_export_fields,
    probe=_probe,
)
