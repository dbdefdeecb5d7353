"""The config's options are the ones on record, few, and read: tests/data/config_keys.txt lists
every leaf key of the composed default config and of each other backend's options; every preset
on every backend stays under the cap; no composition carries a key that its run does not read.
An option that lost its measurement is deleted, not hidden."""

from __future__ import annotations

import inspect
import re
from dataclasses import asdict, fields
from functools import cache
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from flashsac_bench.config import register_configs, stored
from flashsac_bench.config.backend import BACKENDS
from flashsac_bench.config.keys import flatten
from tests.config.test_config import composed

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "tests" / "data" / "config_keys.txt"
PRESETS = sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml"))
# Presets whose task is task=gymnasium (no backend: conf/task/gymnasium.yaml drops the group).
GYM_PRESETS = [
    p
    for p in PRESETS
    if "task: gymnasium" in (ROOT / "conf" / "experiment" / f"{p}.yaml").read_text()
]
# Every composition a user can ask for: the default and each G1 preset on each backend; the
# Gymnasium task alone, on the smoke preset, and its presets.
COMPOSITIONS = (
    [
        [*([f"+experiment={preset}"] if preset else []), f"backend={backend}"]
        for preset in [None, *PRESETS]
        if preset not in GYM_PRESETS
        for backend in BACKENDS
    ]
    + [["task=gymnasium"], ["+experiment=smoke", "task=gymnasium"]]
    + [[f"+experiment={preset}"] for preset in GYM_PRESETS]
)
MAX_LEAVES = 110
# Levers that lost their measurements (docs/paths.md, "Levers that lost"), and the keys that
# were derived, merged, made fixed or moved (config.stored): none may come back.
LEVERS = (
    "path.fused_optimizer",
    "path.fused_optimizer_in_graph",
    "path.joint_critic_forward",
    "path.shared_input_stats",
    "path.aligned_layout",
    "path.compiled_steps",
    "path.functional_steps",
    "path.inductor_cudagraphs",
    "path.compile_rng",
    "path.projection_gather",
    "path.combo_kernels",
    "path.compile_mode",
    "run.overlap_store",
    "run.collector_thread",
    "run.prefill_during_cold_start",
    "update.policy_before_critic",
)
REMOVED = (*LEVERS, *stored.REMOVED, *stored.MOVED)

register_configs()


@cache
def leaf_keys(overrides: tuple[str, ...] = ()) -> list[str]:
    with initialize_config_module("flashsac_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    tree = OmegaConf.to_container(cfg, resolve=False)
    tree.pop("hydra", None)
    return list(flatten(tree))


def recorded() -> dict[str, list[str]]:
    """{"default": keys, "backend=mjwarp": keys, ...}: the record's sections."""
    sections: dict[str, list[str]] = {"default": []}
    section = "default"
    for line in (ln.strip() for ln in RECORD.read_text().splitlines()):
        if line.startswith("["):
            section = line.strip("[]")
            sections[section] = []
        elif line and not line.startswith("#"):
            sections[section].append(line)
    return sections


def test_the_default_config_has_exactly_the_recorded_keys():
    keys = leaf_keys()
    assert len(keys) == len(set(keys))
    want = recorded()["default"]
    added, gone = sorted(set(keys) - set(want)), sorted(set(want) - set(keys))
    assert not added and not gone, f"new keys {added}, missing keys {gone}: update {RECORD.name}"


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "mujoco"])
def test_every_other_backend_has_exactly_its_recorded_keys(backend):
    """The default config's keys, its backend.* ones replaced by the backend's own."""
    keys = leaf_keys((f"backend={backend}",))
    want = [k for k in recorded()["default"] if not k.startswith("backend.")]
    want += recorded()[f"backend={backend}"]
    added, gone = sorted(set(keys) - set(want)), sorted(set(want) - set(keys))
    assert not added and not gone, f"new keys {added}, missing keys {gone}: update {RECORD.name}"


@pytest.mark.parametrize("overrides", COMPOSITIONS, ids=" ".join)
def test_every_composition_stays_small(overrides):
    keys = leaf_keys(tuple(overrides))
    assert len(keys) <= MAX_LEAVES, len(keys)
    assert sum(k.startswith("path.") for k in keys) <= 5
    assert not set(keys) & set(REMOVED), sorted(set(keys) & set(REMOVED))


@pytest.mark.parametrize("overrides", COMPOSITIONS, ids=" ".join)
def test_a_composition_holds_the_options_of_its_backend_and_task_and_no_others(overrides):
    cfg = composed(list(overrides))
    keys = leaf_keys(tuple(overrides))
    for group in ("backend", "task"):
        node = cfg[group]
        schema = None if node is None else OmegaConf.get_type(node)  # the option's own schema
        own = set() if schema is None else {f"{group}.{k}" for k in flatten(asdict(schema()))}
        assert {k for k in keys if k.startswith(f"{group}.")} == own
    if cfg.backend is None:
        assert "backend" in keys  # a task that steps its envs itself composes backend: null


def test_the_gymnasium_task_has_exactly_its_recorded_keys():
    """The default config's keys, its task.* ones replaced by the Gymnasium task's, with no
    backend."""
    keys = leaf_keys(("task=gymnasium",))
    want = [k for k in recorded()["default"] if not k.startswith(("backend.", "task."))]
    want += ["backend", *recorded()["task=gymnasium"]]
    added, gone = sorted(set(keys) - set(want)), sorted(set(want) - set(keys))
    assert not added and not gone, f"new keys {added}, missing keys {gone}: update {RECORD.name}"


# Keys that code outside config/ reads without naming them: every reward weight by its field
# name (envs.g1.task.REWARD_TERMS), the episode length through TaskConfig.max_episode_steps.
READ_BY_FIELD_NAME = ("task.rewards.",)
READ_THROUGH = {"task.episode_length_s": "max_episode_steps"}


def _package_source(inside_config: bool) -> str:
    files = (ROOT / "flashsac_bench").rglob("*.py")
    return "\n".join(p.read_text() for p in files if ("config" in p.parts) == inside_config)


def test_no_composition_carries_a_key_that_nothing_reads():
    """Every leaf of every composition is read by the code that runs it (outside config/):
    by attribute, by field name, or through a property of its group that is read."""
    from flashsac_bench.config.task import RewardWeights, TaskConfig
    from flashsac_bench.envs.g1.task import REWARD_TERMS

    assert set(REWARD_TERMS) == {f.name for f in fields(RewardWeights)}
    source = _package_source(inside_config=False)
    for key, prop in READ_THROUGH.items():
        assert key.split(".")[-1] in inspect.getsource(getattr(TaskConfig, prop).fget)
        assert re.search(rf"\.{prop}\b", source), prop
    unread = set()
    for overrides in COMPOSITIONS:
        for key in leaf_keys(tuple(overrides)):
            if key.startswith(READ_BY_FIELD_NAME) or key in READ_THROUGH:
                continue
            if not re.search(rf"\.{key.split('.')[-1]}\b", source):
                unread.add(key)
    assert not unread, f"read nowhere outside flashsac_bench/config: {sorted(unread)}"
