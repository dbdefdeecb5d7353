"""Resume rules, checkpoint fallback, atomic latest.txt, disk-full errors, writer liveness."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from flashsac_bench.cli import errors as cli_errors
from flashsac_bench.cli.train import train
from flashsac_bench.config import Config
from flashsac_bench.config.keys import flatten
from flashsac_bench.runner import checkpoint as ckpt_mod
from flashsac_bench.runner.checkpoint import (
    CHECKPOINT_DIR,
    LATEST_NAME,
    CheckpointError,
    checkpoint_path,
    save_checkpoint,
)
from flashsac_bench.runner.liveness import (
    HEARTBEAT_NAME,
    STALE_AFTER_S,
    run_state,
    writer_identity,
)
from flashsac_bench.runner.resume import (
    RESUME_MAY_CHANGE,
    ResumeError,
    ResumePlan,
    RunDirInUseError,
    RunDirLayoutError,
    check_compatible,
    config_differences,
    find_checkpoint,
)
from flashsac_bench.runner.run_dir.lock import Heartbeat
from flashsac_bench.runner.writes import DiskFullError
from tests.fakes.fake_env import FakeEnv
from tests.fakes.runs import cli_overrides, fake_env_environ, read_summary, tiny_config


def _factory(task, backend, num_envs, seed, array_factory=None):
    return FakeEnv(num_envs, seed)


# ---------------------------------------------------------------------------- what may change
def test_the_allowed_keys_are_real_config_keys():
    """Keys of the default config or of another option's own schema (backend=mjwarp's,
    task=gymnasium's)."""
    from flashsac_bench.config.keys import OPTION_GROUPS

    keys = set(flatten(asdict(Config())))
    for base in OPTION_GROUPS:
        for option in base.OPTIONS:
            keys |= {f"{base.GROUP}.{k}" for k in flatten(asdict(base.schema_for(option)()))}
    assert set(RESUME_MAY_CHANGE) <= keys


def test_the_docs_list_exactly_the_allowed_keys():
    """docs/reliability.md's table of what a resume may change is RESUME_MAY_CHANGE."""
    text = (Path(__file__).parents[2] / "docs" / "reliability.md").read_text()
    first_cells = [
        line.split("|")[1] for line in text.splitlines() if line.lstrip().startswith("| `")
    ]
    documented = {key for cell in first_cells for key in re.findall(r"`([a-z_.]+)`", cell)}
    assert documented == set(RESUME_MAY_CHANGE)


def test_every_other_differing_key_is_named_in_one_message():
    saved = asdict(tiny_config(update="u2"))
    now = tiny_config(update="u8", iterations=99, log_every=2, checkpoint_every=3)
    now = replace(now, learner=replace(now.learner, critic_hidden_dim=32))
    diffs = config_differences(saved, now)
    assert "update.updates_per_step (checkpoint 2, now 8)" in diffs
    assert "learner.critic_hidden_dim (checkpoint 16, now 32)" in diffs
    assert len(diffs) == 2  # run.iterations / log_every / checkpoint_every may change
    plan = ResumePlan(path=Path("x.pt"), payload={"config": saved}, iteration=5)
    with pytest.raises(ResumeError) as err:
        check_compatible(plan, now)
    assert all(d in str(err.value) for d in diffs) and "\n" not in str(err.value)


def test_a_key_the_checkpoint_predates_counts_as_its_default():
    saved = asdict(tiny_config())
    del saved["run"]["seed"]  # as if written before the key existed
    assert config_differences(saved, tiny_config()) == []  # tiny_config's seed is the default
    assert config_differences(saved, tiny_config(seed=5)) == ["run.seed (checkpoint 1, now 5)"]


def test_a_config_that_resolves_differently_is_refused():
    cfg = tiny_config()
    plan = ResumePlan(
        path=Path("x.pt"),
        payload={"config": asdict(cfg), "training_config": {"dtype": "bfloat16"}},
        iteration=3,
    )
    with pytest.raises(ResumeError, match=r"hardware.dtype \(resolved\) \(checkpoint 'bfloat16'"):
        check_compatible(plan, cfg, {"dtype": "float32", "device": "cpu"})
    check_compatible(plan, cfg)  # without the resolved values: the config alone matches


def test_nothing_left_to_do_says_what_to_pass():
    cfg = tiny_config(iterations=100)
    plan = ResumePlan(
        path=Path("r/iter_0000120.pt"), payload={"config": asdict(cfg)}, iteration=120
    )
    with pytest.raises(
        ResumeError, match=r"run.iterations=N with N > 120 \(e.g. run.iterations=220"
    ):
        check_compatible(plan, cfg)


# ---------------------------------------------------------------------------- which checkpoint
@pytest.fixture(scope="module")
def three_checkpoints(tmp_path_factory):
    run = tmp_path_factory.mktemp("fallback") / "run"
    train(tiny_config(iterations=12, checkpoint_every=4), run_dir=run, env_factory=_factory)
    return run


def _copy_run(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_resume_falls_back_to_the_newest_intact_checkpoint(three_checkpoints, tmp_path, caplog):
    run = _copy_run(three_checkpoints, tmp_path / "run")
    newest = checkpoint_path(run, 12)
    data = newest.read_bytes()
    newest.write_bytes(data[: len(data) // 3])  # cut short
    plan = find_checkpoint(run)
    assert plan.path == checkpoint_path(run, 8) and plan.iteration == 8
    (note,) = plan.notes
    assert str(newest) in note and str(checkpoint_path(run, 8)) in note and "truncated" in note

    # ... and the runner continues from it, saying so
    caplog.set_level("WARNING", logger="flashsac_bench.runner")
    out = tmp_path / "continued"
    train(
        tiny_config(iterations=14, checkpoint_every=4, resume=str(run)),
        run_dir=out,
        env_factory=_factory,
    )
    s = read_summary(out)
    assert s["resumed_from"] == str(checkpoint_path(run, 8)) and s["iterations_done"] == 14
    assert any(str(newest) in r.getMessage() for r in caplog.records)


def test_a_checkpoint_named_by_latest_but_missing_is_reported(three_checkpoints, tmp_path):
    run = _copy_run(three_checkpoints, tmp_path / "run")
    checkpoint_path(run, 12).unlink()
    assert (run / "checkpoints" / "latest.txt").read_text().strip() == "iter_0000012.pt"
    plan = find_checkpoint(run)
    assert plan.iteration == 8
    assert "iter_0000012.pt (named by latest.txt) is missing" in plan.notes[0]


def test_no_intact_checkpoint_lists_every_file(three_checkpoints, tmp_path):
    run = _copy_run(three_checkpoints, tmp_path / "run")
    files = sorted((run / "checkpoints").glob("iter_*.pt"))
    assert len(files) == 3
    for f in files:
        f.write_text("garbage")
    with pytest.raises(CheckpointError) as err:
        find_checkpoint(run)
    assert all(str(f) in str(err.value) for f in files)


# ---------------------------------------------------------------------------- run.resume=auto
# A newest checkpoint that is cut short or has flipped bytes is not "a newer checkpoint another
# run wrote": the run continues from the newest intact one, and the warning names every file it
# could not read. A latest.txt that names no checkpoint, and a run dir whose `checkpoints` is a
# file, are one line naming the file, before any work.
def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_truncate, _flip], ids=["truncated", "bit_flipped"])
def test_auto_continues_from_the_newest_intact_checkpoint(
    three_checkpoints, tmp_path, damage, caplog
):
    run = _copy_run(three_checkpoints, tmp_path / "run")
    newest, intact = checkpoint_path(run, 12), checkpoint_path(run, 8)
    damage(newest)
    caplog.set_level("WARNING", logger="flashsac_bench.runner")
    train(
        tiny_config(iterations=14, checkpoint_every=4, resume="auto"),
        run_dir=run,
        env_factory=_factory,
    )
    summary = read_summary(run)
    assert summary["resumed_from"] == str(intact) and summary["iterations_done"] == 14
    (note,) = [r.getMessage() for r in caplog.records if "falling back" in r.getMessage()]
    assert str(newest) in note and str(intact) in note and "iteration 8" in note


def test_every_file_it_cannot_read_is_named(three_checkpoints, tmp_path, caplog):
    run = _copy_run(three_checkpoints, tmp_path / "run")
    _truncate(checkpoint_path(run, 12))
    _flip(checkpoint_path(run, 8))
    caplog.set_level("WARNING", logger="flashsac_bench.runner")
    train(
        tiny_config(iterations=14, checkpoint_every=4, resume="auto"),
        run_dir=run,
        env_factory=_factory,
    )
    assert read_summary(run)["resumed_from"] == str(checkpoint_path(run, 4))
    (note,) = [r.getMessage() for r in caplog.records if "falling back" in r.getMessage()]
    assert str(checkpoint_path(run, 12)) in note and str(checkpoint_path(run, 8)) in note


@pytest.mark.parametrize("garbage", [b"\xff\xfe\x00garbage", b"../../etc/passwd\n"])
def test_a_latest_txt_that_names_no_checkpoint_is_one_line_naming_it(
    three_checkpoints, tmp_path, garbage
):
    run = _copy_run(three_checkpoints, tmp_path / "run")
    pointer = run / CHECKPOINT_DIR / LATEST_NAME
    pointer.write_bytes(garbage)
    out = tmp_path / "elsewhere"
    with pytest.raises(ResumeError) as info:
        train(tiny_config(iterations=14, resume=str(run)), run_dir=out, env_factory=_factory)
    assert str(pointer) in str(info.value) and "\n" not in str(info.value)
    assert not out.exists()


@pytest.mark.parametrize("resume", ["auto", None])
def test_a_run_dir_whose_checkpoints_is_a_file_is_one_line(tmp_path, resume):
    run = tmp_path / "run"
    run.mkdir()
    (run / CHECKPOINT_DIR).write_text("not a folder")
    with pytest.raises(RunDirLayoutError, match=f"{run / CHECKPOINT_DIR} is not a directory"):
        train(tiny_config(iterations=4, resume=resume), run_dir=run, env_factory=_factory)
    assert sorted(p.name for p in run.iterdir()) == [CHECKPOINT_DIR]


@pytest.mark.slow
def test_through_the_cli_each_is_one_line_without_a_traceback(three_checkpoints, tmp_path):
    """The command line: a run dir whose checkpoints is a file, a garbage latest.txt."""
    file_dir = tmp_path / "file_dir"
    file_dir.mkdir()
    (file_dir / CHECKPOINT_DIR).write_text("x")
    garbage = _copy_run(three_checkpoints, tmp_path / "garbage")
    (garbage / CHECKPOINT_DIR / LATEST_NAME).write_bytes(b"\xff\xfe")
    for run, named in ((file_dir, f"{file_dir / CHECKPOINT_DIR} is not a directory"),
                       (garbage, str(garbage / CHECKPOINT_DIR / LATEST_NAME))):  # fmt: skip
        args = [*cli_overrides(8, 14), "run.resume=auto", f"hydra.run.dir={run}"]
        proc = subprocess.run(
            [sys.executable, "-m", "flashsac_bench", *args],
            cwd=tmp_path, env=fake_env_environ(), capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and named in lines[0], proc.stderr
        assert "Traceback" not in proc.stderr and os.path.isfile(run / CHECKPOINT_DIR) == (
            run == file_dir
        )


def test_a_resume_never_writes_over_another_runs_checkpoints(three_checkpoints, tmp_path):
    """Continuing run A into run B's dir would mix B's checkpoints with A's and prune them;
    continuing A from an older checkpoint in place would write over its newer ones."""
    a = _copy_run(three_checkpoints, tmp_path / "a")
    b = _copy_run(three_checkpoints, tmp_path / "b")
    before = {p: p.read_bytes() for p in (b / CHECKPOINT_DIR).iterdir()}
    with pytest.raises(RunDirInUseError, match=f"{b} holds another run's checkpoints \\(3"):
        train(tiny_config(iterations=14, resume=str(a)), run_dir=b, env_factory=_factory)
    assert {p: p.read_bytes() for p in (b / CHECKPOINT_DIR).iterdir()} == before
    older = checkpoint_path(a, 4)
    with pytest.raises(RunDirInUseError, match="write over its newer ones .iter_0000008.pt, iter_"):
        train(tiny_config(iterations=14, resume=str(older)), run_dir=a, env_factory=_factory)


def test_latest_txt_is_replaced_atomically(tmp_path, monkeypatch):
    folder = tmp_path / "checkpoints"
    payload = {k: 0 for k in ckpt_mod.REQUIRED_KEYS}
    save_checkpoint(folder / "iter_0000001.pt", payload)
    assert (folder / "latest.txt").read_text() == "iter_0000001.pt\n"
    real_replace = os.replace

    def failing_replace(src, dst):
        if str(dst).endswith("latest.txt"):
            raise OSError(errno.EIO, "I/O error")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        save_checkpoint(folder / "iter_0000002.pt", payload)
    # the pointer is the old one, whole; no temp file is left behind
    assert (folder / "latest.txt").read_text() == "iter_0000001.pt\n"
    assert sorted(p.name for p in folder.iterdir()) == [
        "iter_0000001.pt",
        "iter_0000002.pt",
        "latest.txt",
    ]


# ---------------------------------------------------------------------------- disk full
def test_a_full_disk_is_named_as_such(tmp_path, monkeypatch):
    def open_tmp(folder, name):
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        os.close(fd)
        return open("/dev/full", "wb"), tmp  # every write: ENOSPC

    monkeypatch.setattr(ckpt_mod, "_open_tmp", open_tmp)
    path = tmp_path / "checkpoints" / "iter_0000003.pt"
    with pytest.raises(DiskFullError) as err:
        save_checkpoint(path, {k: 0 for k in ckpt_mod.REQUIRED_KEYS})
    assert err.value.errno == errno.ENOSPC
    message, code = cli_errors.describe(err.value)
    assert code == 1
    assert message.startswith("no space left on device: could not write the checkpoint ")
    assert str(path) in message and "unexpected pos" not in message
    assert list(path.parent.iterdir()) == []  # neither the file nor its temp file


class _FillsUp(io.RawIOBase):
    """A disk with `room` bytes left: writes succeed until it is full, then ENOSPC."""

    def __init__(self, path: str, room: int) -> None:
        self._f = open(path, "wb")  # noqa: SIM115 - closed by close()
        self._room = room

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        if len(b) > self._room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self._room -= len(b)
        return self._f.write(b)

    def fileno(self) -> int:
        return self._f.fileno()

    def close(self) -> None:
        self._f.close()
        super().close()


def test_a_disk_that_fills_up_during_a_checkpoint_is_named_as_such(tmp_path, monkeypatch):
    """A real full disk lets torch.save write part of the file: torch's zip writer then raises
    "unexpected pos ..." with the ENOSPC only as its context (unlike /dev/full above)."""

    def open_tmp(folder, name):
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        os.close(fd)
        return io.BufferedWriter(_FillsUp(tmp, room=20_000)), tmp

    monkeypatch.setattr(ckpt_mod, "_open_tmp", open_tmp)
    run = tmp_path / "run"
    with pytest.raises(DiskFullError) as err:
        train(tiny_config(iterations=6, checkpoint_every=3), run_dir=run, env_factory=_factory)
    message, code = cli_errors.describe(err.value)
    path = checkpoint_path(run, 3)
    assert code == 1
    assert message.startswith(f"no space left on device: could not write the checkpoint {path}")
    assert "unexpected pos" not in message
    assert list((run / "checkpoints").iterdir()) == []  # neither the file nor its temp file
    assert read_summary(run)["status"] == "failed"
    # the same error seen without the runner's mapping: still no traceback, still the reason
    hidden = RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 832 vs 726")
    hidden.__context__ = OSError(errno.ENOSPC, "No space left on device")
    assert cli_errors.describe(hidden) == (
        "no space left on device: [Errno 28] No space left on device",
        1,
    )


def test_a_raw_enospc_is_described_too():
    err = OSError(errno.ENOSPC, "No space left on device", "/data/run/summary.json")
    assert cli_errors.describe(err) == ("no space left on device: /data/run/summary.json", 1)
    assert cli_errors.describe(RuntimeError("a bug")) is None  # bugs keep their traceback


# ---------------------------------------------------------------------------- liveness
def _write_summary(run: Path, status: str, **writer) -> None:
    run.mkdir(parents=True, exist_ok=True)
    (run / "summary.json").write_text(json.dumps({"status": status, "writer": writer}))


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_running_run_whose_writer_is_gone_is_stale(tmp_path):
    me = writer_identity()
    now = time.time()
    _write_summary(tmp_path / "alive", "running", **me, heartbeat_unix=now)
    assert run_state(tmp_path / "alive")["status"] == "running"

    dead = {**me, "pid": _dead_pid(), "pid_start": None}
    _write_summary(tmp_path / "dead", "running", **dead, heartbeat_unix=now)
    state = run_state(tmp_path / "dead")
    assert state["status"] == "stale" and "is gone" in state["detail"]

    reused = {**me, "pid_start": (me["pid_start"] or 0) + 1}  # our pid, another process's start
    _write_summary(tmp_path / "reused", "running", **reused, heartbeat_unix=now)
    assert run_state(tmp_path / "reused")["status"] == "stale"

    _write_summary(tmp_path / "done", "complete", **dead, heartbeat_unix=now)
    assert run_state(tmp_path / "done")["status"] == "complete"


def test_a_remote_writer_is_judged_by_its_heartbeat(tmp_path):
    remote = {"host": "some-other-node", "pid": 4242, "pid_start": 1, "pid_namespace": "x"}
    old = time.time() - STALE_AFTER_S - 60
    run = tmp_path / "remote"
    _write_summary(run, "running", **remote, heartbeat_unix=old)
    assert run_state(run)["status"] == "stale"
    # a fresh heartbeat.json of the same writer keeps it alive
    (run / HEARTBEAT_NAME).write_text(json.dumps({**remote, "unix": time.time()}))
    assert run_state(run)["status"] == "running"
    # ... but not one written by another process
    (run / HEARTBEAT_NAME).write_text(json.dumps({**remote, "pid": 1, "unix": time.time()}))
    assert run_state(run)["status"] == "stale"


def test_the_heartbeat_thread_beats_and_stops(tmp_path):
    hb = Heartbeat(tmp_path, lambda: 7, every_s=0.05).start()
    try:
        first = json.loads((tmp_path / HEARTBEAT_NAME).read_text())
        assert first["iteration"] == 7 and first["pid"] == os.getpid()
        deadline = time.monotonic() + 30
        while json.loads((tmp_path / HEARTBEAT_NAME).read_text())["unix"] == first["unix"]:
            assert time.monotonic() < deadline, "no second heartbeat"
            time.sleep(0.02)
    finally:
        hb.stop()
    assert hb._thread is None
    last = json.loads((tmp_path / HEARTBEAT_NAME).read_text())
    assert last["ended"] and not first["ended"]


def test_a_run_records_its_writer_and_heartbeat(three_checkpoints):
    s = read_summary(three_checkpoints)
    w = s["writer"]
    assert w["pid"] == os.getpid() and w["host"] == writer_identity()["host"]
    assert w["heartbeat_file"] == HEARTBEAT_NAME and isinstance(w["heartbeat_unix"], float)
    assert run_state(three_checkpoints)["status"] == "complete"
    # the heartbeat ends with the run: its last iteration, not the one of its last beat
    beat = json.loads((three_checkpoints / HEARTBEAT_NAME).read_text())
    assert beat["ended"] and beat["iteration"] == s["iterations_done"] == 12


def test_an_unwritable_run_dir_is_one_line(tmp_path):
    from flashsac_bench.runner.writes import NotWritableError

    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(NotWritableError) as err:
        train(tiny_config(), run_dir=blocker / "run", env_factory=_factory)
    message, code = cli_errors.describe(err.value)
    assert code == 1 and message == f"cannot write the run dir {blocker / 'run'}: Not a directory"
