"""Job states for hydra-submitit-launcher's SLURM sweeps, also where the cluster keeps no
accounting.

submitit asks `sacct` for the states of a sweep's jobs while it waits for them. On a cluster
without accounting storage (no slurmdbd: small and test clusters) every call fails: sacct
prints "Slurm accounting storage is disabled" and submitit warns "Bypassing sacct error" on
every poll, and a job that ends without a result file (a run stopped by a signal exits with
128 + its number) stays UNKNOWN, so the launching command waits for it forever.

`QueueStates` keeps sacct where it answers; at the first "accounting storage is disabled" it
says so once and reads the states from `squeue` instead (the controller keeps a finished job
for MinJobAge seconds; a job no longer listed has ended). `SlurmStatesCallback` (in
conf/config.yaml's hydra.callbacks) installs it in the launching process of every multirun whose
launcher is submitit's SLURM launcher, before any job is submitted.
"""

from __future__ import annotations

import functools
import getpass
import logging
import subprocess
import time
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

log = logging.getLogger(__name__)

NO_ACCOUNTING = "accounting storage is disabled"
# The state a job no longer listed by squeue gets: it ran and left the queue.
LEFT_QUEUE = "ENDED"


def queue_states(output: str, wanted: set[str]) -> str:
    """squeue's `%i|%T|%N` lines as sacct's `--parsable2` table (what submitit reads) for the
    jobs in `wanted` (ids such as "12_0"); a wanted job squeue no longer lists has ended."""
    rows = {}
    for line in output.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3 and parts[0]:
            rows[parts[0]] = f"{parts[0]}|{parts[1]}|{parts[2]}"
    for job in sorted(wanted - set(rows)):
        rows[job] = f"{job}|{LEFT_QUEUE}|"
    return "\n".join(["JobID|State|NodeList", *rows.values()]) + "\n"


@functools.cache
def _queue_states_type() -> type:
    from submitit.slurm.slurm import SlurmInfoWatcher

    class QueueStates(SlurmInfoWatcher):  # type: ignore[misc, valid-type]
        """submitit's SLURM state watcher: sacct, or squeue where sacct has no accounting."""

        def __init__(self, delay_s: int = 600) -> None:
            super().__init__(delay_s=delay_s)
            self.no_accounting = False

        def update(self) -> None:
            wanted = self._registered - self._finished
            if not wanted:
                return
            if not self.no_accounting:
                command = self._make_command()
                assert command is not None
                done = subprocess.run(command, capture_output=True, text=True, check=False)
                if done.returncode == 0:
                    self._record(done.stdout)
                    return
                if NO_ACCOUNTING not in done.stderr:
                    super().update()  # submitit's own handling (its warning) of other errors
                    return
                self.no_accounting = True
                log.info(
                    "this cluster keeps no job accounting (sacct: %s): job states come from "
                    "squeue; a job it no longer lists has ended",
                    done.stderr.strip(),
                )
            self._num_calls += 1
            # Every job of this user, array elements one per line, finished ones included while
            # the controller keeps them: one call however many jobs are watched.
            command = ["squeue", "-h", "-r", "-t", "all", "-u", getpass.getuser(), "-o", "%i|%T|%N"]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                log.warning("squeue failed (%s); job states may lag", done.stderr.strip())
                self._last_status_check = time.time()
                return
            self._record(queue_states(done.stdout, wanted))

        def _record(self, table: str) -> None:
            self._output = table.encode()
            self._info_dict.update(self.read_info(table))
            self._last_status_check = time.time()
            for job_id in self._registered - self._finished:
                if self.is_done(job_id, mode="cache"):
                    self._finished.add(job_id)

    return QueueStates


def install() -> None:
    """submitit's SLURM jobs watched by QueueStates (in this process; idempotent)."""
    from submitit.slurm.slurm import SlurmJob

    cls = _queue_states_type()
    if not isinstance(SlurmJob.watcher, cls):
        SlurmJob.watcher = cls(delay_s=600)


def register_launcher() -> None:
    """Make the cluster presets' launcher known to Hydra. Hydra finds plugins by scanning the
    hydra_plugins namespace package on the import path, which an editable install of this
    package does not expose (its modules import through a finder); Plugins.register is Hydra's
    way to add one by hand (a plugin it found already is not added twice)."""
    from hydra.core.plugins import Plugins

    from hydra_plugins.flashsac_bench_slurm.slurm_launcher import SlurmLauncher

    Plugins.instance().register(SlurmLauncher)


class SlurmStatesCallback(Callback):
    """Before a multirun's launcher is made: the cluster presets' launcher registered, and
    QueueStates installed when the launcher is a submitit SLURM launcher."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        register_launcher()
        target = str(config.hydra.launcher.get("_target_", ""))
        if target.endswith("SlurmLauncher"):
            install()
