"""A config stored by an older version (a checkpoint's, a summary's) reads as this version's
(config.stored): removed keys holding what this version does are dropped, any other value is
refused in one line naming the key, and a command that names a removed key is told why."""

from __future__ import annotations

import copy
from dataclasses import asdict
from typing import Any

import pytest

from flashsac_bench.config import Config, ConfigError, to_config
from flashsac_bench.config.backend import MjwarpConfig, WarpOptions
from flashsac_bench.config.stored import REMOVED, upgrade_stored_config
from flashsac_bench.runner.resume import config_differences


def before_the_diet(backend: str = "mujoco") -> dict[str, Any]:
    """The default config as a checkpoint stored it before the removed keys went."""
    old = asdict(Config())
    old["update"].update(name="u2", target_frequency=1)
    old["path"]["fallback_to_compile"] = True
    old["learner"]["target_entropy"] = None
    cpu = {"mode": "auto", "workers": 0, "num_threads": 0, "worker_timeout_s": 10.0}
    if backend == "mujoco":
        old["backend"] = {"name": "mujoco", **cpu, "warp": None}
    else:
        warp = asdict(WarpOptions(device="cpu", overlap=False))
        old["backend"] = {"name": "mjwarp", **cpu, "warp": warp}
        old["hardware"] = {**old["hardware"], "device": "cpu"}
    return old


def test_a_config_from_before_the_diet_reads_as_this_versions():
    old = before_the_diet()
    assert to_config(upgrade_stored_config(copy.deepcopy(old))) == Config()
    assert config_differences(old, Config()) == []  # a resume sees no difference
    warp = to_config(upgrade_stored_config(before_the_diet("mjwarp")))
    assert warp.backend == MjwarpConfig(warp=WarpOptions(device="cpu", overlap=False))


def test_without_the_upgrade_the_old_keys_are_refused():
    with pytest.raises(ConfigError, match=r"unknown keys update\.name \(removed: the label"):
        to_config(before_the_diet())


@pytest.mark.parametrize(
    ("group", "key", "value"),
    [("update", "target_frequency", 2), ("learner", "target_entropy", -20.0)],
)
def test_a_removed_key_asking_for_what_this_version_cannot_do_is_refused(group, key, value):
    old = before_the_diet()
    old[group][key] = value
    with pytest.raises(ConfigError) as read:  # evaluate / export / convert
        to_config(upgrade_stored_config(copy.deepcopy(old)))
    with pytest.raises(ConfigError) as resumed:  # resume
        config_differences(old, Config())
    for err in (read, resumed):
        assert f"{group}.{key}={value!r}, an option this version removed" in str(err.value)
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("key", sorted(REMOVED))
def test_a_command_that_names_a_removed_key_is_told_why(key):
    group, leaf = key.split(".")
    with pytest.raises(ConfigError, match=rf"unknown key {key} \(removed: "):
        to_config({group: {leaf: 1}})
