"""bench.shard_host_bench: another checkout loads beside this one and is compared bit for bit."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

import flashsac_bench
from flashsac_bench.bench.shard_host_bench import load_tree, time_shard_host
from flashsac_bench.envs import g1_shard

PACKAGE_DIR = Path(flashsac_bench.__file__).parent


def _copy_tree(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    shutil.copytree(PACKAGE_DIR, root / "flashsac_bench", ignore=shutil.ignore_patterns("*.pyc"))
    return root


def test_load_tree_imports_a_separate_copy_and_leaves_this_one(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    own = {k: v for k, v in sys.modules.items() if k.split(".")[0] == "flashsac_bench"}
    mods = load_tree(str(root), ["flashsac_bench.envs.g1_shard"])
    other = mods["flashsac_bench.envs.g1_shard"]
    assert Path(other.__file__).is_relative_to(root)
    assert other.G1Shard is not g1_shard.G1Shard
    # Its own imports came from the copy too, not from this process's package.
    assert Path(other.R.__file__).is_relative_to(root)
    assert sys.modules["flashsac_bench.envs.g1_shard"] is g1_shard
    now = {k: v for k, v in sys.modules.items() if k.split(".")[0] == "flashsac_bench"}
    assert now == own


def test_an_identical_checkout_gives_the_same_outputs(tmp_path: Path) -> None:
    r = time_shard_host(4, rounds=2, per_round=3, baseline=str(_copy_tree(tmp_path)))
    assert r["same_outputs"] is True
    assert r["samples"] == 6
    for name in ("current", "baseline"):
        assert 0 < r[name]["step_median_us"] <= r[name]["step_p90_us"]
        assert 0 < r[name]["reset2_median_us"] <= r[name]["reset2_p90_us"]


def test_a_changed_reward_is_caught(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    rewards = root / "flashsac_bench" / "envs" / "g1_rewards.py"
    text = rewards.read_text()
    old = "return np.square(gravity[:, 0]) + np.square(gravity[:, 1])"
    assert old in text
    rewards.write_text(text.replace(old, "return np.abs(gravity[:, 0]) + np.square(gravity[:, 1])"))
    r = time_shard_host(4, rounds=1, per_round=2, baseline=str(root))
    assert r["same_outputs"] is False


def test_without_a_baseline_only_the_current_tree_is_timed() -> None:
    r = time_shard_host(3, rounds=1, per_round=2)
    assert set(r) == {"num_envs", "samples", "current"}
    with pytest.raises(KeyError):
        r["same_outputs"]
