"""Nothing is lost on a signal or a fault, and a run dir has one live writer.

- SIGTERM to the whole process group (timeout, Docker, systemd, SLURM, Kubernetes) ends a run
  with env worker processes as a Ctrl-C does: checkpoint, "interrupted", the resume command;
  the workers do not die first.
- A worker that dies or hangs ends the run with one line naming it, the last checkpoint and the
  command that continues from it (which then runs).
- The temp files a killed checkpoint write leaves are removed at the next start.
- The writer lock (runner.run_dir.lock.RunDirLock) is exclusive and dies with its process; of two
  resumes of one run dir started together exactly one runs.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flashsac_bench.cli.train import train
from flashsac_bench.runner.checkpoint import load_checkpoint, resolve_resume_path
from flashsac_bench.runner.run_dir.lock import RunDirBusyError, RunDirLock
from tests.fakes.fake_env import make_env
from tests.fakes.processes import SHM_DIR, wait_gone
from tests.fakes.runs import (
    cli_overrides,
    fake_env_environ,
    read_summary,
    run_cli,
    tiny_config,
    with_repo_on_path,
)

needs_shm = pytest.mark.skipif(not SHM_DIR.is_dir(), reason="needs POSIX shared memory")


def _sharded_environ(marker: Path, **extra: str) -> dict[str, str]:
    environ = with_repo_on_path(dict(os.environ))
    environ.update(
        FLASHSAC_BENCH_ENV_FACTORY="tests.fakes.sharded_env:make_env",
        FAKE_SHARD_MARKER=str(marker),
        OMP_NUM_THREADS="1",
        **extra,
    )
    return environ


def _printed_command(text: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if "continue with: " in ln)
    cmd = shlex.split(line.split("continue with: ", 1)[1].strip())
    assert cmd[:3] == ["python", "-m", "flashsac_bench"], cmd
    return [sys.executable, *cmd[1:]]


@pytest.mark.slow
@needs_shm
def test_sigterm_to_the_process_group_checkpoints_and_prints_the_resume_command(tmp_path):
    run_dir, marker = tmp_path / "run", tmp_path / "workers.json"
    args = [*cli_overrides(8, 100_000), "backend.workers=2", f"hydra.run.dir={run_dir}"]
    log = tmp_path / "output.txt"
    with open(log, "w") as output:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flashsac_bench", *args, "run.log_every=4"],
            cwd=tmp_path,
            env=_sharded_environ(marker),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, as timeout / docker give it
        )
    try:
        deadline = time.monotonic() + 180
        while "iter 8/" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.2)
        workers = json.loads(marker.read_text())
        os.killpg(proc.pid, signal.SIGTERM)  # every process of the group: workers too
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = log.read_text()
    assert proc.returncode == 128 + signal.SIGTERM, out[-3000:]
    assert "Traceback" not in out and "died" not in out, out[-3000:]
    s = read_summary(run_dir)
    assert s["status"] == "interrupted" and "SIGTERM" in s["incomplete_reason"]
    assert load_checkpoint(resolve_resume_path(run_dir))["iteration"] == s["iterations_done"]
    cmd = _printed_command(out)
    assert f"run.resume={run_dir}" in cmd and f"hydra.run.dir={run_dir}" in cmd
    wait_gone(workers["pids"], workers["shm"], timeout=10.0)


@pytest.mark.slow
@needs_shm
@pytest.mark.parametrize(
    ("fault", "what"),
    [
        ({"FAKE_SHARD_DIE_AT": "13:1"}, "died during 'step' (killed by SIGKILL)"),
        ({"FAKE_SHARD_HANG_AT": "13:1"}, "sent no reply to 'step' within 2 s (hung?)"),
    ],
    ids=["dies", "hangs"],
)
def test_a_lost_worker_is_one_line_with_the_command_that_continues(fault, what, tmp_path):
    run_dir, marker = tmp_path / "run", tmp_path / "workers.json"
    args = [
        *cli_overrides(8, 16),
        "backend.workers=2",
        "backend.worker_timeout_s=2",
        "run.checkpoint_every=5",
        f"hydra.run.dir={run_dir}",
    ]
    proc = run_cli(args, env=_sharded_environ(marker, **fault), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("flashsac_bench: ")]
    assert len(lines) == 1, proc.stderr[-3000:]
    line = lines[0]
    assert line.startswith("flashsac_bench: env worker lost: ") and what in line, line
    assert "env worker 1 (envs 4-7, pid " in line
    assert f"last checkpoint {run_dir / 'checkpoints' / 'iter_0000010.pt'}" in line, line
    assert read_summary(run_dir)["status"] == "failed"
    wait_gone(json.loads(marker.read_text())["pids"], json.loads(marker.read_text())["shm"])
    # the printed command continues the run from that checkpoint, to its end
    done = subprocess.run(
        _printed_command(line), cwd=tmp_path, env=_sharded_environ(marker),
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    s = read_summary(run_dir)
    assert s["complete"] and s["resume_iteration"] == 10 and s["iterations_done"] == 16


def test_temp_files_of_a_killed_write_are_removed_at_the_next_start(tmp_path, caplog):
    run_dir = tmp_path / "run"
    train(tiny_config(iterations=8), run_dir=run_dir, env_factory=make_env)
    ckpts = run_dir / "checkpoints"
    stale = [ckpts / ".iter_0000008.pt.k3x9a_2b", run_dir / ".summary.json.a1b2c3d4"]
    for path in stale:
        path.write_bytes(b"half a file")
    other = ckpts / ".notes.txt.a1b2c3d4"  # not a file of ours: left alone
    other.write_text("mine")
    train(tiny_config(iterations=12, resume=str(run_dir)), run_dir=run_dir, env_factory=make_env)
    assert not any(p.exists() for p in stale) and other.exists()
    removed = [r.getMessage() for r in caplog.records if "left half-written" in r.getMessage()]
    assert len(removed) == 2
    assert read_summary(run_dir)["complete"]


_HOLDER = """
import sys, time
from pathlib import Path
from flashsac_bench.runner.run_dir.lock import RunDirLock
RunDirLock(Path(sys.argv[1])).acquire()
print("locked", flush=True)
time.sleep(600)
"""


def test_the_writer_lock_is_exclusive_and_dies_with_its_process(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path)],
        env=with_repo_on_path(dict(os.environ)),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunDirBusyError, match=f"pid {holder.pid} on "):
            RunDirLock(tmp_path).acquire()
        holder.kill()  # SIGKILL: no cleanup of its own; the kernel drops the lock
        holder.wait()
        lock = RunDirLock(tmp_path).acquire()
        with pytest.raises(RunDirBusyError):
            RunDirLock(tmp_path).acquire()  # one holder, also within one process
        lock.release()
        RunDirLock(tmp_path).acquire().release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


@pytest.mark.slow  # three CLI processes, two of them side by side
def test_two_resumes_started_together_one_runs_the_other_is_refused(tmp_path):
    run_dir = tmp_path / "run"
    first = run_cli([*cli_overrides(8, 6), f"hydra.run.dir={run_dir}"], cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    args = [*cli_overrides(8, 40), f"run.resume={run_dir}", f"hydra.run.dir={run_dir}"]
    env = fake_env_environ(FAKE_ENV_STEP_SLEEP="0.05")  # the winner runs for a few seconds
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "flashsac_bench", *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(2)
    ]
    try:
        results = [(p.wait(timeout=240), p.communicate()[1]) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert "run dir in use" in refused and "being written by another live process" in refused
    assert "Traceback" not in refused
    s = read_summary(run_dir)
    assert s["complete"] and s["resume_iteration"] == 6 and s["iterations_done"] == 40
    # one TensorBoard file per writer: the first run's and the one resume's
    assert len(list((run_dir / "tb").glob("events.out.tfevents.*"))) == 2
