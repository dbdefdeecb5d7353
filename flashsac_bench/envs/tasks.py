"""The tasks this package offers, by `task.name`: a new task adds its folder and one line here
(and its schema in config.task)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashsac_bench.envs.contract.task import Task
from flashsac_bench.envs.g1.offer import G1_WALK
from flashsac_bench.envs.gymnasium.offer import GYMNASIUM

if TYPE_CHECKING:
    from flashsac_bench.config.task import BaseTaskConfig

TASKS: dict[str, Task] = {task.name: task for task in (G1_WALK, GYMNASIUM)}


def task_of(task_cfg: BaseTaskConfig) -> Task:
    """What the task of `task_cfg` offers."""
    try:
        return TASKS[task_cfg.name]
    except KeyError:
        raise ValueError(f"no task {task_cfg.name!r}; the tasks: {sorted(TASKS)}") from None
