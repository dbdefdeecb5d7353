"""Task and backend config groups: YAML vs dataclass defaults, validation."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from flashsac_bench.config import ConfigError, register_configs, to_config
from flashsac_bench.config.backend import MujocoConfig
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
