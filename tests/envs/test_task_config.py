"""Task and backend config groups: YAML vs dataclass defaults, validation."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from flashsac_bench.config import ConfigError, register_configs, to_config
from flashsac_bench.config.backend import EnvPlan, MujocoConfig
from flashsac_bench.config.task import (
    CommandRanges,
    CurriculumConfig,
    ObsConfig,
    ResetConfig,
    TaskConfig,
)

CONF = Path(__file__).resolve().parents[2] / "conf"


def _compose(*overrides: str) -> DictConfig:
    register_configs()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def test_yaml_groups_spell_out_the_dataclass_defaults() -> None:
    cfg = to_config(_compose())
    assert cfg.task == TaskConfig()
    assert cfg.backend == MujocoConfig()
    assert cfg.task.max_episode_steps == 1000
    assert cfg.task.sim_dt == pytest.approx(1 / 150)


def test_overrides_are_validated() -> None:
    cfg = to_config(_compose("task.obs.gravity_frame=world", "backend.num_threads=3"))
    assert cfg.task.obs.gravity_frame == "world" and cfg.backend.num_threads == 3
    with pytest.raises(ConfigError, match="gravity_frame"):
        to_config(_compose("task.obs.gravity_frame=up"))
    with pytest.raises(ConfigError, match="pose_weights"):
        to_config(_compose("task.pose_weights=[1.0]"))


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: CommandRanges(vx=[1.0, -1.0]), "task.commands.vx"),
        (lambda: CommandRanges(dead_zone=-0.1), "dead_zone"),
        (lambda: ObsConfig(joint_vel_noise=-1.0), "noise"),
        (lambda: CurriculumConfig(initial_scale=0.01), "min_scale <= initial_scale"),
        (lambda: CurriculumConfig(level_down_threshold=800.0), "level_down_threshold"),
        (lambda: ResetConfig(kp_scale=[1.1, 0.9]), "kp_scale"),
        (lambda: ResetConfig(root_vel=-0.5), "root_vel"),
        (lambda: TaskConfig(action_scale=0.0), "action_scale"),
        (lambda: TaskConfig(episode_length_s=0.001), "at least one control step"),
        (lambda: MujocoConfig(num_threads=-1), "num_threads"),
    ],
)
def test_invalid_values_raise_config_error(build: Callable[[], object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        build()


def test_thread_count_resolution() -> None:
    cores = len(os.sched_getaffinity(0))
    assert MujocoConfig(num_threads=0).resolved_num_threads(1000) == max(cores - 1, 1)
    assert MujocoConfig(num_threads=8).resolved_num_threads(3) == 3
    assert MujocoConfig(num_threads=2).resolved_num_threads(64) == 2


def test_the_gymnasium_task_is_its_own_schema_with_no_backend() -> None:
    from dataclasses import asdict

    from flashsac_bench.config import Config
    from flashsac_bench.config.task import GymnasiumTaskConfig

    cfg = to_config(_compose("task=gymnasium", "task.env_id=Hopper-v5"))
    assert cfg.task == GymnasiumTaskConfig(env_id="Hopper-v5") and cfg.backend is None
    assert cfg.env_plan() == EnvPlan("sync", 0, 1)  # in this process
    async_cfg = to_config(_compose("task=gymnasium", "task.vectorization=async"))
    assert async_cfg.env_plan() == EnvPlan("async", 1024, 1)  # a worker process per env
    # stored as plain data (a checkpoint's, a summary's), it reads back as itself
    assert to_config(asdict(cfg)) == cfg
    # the G1's defaults where a config names no task (Config built in code)
    assert Config().task == TaskConfig() and Config().backend == MujocoConfig()


@pytest.mark.parametrize("backend", ["mujoco", "mjwarp"])
def test_a_backend_with_the_gymnasium_task_is_refused(backend: str) -> None:
    with pytest.raises(ConfigError, match=rf"backend={backend} with task=gymnasium: .*drop"):
        to_config(_compose("task=gymnasium", f"backend={backend}"))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["task.env_id=Hopper-v5"], r"task\.env_id \(an option of task=gymnasium, not of task=g1"),
        (["task=gymnasium", "task.ctrl_dt=0.1"], r"task\.ctrl_dt \(an option of task=g1_walk_flat"),
        (["task=gymnasium", "task.vectorization=threads"], r"task\.vectorization must be one of"),
        (["task=gymnasium", "run.stop_at_walk=true"], r"run\.stop_at_walk judges the G1's"),
        (["task.name=gymnasium"], r"task=g1_walk_flat's options: choose the task with task=gym"),
    ],
)
def test_the_task_options_are_refused_in_one_line(overrides: list[str], message: str) -> None:
    from flashsac_bench.cli.errors import describe

    with pytest.raises(Exception) as err:
        to_config(_compose(*overrides))
    text, _ = describe(err.value) or (str(err.value), 1)
    assert "\n" not in text and re.search(message, text), text
