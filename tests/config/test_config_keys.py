"""The config's options are the ones on record: tests/data/config_keys.txt lists every leaf key of
the composed default config. An option that lost its measurement is deleted, not hidden."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from flashsac_bench.config.keys import flatten

RECORD = Path(__file__).resolve().parents[1] / "data" / "config_keys.txt"
# Levers that lost their measurements (docs/paths.md, "Levers that lost"): none may come back.
REMOVED = (
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


def leaf_keys(overrides: list[str] | None = None) -> list[str]:
    with initialize_config_module("flashsac_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=overrides or [])
    tree = OmegaConf.to_container(cfg, resolve=False)
    tree.pop("hydra", None)
    return list(flatten(tree))


def recorded() -> list[str]:
    lines = (ln.strip() for ln in RECORD.read_text().splitlines())
    return [ln for ln in lines if ln and not ln.startswith("#")]


def test_the_default_config_has_exactly_the_recorded_keys():
    keys = leaf_keys()
    assert len(keys) == len(set(keys))
    added, gone = sorted(set(keys) - set(recorded())), sorted(set(recorded()) - set(keys))
    assert not added and not gone, f"new keys {added}, missing keys {gone}: update {RECORD.name}"


def test_the_config_stays_small():
    keys = leaf_keys()
    assert len(keys) <= 110
    assert sum(k.startswith("path.") for k in keys) <= 5


def test_no_removed_lever_exists_in_any_preset():
    from tests.config.test_config import PRESETS

    for preset in PRESETS:
        keys = set(leaf_keys([f"+experiment={preset}"]))
        assert not keys & set(REMOVED), (preset, sorted(keys & set(REMOVED)))
