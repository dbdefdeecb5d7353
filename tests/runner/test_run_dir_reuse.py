"""A new run never writes into another run's outputs: without run.resume it refuses a run dir
that holds a summary, checkpoints or TensorBoard events (one line, before any work); with
run.resume=auto over an attempt that stopped before its first checkpoint it moves that
attempt's files aside instead of mixing them (a TensorBoard writer adds a file beside the old
one, and readers merge both)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from flashsac_bench.cli.train import train
from flashsac_bench.runner.resume import RunDirInUseError, earlier_outputs
from tests.fakes.fake_env import make_env
from tests.fakes.runs import read_summary, tiny_config


def _events(run_dir):
    return sorted(p.name for p in (run_dir / "tb").glob("events.out.tfevents.*"))


def test_a_fresh_run_refuses_a_dir_holding_an_earlier_run(tmp_path):
    train(tiny_config(iterations=6, logger="tensorboard"), run_dir=tmp_path, env_factory=make_env)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    assert earlier_outputs(tmp_path) == [
        "summary.json",
        "1 checkpoint",
        "TensorBoard events in tb/",
    ]
    with pytest.raises(RunDirInUseError, match="holds an earlier run's outputs .*run.resume=auto"):
        train(
            tiny_config(iterations=6, logger="tensorboard"), run_dir=tmp_path, env_factory=make_env
        )
    # refused before any work: nothing written, nothing removed
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("leftover", ["summary.json", "tb/events.out.tfevents.1.host.1.0"])
def test_each_kind_of_earlier_output_counts(tmp_path, leftover):
    (tmp_path / leftover).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / leftover).write_text("{}")
    assert earlier_outputs(tmp_path)
    assert earlier_outputs(tmp_path / "elsewhere") == []


def test_auto_sets_an_attempt_without_checkpoint_aside(tmp_path):
    # An attempt killed before its first checkpoint: its summary and events, no checkpoint.
    train(tiny_config(iterations=6, logger="tensorboard"), run_dir=tmp_path, env_factory=make_env)
    for ckpt in (tmp_path / "checkpoints").iterdir():
        ckpt.unlink()
    summary = json.loads((tmp_path / "summary.json").read_text())
    summary.update(complete=False, status="failed", iterations_done=3)
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    old_summary = (tmp_path / "summary.json").read_text()
    old_events = _events(tmp_path)
    # as a logger=wandb attempt leaves its W&B run's folder
    (tmp_path / "wandb" / "offline-run-1").mkdir(parents=True)
    train(
        tiny_config(iterations=6, logger="tensorboard", resume="auto"),
        run_dir=tmp_path,
        env_factory=make_env,
    )
    s = read_summary(tmp_path)
    assert s["complete"] and s["resumed_from"] is None
    aside = tmp_path / "earlier_attempt_1"
    assert (aside / "summary.json").read_text() == old_summary
    assert _events(aside) == old_events
    assert (aside / "wandb" / "offline-run-1").is_dir() and not (tmp_path / "wandb").exists()
    new_events = _events(tmp_path)
    assert len(new_events) == 1 and new_events != old_events
    assert s["iterations_done"] == 6


def test_the_cli_names_the_dir_in_one_line(tmp_path):
    (tmp_path / "summary.json").write_text("{}")
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(
        [sys.executable, "-m", "flashsac_bench", "+experiment=smoke", f"hydra.run.dir={tmp_path}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    want = f"flashsac_bench: run dir in use: {tmp_path} holds an earlier run's outputs"
    assert last.startswith(want)
    assert not (tmp_path / "checkpoints").exists()


def test_auto_skips_a_complete_run_whose_checkpoints_were_deleted(tmp_path):
    cfg = tiny_config(iterations=6, logger="tensorboard")
    train(cfg, run_dir=tmp_path, env_factory=make_env)
    for ckpt in (tmp_path / "checkpoints").iterdir():
        ckpt.unlink()  # as the device scripts do: they hold the whole replay ring
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    auto = tiny_config(iterations=6, logger="tensorboard", resume="auto")
    train(auto, run_dir=tmp_path, env_factory=make_env)
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()} == before
    assert not list(tmp_path.glob("earlier_attempt_*"))


@pytest.mark.parametrize("change", ["more_iterations", "other_seed"])
def test_auto_reruns_it_when_the_config_asks_for_something_else(tmp_path, change):
    train(tiny_config(iterations=6, logger="tensorboard"), run_dir=tmp_path, env_factory=make_env)
    for ckpt in (tmp_path / "checkpoints").iterdir():
        ckpt.unlink()
    kw = {"iterations": 8} if change == "more_iterations" else {"iterations": 6, "seed": 2}
    train(
        tiny_config(logger="tensorboard", resume="auto", **kw),
        run_dir=tmp_path,
        env_factory=make_env,
    )
    assert (tmp_path / "earlier_attempt_1" / "summary.json").is_file()
    assert read_summary(tmp_path)["iterations_done"] == kw["iterations"]
