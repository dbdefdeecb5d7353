"""SIGINT and SIGTERM are honoured within ~2 s in every phase of a run (runner.signals).

During a slow cold start (a fake env whose build blocks) the first signal ends the run at once:
one line that says it stopped before its first checkpoint and how to start it again, exit
status 128 + the signal, a summary that says `interrupted`, no half-written file, and the
printed `run.resume=auto` command, which summary.json stores too, starts the run cleanly. That
holds also when the main thread is held in native code and cannot run its handler, and when
what it runs swallows the handler's exception (the watchdog acts for it). A second signal ends
the command at once, in one line. A long setup phase prints progress lines.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flashsac_bench.cli.train import train
from flashsac_bench.runner import signals as run_signals
from flashsac_bench.runner.faults import StartInterrupted
from tests.fakes.fake_env import make_env
from tests.fakes.runs import cli_overrides, fake_env_environ, read_summary, tiny_config

ANSWER_S = 2.0


def _start_blocked(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[str], Path, list[str]]:
    marker = tmp_path / "blocking"
    env = fake_env_environ(
        FLASHSAC_BENCH_ENV_FACTORY="tests.fakes.blocking_env:make_env",
        FAKE_BLOCK_MARKER=str(marker),
        FAKE_BLOCK_MODE=mode,
    )
    args = [*cli_overrides(8, 6), f"hydra.run.dir={tmp_path / 'run'}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "flashsac_bench", *args],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the env build never started"
        time.sleep(0.05)
    return proc, tmp_path / "run", args


@pytest.mark.parametrize(
    ("mode", "sig"),
    [
        ("python", signal.SIGINT),
        ("python", signal.SIGTERM),
        ("native", signal.SIGINT),
        ("swallow", signal.SIGINT),
    ],
    ids=["sigint", "sigterm", "sigint_native_code", "sigint_swallowed"],
)
def test_a_signal_during_a_slow_cold_start_is_answered_within_2_s(tmp_path, mode, sig):
    proc, run_dir, args = _start_blocked(tmp_path, mode)
    time.sleep(0.3)  # inside the blocking build
    sent = time.monotonic()
    proc.send_signal(sig)
    try:
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    took = time.monotonic() - sent
    assert took < ANSWER_S, f"answered after {took:.2f} s: {stderr[-2000:]}"
    assert proc.returncode == 128 + sig, stderr[-3000:]
    assert "Traceback" not in stderr
    lines = [ln for ln in stderr.splitlines() if ln.startswith("flashsac_bench: ")]
    assert len(lines) == 1, stderr[-3000:]
    line = lines[0]
    assert f"interrupted by {sig.name} during the env build" in line
    assert "before the first checkpoint: nothing was saved" in line
    summary = read_summary(run_dir)
    assert (
        summary["status"] == "interrupted"
        and "before the first checkpoint" in (summary["incomplete_reason"])
    )
    # nothing half-written: no checkpoint, no temp file of an atomic write
    assert not (run_dir / "checkpoints").exists()
    assert not [p for p in run_dir.rglob(".*") if p.is_file() and p.name != ".writer.lock"]
    # the printed command starts the run again: run.resume=auto in the same run dir, which
    # sets the attempt's files aside and starts cleanly
    printed = line.split("start it again with: ", 1)[1]
    cmd = shlex.split(printed)
    assert cmd[:3] == ["python", "-m", "flashsac_bench"] and "run.resume=auto" in cmd
    assert f"hydra.run.dir={run_dir}" in cmd and cmd[3:-2] == args[:-1]
    assert summary["resume_command"] == printed  # the stored command is the one that works
    train(tiny_config(iterations=6, resume="auto"), run_dir=run_dir, env_factory=make_env)
    assert read_summary(run_dir)["status"] == "complete"
    assert (run_dir / "earlier_attempt_1" / "summary.json").is_file()


@pytest.mark.parametrize("gap_s", [0.0, 0.1])
def test_a_second_signal_ends_the_command_at_once_in_one_line(tmp_path, gap_s):
    proc, run_dir, _ = _start_blocked(tmp_path, "python")
    time.sleep(0.3)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    time.sleep(gap_s)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert time.monotonic() - sent < ANSWER_S, stderr[-2000:]
    assert proc.returncode == 128 + signal.SIGINT, stderr[-3000:]
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr[-3000:]
    lines = [ln for ln in stderr.splitlines() if ln.startswith("flashsac_bench: ")]
    assert len(lines) == 1, stderr[-3000:]
    assert read_summary(run_dir)["status"] == "interrupted"


def test_the_first_signal_in_the_setup_raises_at_once_and_the_loop_waits():
    # What the process had before (a shell's background job starts with SIGINT ignored).
    before = signal.getsignal(signal.SIGINT)
    with run_signals.Signals() as sig:
        run_signals.phase("compile and capture")
        with pytest.raises(StartInterrupted, match="during the compile and capture"):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the handler interrupts this at once
        assert sig.requested == "SIGINT"
    with run_signals.Signals() as sig:
        sig.loop_started()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        assert sig.requested == "SIGTERM"  # the loop ends after its iteration
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    assert signal.getsignal(signal.SIGINT) is before  # restored


def test_a_long_setup_phase_prints_progress_lines(monkeypatch, caplog):
    monkeypatch.setattr(run_signals, "PROGRESS_EVERY_S", 0.3)
    with caplog.at_level(logging.INFO, logger="flashsac_bench.runner"):
        with run_signals.Signals():
            run_signals.phase("env build")
            time.sleep(1.0)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("still in")]
    assert len(lines) >= 2 and all("the env build (" in ln for ln in lines), lines


def test_a_first_signal_while_the_final_checkpoint_is_written_changes_nothing():
    with run_signals.Signals() as sig:
        sig.loop_started()
        sig.finishing_started()
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert sig.requested is None and sig.late == "SIGINT"  # the status stays as decided
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
