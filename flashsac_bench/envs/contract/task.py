"""What a task offers: the one record that evaluation, export, the runtime checks and the run
record ask of a task (`envs.tasks.task_of`), so that no caller decides by the config's type.

Each task's folder declares its record (envs/g1/offer.py, envs/gymnasium/offer.py) and
envs/tasks.py lists them. A record's functions import their task's packages (MuJoCo, Warp,
Gymnasium) when called, never when the record is imported."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flashsac_bench.config.backend import BackendConfig
    from flashsac_bench.config.task import BaseTaskConfig
    from flashsac_bench.envs.contract.api import DeviceVecEnv, VecEnv

# How an evaluation renders an episode: replaying the joint states its rollout recorded, or the
# task's env rendering an episode of its own.
RENDERS = ("states", "episode")


@dataclass(frozen=True)
class Task:
    """One task's offer (its name is the config's `task.name`)."""

    name: str
    # The G1 walk: per-step walking metrics and the walking goals in an evaluation; the
    # walking thresholds of run.stop_at_walk are the config's (BaseTaskConfig.walk_tracking_top).
    walks: bool
    # The robustness conditions of an evaluation (pushes, link masses, commands) apply.
    robustness: bool
    # The CPU runtime model (cli.runtime_estimate) was fitted to this task's env cost.
    estimates_cpu_runtime: bool
    # One of RENDERS.
    renders: str
    # A checkpoint carries the task's model file (`task.model_file`): evaluate and export step
    # the stored model, and the runtime checks check the file.
    stores_model: bool
    # (task, backend or None, num_envs, seed) -> the envs; the caller closes them.
    make_env: Callable[[BaseTaskConfig, BackendConfig | None, int, int], VecEnv | DeviceVecEnv]
    # What a checkpoint carries of the task (runner.records.RunInfo.model): `sha256` (what
    # identifies it) and `model_file` always.
    record: Callable[[BaseTaskConfig], dict[str, Any]]
    # The run record's fields of this task beyond `task` (runner.training_config).
    run_fields: Callable[[BaseTaskConfig], dict[str, Any]]
    # (task, the checkpoint's model record) -> what an exported policy's metadata says of the
    # task: its timing, its joints or its env's action bounds.
    export_fields: Callable[[BaseTaskConfig, dict[str, Any]], dict[str, Any]]
    # A task whose env is known only by making one: makes one and returns its (obs, critic
    # obs, action) sizes, ConfigError for one the adapter cannot step. None: the task's model
    # file is what the runtime checks check (stores_model).
    probe: Callable[[BaseTaskConfig], tuple[int, int, int]] | None = None

    def __post_init__(self) -> None:
        if self.renders not in RENDERS:
            raise ValueError(f"Task.renders must be one of {RENDERS}, got {self.renders!r}")


def no_env(task_cfg: BaseTaskConfig, backend_cfg: BackendConfig | None) -> ValueError:
    """The error of a task asked for envs on a backend it does not run on."""
    backend = "no backend" if backend_cfg is None else f"backend {backend_cfg.name!r}"
    return ValueError(f"no env for task {task_cfg.name!r} on {backend}")
