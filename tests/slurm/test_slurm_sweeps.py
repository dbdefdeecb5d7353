"""Sweeps through a real SLURM (the module's throwaway cluster, tests/slurm/conftest.py).

A `-m` sweep of two smoke jobs through hydra-submitit-launcher's plain `submitit_slurm` runs both
jobs on the cluster and writes the comparison; a job of the same sweep through the `slurm_cpu`
preset, cancelled mid-run as a preemption or a time limit does (scancel --signal=TERM), leaves
its checkpoint and says so, and the same sweep command with run.resume=auto finishes it with
the uninterrupted run's final tensors; a bad override is refused before anything is submitted.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

pytestmark = [pytest.mark.slow, pytest.mark.slurm]

ITERATIONS = 200
CANCEL_AFTER = 20  # iterations of job 0 seen in its log before scancel (learning starts at 4)
SWEEP = ["+experiment=smoke", "update=u2,u8", f"run.iterations={ITERATIONS}"]
TIMEOUT_S = 420


def launcher(cluster: Any, preset: str) -> list[str]:
    """The launcher overrides of a job of this tiny cluster: its partition, one CPU each (two
    jobs side by side on the 2-core machine), little memory."""
    sized = ["hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=1"]
    return [
        f"hydra/launcher={preset}",
        f"hydra.launcher.partition={cluster.partition}",
        "hydra.launcher.timeout_min=10",
        *sized,
    ]


def job_env(cluster: Any) -> dict[str, str]:
    env = cluster.env()
    env["OMP_NUM_THREADS"] = "1"
    env.pop("FLASHSAC_BENCH_ENV_FACTORY", None)  # the real G1 env
    return env


def run_sweep(cluster: Any, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flashsac_bench", "-m", *args],
        cwd=cwd,
        env=job_env(cluster),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text())


def final_checkpoint(run_dir: Path) -> dict[str, Any]:
    ckpt = sorted((run_dir / "checkpoints").glob("iter_*.pt"))[-1]
    return torch.load(ckpt, map_location="cpu", weights_only=True)


def tensors(tree: Any, prefix: str = "") -> dict[str, torch.Tensor]:
    """Every tensor of a checkpoint payload by its path."""
    out: dict[str, torch.Tensor] = {}
    if isinstance(tree, torch.Tensor):
        out[prefix] = tree
    elif isinstance(tree, dict):
        for key, value in tree.items():
            out.update(tensors(value, f"{prefix}/{key}"))
    elif isinstance(tree, list | tuple):
        for i, value in enumerate(tree):
            out.update(tensors(value, f"{prefix}/{i}"))
    return out


def submitted_jobs(cluster: Any) -> int:
    """Jobs this cluster's controller has accepted since it started (sdiag)."""
    out = cluster.client("sdiag")
    assert out.returncode == 0, out.stderr
    found = re.search(r"Jobs submitted:\s*(\d+)", out.stdout)
    assert found, out.stdout
    return int(found.group(1))


def job_log(sweep: Path, index: int) -> Path | None:
    found = sorted(sweep.glob(f".submitit/*_{index}/*_{index}_0_log.out"))
    return found[0] if found else None


def wait_for_iteration(sweep: Path, index: int, at_least: int, proc: subprocess.Popen[str]) -> str:
    """The SLURM id of sweep job `index` once its log shows iteration `at_least` (plain progress
    lines: `iter K/N`)."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the sweep ended before its job was cancelled"
        log = job_log(sweep, index)
        if log is not None:
            done = [int(k) for k in re.findall(r"iter (\d+)/", log.read_text(errors="replace"))]
            if done and max(done) >= at_least:
                return log.parent.name  # <array id>_<index>
        time.sleep(0.2)
    raise AssertionError(f"job {index} never reached iteration {at_least}")


@pytest.fixture(scope="module")
def uninterrupted(slurm: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """The sweep through hydra-submitit-launcher's own submitit_slurm, run to its end."""
    cwd = tmp_path_factory.mktemp("uninterrupted")
    sweep = cwd / "sweep"
    args = [*launcher(slurm, "submitit_slurm"), *SWEEP, f"hydra.sweep.dir={sweep}"]
    return run_sweep(slurm, args, cwd), sweep


def test_a_sweep_of_two_smoke_jobs_through_submitit_slurm_completes_with_its_comparison(
    slurm: Any, uninterrupted: tuple[Any, Path]
) -> None:
    proc, sweep = uninterrupted
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    runs = {"0_u2_eager", "1_u8_eager"}
    for name in runs:
        s = summary(sweep / name)
        assert s["complete"] and s["iterations_done"] == ITERATIONS, (name, s["status"])
        assert s["command"]["mode"] == "multirun"
    # Each run was a SLURM job of this cluster: submitit's folder per array element, its
    # result, and the job's own SLURM environment in its log.
    for index in (0, 1):
        log = job_log(sweep, index)
        assert log is not None and (log.parent / f"{log.parent.name}_0_result.pkl").is_file()
        assert f"job_id={log.parent.name}" in log.read_text()
    table = (sweep / "comparison.csv").read_text().splitlines()
    assert len(table) == 3 and all(any(r in line for line in table) for r in runs)
    assert (sweep / "comparison.md").is_file()
    # The cluster keeps no accounting: said once, not a "Bypassing sacct error" per poll.
    output = proc.stdout + proc.stderr
    assert "Bypassing sacct error" not in output
    assert output.count("keeps no job accounting") == 1
    assert not slurm.client("squeue", "-h", "-o", "%i").stdout.strip()  # nothing left running


def test_a_job_cancelled_mid_run_checkpoints_and_the_same_sweep_with_resume_auto_finishes_it(
    slurm: Any, uninterrupted: tuple[Any, Path], tmp_path: Path
) -> None:
    proc0, reference = uninterrupted
    assert proc0.returncode == 0, proc0.stderr[-3000:]
    sweep = tmp_path / "sweep"
    args = [*launcher(slurm, "slurm_cpu"), *SWEEP, f"hydra.sweep.dir={sweep}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "flashsac_bench", "-m", *args],
        cwd=tmp_path,
        env=job_env(slurm),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        job = wait_for_iteration(sweep, 0, CANCEL_AFTER, proc)
        cancel = slurm.client("scancel", "--signal=TERM", job)  # this test's own job only
        assert cancel.returncode == 0, cancel.stderr
        out, err = proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, (out[-2000:], err[-3000:])
    # The interrupted run says so, with its checkpoint; the other job ran to its end.
    s = summary(sweep / "0_u2_eager")
    assert s["status"] == "interrupted" and "SIGTERM" in s["incomplete_reason"]
    assert CANCEL_AFTER <= s["iterations_done"] < ITERATIONS
    assert Path(s["last_checkpoint"]).is_file()
    assert summary(sweep / "1_u8_eager")["complete"]
    # The launching command names the job, its state and the command that continues the sweep.
    said = out + err  # Hydra's log lines go to stdout
    assert re.search(r"job 0 \(update=u2\): interrupted: interrupted by SIGTERM after", said), said
    resume = re.search(r"resume it with: (.+)", err)
    assert resume, err[-3000:]
    command = shlex.split(resume.group(1))
    assert command[:4] == ["python", "-m", "flashsac_bench", "-m"]
    assert command[4:] == [*args[:-1], f"hydra.sweep.dir={sweep}", "run.resume=auto"]

    done = run_sweep(slurm, command[4:], tmp_path)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    s = summary(sweep / "0_u2_eager")
    assert s["complete"] and s["iterations_done"] == ITERATIONS
    assert s["resumed_from"] and s["resume_iteration"] < ITERATIONS
    got, want = final_checkpoint(sweep / "0_u2_eager"), final_checkpoint(reference / "0_u2_eager")
    assert got["iteration"] == want["iteration"] == ITERATIONS
    got_t, want_t = tensors(got), tensors(want)
    assert set(got_t) == set(want_t) and len(got_t) > 10
    differ = [k for k in want_t if not torch.equal(got_t[k], want_t[k])]
    assert not differ, f"resumed run differs from the uninterrupted one in {differ}"


def test_a_bad_override_is_refused_before_anything_is_submitted(slurm: Any, tmp_path: Path) -> None:
    before = submitted_jobs(slurm)
    sweep = tmp_path / "sweep"
    args = [
        *launcher(slurm, "slurm_cpu"),
        "+experiment=smoke",
        "update=u2,u8",
        "replay.batch_size=64,0",
        f"hydra.sweep.dir={sweep}",
    ]
    proc = run_sweep(slurm, args, tmp_path)
    assert proc.returncode == 2, (proc.stdout[-2000:], proc.stderr[-3000:])
    first = proc.stderr.splitlines()[0]
    assert "2 of 4 sweep jobs are invalid; no job was started" in first, proc.stderr
    assert "replay.batch_size" in proc.stderr and "Traceback" not in proc.stderr
    assert submitted_jobs(slurm) == before  # the controller never saw a job
    assert not slurm.client("squeue", "-h", "-o", "%i").stdout.strip()
    assert not sweep.exists() and list(tmp_path.iterdir()) == []
