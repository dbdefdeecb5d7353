"""logger=wandb in W&B's offline mode (no network, no account): the run folder in <run dir>/wandb
holds the scalars TensorBoard gets, under the same names at the same steps, the resolved config
and the run dir's name; a run stopped by SIGTERM to its process group and resumed continues the
same W&B run; evaluate adds its GIF to it. Without the [wandb] extra, logger=wandb is one line
naming the install command, before any work.

The offline folder's run-<id>.wandb is W&B's record log (LevelDB's log format: 32 KiB blocks of
checksummed chunks, each record a wandb_internal_pb2.Record); `wandb_records` reads it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from flashsac_bench.config import ConfigError, to_config
from flashsac_bench.config.logger import LoggerConfig
from tests.fakes.runs import cli_overrides, fake_env_environ, read_summary, run_cli

BLOCK = 32768
W_AND_B_OWN = {"_timestamp", "_runtime", "_step"}
# Values that are the same in two runs of one seed (the rest are timings).
DETERMINISTIC = ("Loss/", "Policy/", "Train/", "Reward/", "reward/", "Env/")


@pytest.fixture(scope="module")
def wandb_extra() -> None:
    import importlib.util

    if importlib.util.find_spec("wandb") is None:
        pytest.skip('needs the [wandb] extra: pip install -e ".[wandb]"')


def offline_environ(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The fake env's CLI environment, W&B offline, its config and caches in this test's dir."""
    env = fake_env_environ(**extra)
    for key in ("WANDB_API_KEY", "WANDB_DIR", "WANDB_PROJECT", "WANDB_ENTITY", "WANDB_RUN_GROUP"):
        env.pop(key, None)
    env["WANDB_MODE"] = "offline"
    for key in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        env[key] = str(tmp_path / "wandb_home" / key.lower())
    return env


def wandb_records(path: Path) -> list[Any]:
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B", path
    records, pos, pending = [], 7, b""
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if length == 0 and kind == 0:  # the block's zero padding
            pos += left
            continue
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a whole record, or its last chunk
            record = pb.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def offline_runs(run_dir: Path) -> list[Path]:
    """The run's offline folders, oldest first (one per process that logged)."""
    return sorted((run_dir / "wandb").glob("offline-run-*"))


def read_offline_run(folder: Path) -> dict[str, Any]:
    """run id and name, config, history ({step: {key: value}}) and the exit code the run
    finished with (None: not finished) of one offline folder."""
    (log,) = folder.glob("run-*.wandb")
    out: dict[str, Any] = {"history": {}, "config": {}, "exit_code": None}
    for record in wandb_records(log):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            out["id"], out["name"] = record.run.run_id, record.run.display_name
            out["project"] = record.run.project
            for item in record.run.config.update:
                out["config"][item.key] = json.loads(item.value_json)
        elif kind == "config":
            for item in record.config.update:
                out["config"][item.key] = json.loads(item.value_json)
        elif kind == "exit":
            out["exit_code"] = record.exit.exit_code
        elif kind == "history":
            items = {
                (i.key or "/".join(i.nested_key)): json.loads(i.value_json)
                for i in record.history.item
            }
            out["history"][int(record.history.step.num)] = {
                k: v for k, v in items.items() if k not in W_AND_B_OWN
            }
    return out


def tensorboard_points(log_dir: Path) -> dict[int, dict[str, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    acc.Reload()
    points: dict[int, dict[str, float]] = {}
    for tag in acc.Tags()["scalars"]:
        for event in acc.Scalars(tag):
            points.setdefault(event.step, {})[tag] = event.value
    return points


# ---------------------------------------------------------------------------- no extra, no key
def test_without_the_extra_logger_wandb_is_one_line_naming_the_install(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    code = (
        "import sys; sys.modules['wandb'] = None; from flashsac_bench.__main__ import main; main()"
    )
    args = [*cli_overrides(8, 4), "logger=wandb", f"hydra.run.dir={run_dir}"]
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=tmp_path,
        env=fake_env_environ(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [
        "flashsac_bench: invalid configuration: logger=wandb needs the [wandb] extra (wandb not "
        'installed): pip install -e ".[wandb]"'
    ], proc.stderr
    assert list(tmp_path.iterdir()) == []  # no run dir, no outputs/, no wandb/


def test_online_without_a_key_is_one_line_and_offline_needs_none(
    wandb_extra: None, tmp_path: Path, monkeypatch
) -> None:
    for key in ("WANDB_API_KEY", "WANDB_MODE", "NETRC"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc: no stored key
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "config"))
    with pytest.raises(ConfigError, match=r"^logger=wandb: no W&B API key \(wandb login"):
        LoggerConfig(name="wandb").check_available()
    monkeypatch.setenv("WANDB_MODE", "offline")
    LoggerConfig(name="wandb").check_available()
    with pytest.raises(ConfigError, match="logger.name must be one of tensorboard, wandb, none"):
        LoggerConfig(name="mlflow")


@pytest.mark.slow
def test_the_old_tensorboard_switch_names_the_logger_group(tmp_path: Path) -> None:
    moved = r"run.tensorboard \(now the logger group: logger=tensorboard, logger=wandb or logger"
    with pytest.raises(ConfigError, match=moved):
        to_config({"run": {"tensorboard": False}})
    # On the command line, with and without Hydra's `+`: one line, nothing written.
    for override in ("run.tensorboard=false", "+run.tensorboard=false"):
        proc = run_cli([*cli_overrides(8, 4), override], cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        (line,) = proc.stderr.strip().splitlines()
        assert re.search(moved, line), line
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- offline runs
@pytest.mark.slow
def test_an_offline_run_records_tensorboards_scalars_and_the_resolved_config(
    wandb_extra: None, tmp_path: Path
) -> None:
    runs, procs = {}, {}
    for logger in ("tensorboard", "wandb"):  # side by side: one core each
        runs[logger] = run_dir = tmp_path / f"run_{logger}"
        args = [*cli_overrides(8, 30), f"logger={logger}", f"hydra.run.dir={run_dir}"]
        procs[logger] = subprocess.Popen(
            [sys.executable, "-m", "flashsac_bench", *args],
            cwd=tmp_path,
            env=offline_environ(tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    for proc in procs.values():
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-3000:]
    assert not (runs["wandb"] / "tb").exists() and not (runs["tensorboard"] / "wandb").exists()
    tb = tensorboard_points(runs["tensorboard"] / "tb")
    (folder,) = offline_runs(runs["wandb"])
    wb = read_offline_run(folder)
    # The same points: the same steps, the same names at each step, the same values of
    # everything that is not a timing (TensorBoard keeps float32).
    assert sorted(wb["history"]) == sorted(tb) == [9, 19, 29]
    for step, names in tb.items():
        assert set(wb["history"][step]) == set(names), step
        for tag, value in names.items():
            if tag.startswith(DETERMINISTIC):
                assert wb["history"][step][tag] == pytest.approx(value, rel=1e-6, abs=1e-6), tag
    assert {"Loss/critic", "perf/iter_ms", "Train/mean_episode_return"} <= set(tb[29])
    # The resolved config, the run dir's name, the default project; summary and checkpoint
    # name the W&B run.
    summary = read_summary(runs["wandb"])
    assert {k: v for k, v in wb["config"].items() if k != "_wandb"} == summary["config"]
    assert summary["config"]["logger"] == {"name": "wandb"}
    assert (wb["name"], wb["project"], wb["exit_code"]) == ("run_wandb", "flashsac_bench", 0)
    assert summary["logger"]["wandb_run_id"] == wb["id"] and folder.name.endswith(wb["id"])
    ckpt = sorted((runs["wandb"] / "checkpoints").glob("iter_*.pt"))[-1]
    payload = torch.load(ckpt, map_location="cpu", weights_only=True)
    assert payload["logger"]["wandb_run_id"] == wb["id"]


@pytest.mark.slow
def test_a_run_stopped_by_sigterm_and_resumed_continues_the_same_wandb_run(
    wandb_extra: None, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    args = [*cli_overrides(8, 60), "logger=wandb", "run.checkpoint_every=20"]
    args.append(f"hydra.run.dir={run_dir}")
    env = offline_environ(tmp_path, FAKE_ENV_STEP_SLEEP="0.05")
    proc = subprocess.Popen(
        [sys.executable, "-m", "flashsac_bench", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, signalled as a whole (SLURM, Docker)
    )
    try:
        # Stopped once its first checkpoint (iteration 20) is written: two points logged
        # (steps 9 and 19), 40 iterations of 0.05 s steps still to go.
        deadline = time.monotonic() + 120
        while not list((run_dir / "checkpoints").glob("iter_*.pt")):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no checkpoint within 120 s"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    first = read_summary(run_dir)
    assert first["status"] == "interrupted" and first["iterations_done"] < 60

    env.pop("FAKE_ENV_STEP_SLEEP")
    done = run_cli([*args, "run.resume=auto"], env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert read_summary(run_dir)["complete"]
    before, after = (read_offline_run(f) for f in offline_runs(run_dir))
    assert before["id"] == after["id"] == first["logger"]["wandb_run_id"]
    assert before["history"] and after["history"]
    assert max(before["history"]) < min(after["history"])  # the continuation's points follow
    assert max(after["history"]) == 59
    # W&B shows the interrupted segment as failed, the run that completed it as finished.
    assert (before["exit_code"], after["exit_code"]) == (1, 0)


@pytest.mark.slow
def test_evaluate_adds_its_gif_to_the_training_wandb_run(wandb_extra: None, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = offline_environ(tmp_path, OMP_NUM_THREADS="1")
    env.pop("FLASHSAC_BENCH_ENV_FACTORY")  # the real G1 env: evaluate renders it
    train = [
        "+experiment=smoke",
        "run.num_envs=4",
        "run.iterations=12",
        "run.log_every=4",
        "logger=wandb",
        f"hydra.run.dir={run_dir}",
    ]
    proc = run_cli(train, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]

    def evaluate(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "flashsac_bench.evaluate", f"checkpoint={run_dir}"]
            + ["episodes=1", "num_envs=1", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    evaluate("render_seconds=0.5")
    report = json.loads((run_dir / "eval.json").read_text())
    training, evaluation = (read_offline_run(f) for f in offline_runs(run_dir))
    assert report["wandb_run_id"] == training["id"] == evaluation["id"]
    point = evaluation["history"][12]  # the checkpoint's iteration, after training's last step
    assert point["eval/rollout/_type"] == "video-file"
    media = sorted((offline_runs(run_dir)[1] / "files").rglob("*.gif"))
    assert len(media) == 1 and media[0].read_bytes() == (run_dir / "eval.gif").read_bytes()
    length = report["goals"]["episode_length_mean"]
    assert point["eval/episode_length_mean"] == pytest.approx(length)
    # wandb=false: eval.json only, no W&B run touched
    proc = evaluate("render=false", "wandb=false")
    assert len(offline_runs(run_dir)) == 2 and "W&B" not in proc.stdout
    assert "wandb_run_id" not in json.loads((run_dir / "eval.json").read_text())
