"""Without a cluster: why a local SLURM cannot start is one line, and submitit's job states come
from squeue where sacct has no accounting (fake sacct / squeue programs on PATH)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from flashsac_bench.cli import slurm_states
from tests.slurm.conftest import local_cluster_module


def test_a_cluster_that_cannot_start_says_why_in_one_line(monkeypatch) -> None:
    lc = local_cluster_module()
    monkeypatch.setattr(lc, "_tool", lambda name: None if name == "munged" else f"/bin/{name}")
    reason = lc.unavailable_reason()
    assert reason == "munged not installed (apt-get install slurm-wlm munge)"
    cluster = lc.LocalCluster()
    with pytest.raises(lc.ClusterUnavailableError, match="munged not installed"):
        cluster.start()
    assert not cluster._daemons and not cluster.root.exists()  # nothing started, nothing left

    monkeypatch.setattr(lc, "_tool", lambda name: f"/bin/{name}")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "must run as root" in lc.unavailable_reason()


def test_squeue_lines_read_as_sacct_states_and_a_job_gone_from_the_queue_has_ended() -> None:
    from submitit.slurm.slurm import SlurmInfoWatcher

    table = slurm_states.queue_states("7_0|RUNNING|vm\n7_1|PENDING|\n", {"7_0", "7_1", "7_2"})
    info = SlurmInfoWatcher().read_info(table)
    assert {k: v["State"] for k, v in info.items()} == {
        "7_0": "RUNNING",
        "7_1": "PENDING",
        "7_2": slurm_states.LEFT_QUEUE,
    }


def _program(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_without_accounting_the_states_come_from_squeue_and_it_is_said_once(
    tmp_path: Path, monkeypatch, caplog
) -> None:
    calls = tmp_path / "calls"
    _program(
        tmp_path,
        "sacct",
        f'echo sacct >> {calls}; echo "Slurm accounting storage is disabled" >&2; exit 1',
    )
    _program(tmp_path, "squeue", f'echo squeue >> {calls}; echo "9_0|RUNNING|vm"')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    watcher = slurm_states._queue_states_type()(delay_s=600)
    for job in ("9_0", "9_1"):
        watcher.register_job(job)
    with caplog.at_level("INFO", logger=slurm_states.__name__):
        watcher.update()
        watcher.update()
    assert watcher.no_accounting
    assert calls.read_text().split() == ["sacct", "squeue", "squeue"]  # sacct asked once
    assert watcher.get_state("9_0", mode="cache") == "RUNNING"
    assert watcher.is_done("9_1", mode="cache")  # no longer queued: ended
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "keeps no job accounting" in said[0]
