"""Config groups that other groups' presets are built from."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from flashsac_bench.config import Config, to_config
from flashsac_bench.config.backend import BackendConfig
from tests.config.test_config import composed


def test_the_gpu_presets_are_the_cuda_base_under_their_own_name():
    base = to_config(composed(["hardware=cuda"])).hardware
    for name in ("h200", "rtx4090"):
        hardware = to_config(composed([f"hardware={name}"])).hardware
        assert hardware.name == name
        assert replace(hardware, name=base.name) == base


def test_the_cpu_presets_train_the_tiny_learner():
    tiny = to_config(composed(["learner=tiny"]))
    default = to_config(composed([]))
    assert tiny.learner != default.learner and tiny.replay != default.replay
    for preset in ("smoke", "parity_cpu"):
        config = to_config(composed([f"+experiment={preset}"]))
        assert (config.learner, config.replay) == (tiny.learner, tiny.replay)


def test_the_flashsac_learner_is_the_schema_default():
    assert to_config(composed(["learner=flashsac"])) == to_config(composed([]))


CONF = Path(__file__).resolve().parents[2] / "conf"
# Config groups of conf/ (experiment: presets across groups; hydra: Hydra's own).
GROUPS = sorted(
    p.name for p in CONF.iterdir() if p.is_dir() and p.name not in ("experiment", "hydra")
)


def _leaves(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _default(key: str, backend: str):
    node = Config(backend=BackendConfig.schema_for(backend)())
    for part in key.split("."):
        node = getattr(node, part)
    return node


OPTIONS = sorted(p.relative_to(CONF) for g in GROUPS for p in (CONF / g).glob("*.yaml"))


@pytest.mark.parametrize("option", OPTIONS, ids=str)
def test_an_option_holds_only_what_it_changes_from_the_schema(option):
    """The schema holds every default value, once; an option's YAML only what it changes."""
    text = (CONF / option).read_text()
    tree = yaml.safe_load(text) or {}
    tree.pop("defaults", None)
    group = option.parts[0]
    prefix = "" if "@package _global_" in text else f"{group}."
    backend = option.stem if group == "backend" else "mujoco"
    for key, value in _leaves(tree, prefix).items():
        if key != f"{group}.name":
            assert value != _default(key, backend), f"{option}: {key}={value} is the default"


@pytest.mark.parametrize("config", ["config", "convert"])
def test_every_group_is_chosen_in_the_defaults_list(config):
    """The defaults list of each entry point chooses an option of every group; the schema's
    defaults are the default options' values."""
    defaults = yaml.safe_load((CONF / f"{config}.yaml").read_text())["defaults"]
    chosen = {k: v for entry in defaults if isinstance(entry, dict) for k, v in entry.items()}
    chosen = {k: v for k, v in chosen.items() if not k.startswith("override ")}
    assert sorted(chosen) == GROUPS
    assert all((CONF / group / f"{option}.yaml").is_file() for group, option in chosen.items())
    assert to_config(composed([])) == Config()
