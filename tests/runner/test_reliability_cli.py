"""Runs and sweeps that say what happened, through the real CLI: the printed resume command
continues bit for bit; a SIGKILLed run is `stale` for every reader; an interrupted sweep keeps
its comparison and resumes with the printed command; a long CPU run is warned about."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from flashsac_bench.analysis.compare import comparison_frame
from flashsac_bench.runner.checkpoint import load_checkpoint, resolve_resume_path
from flashsac_bench.runner.liveness import run_state
from flashsac_bench.runner.resume import (
    RunDirInUseError,
    find_checkpoint,
    plan_resume,
)
from lab.analysis.parity_runs import load_run
from tests.fakes.runs import cli_overrides, fake_env_environ, read_summary, run_cli


def _printed_command(text: str, marker: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if marker in ln)
    cmd = shlex.split(line.split(marker, 1)[1].strip())
    assert cmd[:3] == ["python", "-m", "flashsac_bench"], cmd
    return [sys.executable, *cmd[1:]]


def _run(cmd: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=cwd, env=fake_env_environ(**env), capture_output=True, text=True, timeout=240
    )


@pytest.mark.slow
def test_the_interrupt_message_is_the_exact_command_that_continues(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    args = cli_overrides(8, 20)
    assert run_cli([*args, f"hydra.run.dir={a}"], cwd=tmp_path).returncode == 0
    proc = run_cli(
        [*args, f"hydra.run.dir={b}"],
        env=fake_env_environ(FAKE_ENV_SIGNAL_AT="9:SIGINT"),
        cwd=tmp_path,
    )
    assert proc.returncode == 128 + signal.SIGINT
    out = proc.stdout + proc.stderr
    cmd = _printed_command(out, "continue with: ")
    assert f"run.resume={b}" in cmd and f"hydra.run.dir={b}" in cmd
    assert read_summary(b)["resume_command"] == shlex.join(["python", *cmd[1:]])
    done = _run(cmd, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    s = read_summary(b)
    assert s["complete"] and s["resume_iteration"] == 10 and s["iterations_done"] == 20
    final_a = load_checkpoint(resolve_resume_path(a))["learner"]["tensors"]
    final_b = load_checkpoint(resolve_resume_path(b))["learner"]["tensors"]
    assert all(torch.equal(final_a[k], final_b[k]) for k in final_a)


def _wait_for(predicate, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.mark.slow  # CLI runs that take 6-10 s on 2 cores
def test_a_sigkilled_run_is_stale_for_every_reader(tmp_path):
    run = tmp_path / "run"
    args = [*cli_overrides(8, 100_000), "run.checkpoint_every=5", f"hydra.run.dir={run}"]
    cmd = [sys.executable, "-m", "flashsac_bench", *args]
    env = fake_env_environ(FAKE_ENV_STEP_SLEEP="0.02")
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait_for(
            lambda: (
                (run / "checkpoints" / "iter_0000010.pt").is_file()
                and read_summary(run)["status"] == "running"
            ),
            "a running summary and two checkpoints",
        )
        assert run_state(run)["status"] == "running"
        # its writer holds the run dir's lock (runner.run_dir.lock.RunDirLock)
        with pytest.raises(RunDirInUseError, match="being written by another live process"):
            plan_resume(_resume_config(run, 1_000_000), run)
    finally:
        proc.kill()
        proc.wait()
    summary = read_summary(run)
    assert summary["status"] == "running"  # what the file says, forever
    state = run_state(run)
    assert state["status"] == "stale" and "is gone" in state["detail"]
    newest = find_checkpoint(run).path
    assert state["last_checkpoint"] == str(newest)

    # compare.py
    row = comparison_frame([run]).iloc[0]
    assert row["status"] == "stale" and row["last_checkpoint"] == str(newest)
    assert not row["complete"]
    # the learning-parity analysis
    loaded = load_run(run)
    assert loaded.status == "stale" and loaded.last_checkpoint == str(newest)
    # resume: continues from the last checkpoint, saying the run was stale
    at = int(load_checkpoint(newest, mmap=True)["iteration"])
    done = run_cli(
        [*cli_overrides(8, at + 3), "run.checkpoint_every=5", f"run.resume={run}",
         f"hydra.run.dir={tmp_path / 'continued'}"],
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "is a stale run" in done.stdout and str(newest) in done.stdout
    assert read_summary(tmp_path / "continued")["iterations_done"] == at + 3


def _resume_config(run: Path, iterations: int):
    from tests.fakes.runs import tiny_config

    return tiny_config(resume=str(run), iterations=iterations)


@pytest.mark.slow
def test_an_interrupted_sweep_keeps_its_comparison_and_resumes(tmp_path):
    sweep = tmp_path / "sweep"
    args = ["-m", *cli_overrides(8, 30), "update=u2,u8", f"hydra.sweep.dir={sweep}"]
    proc = run_cli(args, env=fake_env_environ(FAKE_ENV_SIGNAL_AT="20:SIGINT"), cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGINT, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert f"comparison of the runs so far: {sweep / 'comparison.md'}" in proc.stderr
    df = pd.read_csv(sweep / "comparison.csv")
    assert list(df["run"]) == ["0_u2_eager"] and list(df["status"]) == ["interrupted"]

    cmd = _printed_command(proc.stderr, "resume it with: ")
    assert cmd[3] == "-m" and cmd[-2:] == [f"hydra.sweep.dir={sweep}", "run.resume=auto"]
    done = _run(cmd, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    df = pd.read_csv(sweep / "comparison.csv").set_index("run")
    assert list(df.index) == ["0_u2_eager", "1_u8_eager"] and df["complete"].all()
    first = read_summary(sweep / "0_u2_eager")
    assert first["resume_iteration"] == 21 and first["iterations_done"] == 30
    assert read_summary(sweep / "1_u8_eager")["resumed_from"] is None  # started fresh

    again = _run(cmd, tmp_path)  # everything complete: nothing reruns
    assert again.returncode == 0
    assert len(re.findall(r"is complete \(30 of 30 iterations\), nothing to do", again.stdout)) == 2
    assert read_summary(sweep / "0_u2_eager")["rows_all"] == first["rows_all"]


@pytest.mark.slow
def test_a_bare_cpu_run_is_warned_about_up_front(tmp_path):
    """The defaults (1024 envs, batch 2048) on the CPU; the run itself is stopped by SIGTERM at
    its first env step (a tiny replay keeps the learner's memory small)."""
    if torch.cuda.is_available():
        pytest.skip("the warning is for CPU-only machines")
    run = tmp_path / "run"
    args = ["replay.replay_buffer_n=2", "replay.learning_starts=2", f"hydra.run.dir={run}"]
    env = fake_env_environ(FAKE_ENV_SIGNAL_AT="0:SIGTERM", OMP_NUM_THREADS="1")
    proc = run_cli(args, env=env, cwd=tmp_path, timeout=300)
    first = proc.stderr.splitlines()[0]
    assert first.startswith("flashsac_bench: warning: this run would take about ")
    assert "1024 envs, batch 2048, u2, 1000 iterations" in first
    assert "+experiment=smoke" in first
    assert proc.returncode == 128 + signal.SIGTERM
    smoke = run_cli(
        ["+experiment=smoke", "run.iterations=1", f"hydra.run.dir={tmp_path / 'smoke'}"],
        cwd=tmp_path,
    )
    assert smoke.returncode == 0 and "warning: this run would take" not in smoke.stderr
