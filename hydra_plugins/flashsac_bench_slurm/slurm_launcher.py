"""The SLURM launcher of the cluster presets (conf/hydra/launcher/slurm_*.yaml).

hydra-submitit-launcher's SlurmLauncher submits the same jobs the same way (one job array, each
job running this command's task in its own process on a node); this one also says what a sweep
on a cluster is doing:

- once submitted: the array's id, how to watch it (squeue, scancel), where the jobs' logs and
  run dirs are;
- while the jobs queue and run: one line whenever a job's state changes;
- at the end every job has been waited for (the plugin stops at the first job without a
  result and leaves the others unwatched). A job without a result is one line each: its run's
  status from its summary.json (e.g. interrupted by SIGTERM, checkpoint written) or its log's
  last error line. The command then exits 128 + 15 when a run was interrupted (a time limit,
  preemption or scancel --signal=TERM: the CLI prints the comparison so far and the command
  that resumes the sweep) and 1 otherwise.

Job states come from cli.slurm_states (squeue where the cluster keeps no accounting).
"""

from __future__ import annotations

import json
import logging
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra_plugins.hydra_submitit_launcher.submitit_launcher import (
    SlurmLauncher as SubmititSlurmLauncher,
)

from flashsac_bench.cli import slurm_states

log = logging.getLogger(__name__)

POLL_S = 1.0
# The exit status of a sweep in which a run was interrupted (as the run's own: 128 + SIGTERM).
INTERRUPTED_EXIT = 128 + int(signal.SIGTERM)


class SlurmLauncher(SubmititSlurmLauncher):
    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Any:
        slurm_states.install()
        jobs = self._submit(job_overrides, initial_job_idx)
        names = [own_overrides(o, job_overrides) for o in job_overrides]
        indices = range(initial_job_idx, initial_job_idx + len(jobs))
        assert self.config is not None
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        self._say_where(jobs, sweep_dir)
        wait_for(jobs, [f"job {i} ({n})" for i, n in zip(indices, names, strict=True)])
        returns, problems, interrupted = [], [], False
        for index, name, job in zip(indices, names, jobs, strict=True):
            try:
                returns.append(job.results()[0])
            except Exception as err:  # noqa: BLE001 - submitit's errors for a job without result
                status, line = job_outcome(sweep_dir, index, job, err)
                interrupted |= status == "interrupted"
                problems.append(f"job {index} ({name}): {line}")
        if problems:
            for line in problems:
                log.error(line)
            raise SystemExit(INTERRUPTED_EXIT if interrupted else 1)
        return returns

    def _submit(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[Any]:
        """The plugin's submission (hydra_submitit_launcher's BaseSubmititLauncher.launch), up to
        the jobs it returns."""
        import submitit
        from hydra.core.singleton import Singleton
        from hydra.core.utils import filter_overrides
        from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
        from omegaconf import OmegaConf

        assert self.config is not None
        init_keys = {"submitit_folder", "max_num_timeout"}
        executor = submitit.AutoExecutor(
            cluster=self._EXECUTOR,
            folder=self.params["submitit_folder"],
            slurm_max_num_timeout=self.params.get("max_num_timeout", 0),
        )
        base = set(OmegaConf.structured(BaseQueueConf).keys())
        params = {
            k if k in base else f"{self._EXECUTOR}_{k}": v
            for k, v in self.params.items()
            if k not in init_keys
        }
        executor.update_parameters(**params)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        if "mode" in self.config.hydra.sweep:
            sweep_dir.chmod(int(str(self.config.hydra.sweep.mode), 8))
        job_params = []
        for offset, overrides in enumerate(job_overrides):
            index = initial_job_idx + offset
            log.info(f"\t#{index} : {' '.join(filter_overrides(overrides))}")
            job_id = f"job_id_for_{index}"
            job_params.append(
                (list(overrides), "hydra.sweep.dir", index, job_id, Singleton.get_state())
            )
        return list(executor.map_array(self, *zip(*job_params, strict=True)))

    def _say_where(self, jobs: list[Any], sweep_dir: Path) -> None:
        array = str(jobs[0].job_id).split("_")[0] if jobs else "?"
        partition = self.params.get("partition") or "the default partition"
        first = Path(str(jobs[0].paths.stdout)) if jobs else sweep_dir
        log.info(
            "submitted %d SLURM jobs as array %s on %s; watch: squeue -j %s; cancel: scancel %s; "
            "job logs: %s (one folder per job); runs: %s/<job>_*",
            len(jobs), array, partition, array, array, first.parent.parent, sweep_dir,
        )  # fmt: skip


def own_overrides(overrides: Sequence[str], every_job: Sequence[Sequence[str]]) -> str:
    """What sets this job apart from the sweep's other jobs."""
    common = set.intersection(*(set(o) for o in every_job)) if len(every_job) > 1 else set()
    return " ".join(o for o in overrides if o not in common) or "no overrides"


def wait_for(jobs: list[Any], names: list[str]) -> None:
    """Until every job is done, a line whenever one's state changes."""
    seen: dict[int, str] = {}
    pending = set(range(len(jobs)))
    while pending:
        for k in sorted(pending):
            if jobs[k].done():
                pending.discard(k)
                log.info("%s: ended (%d of %d)", names[k], len(jobs) - len(pending), len(jobs))
                continue
            state = jobs[k].state
            if seen.get(k) != state and state != "UNKNOWN":
                seen[k] = state
                log.info("%s: %s", names[k], state)
        if pending:
            time.sleep(POLL_S)


def job_outcome(sweep_dir: Path, index: int, job: Any, err: BaseException) -> tuple[str, str]:
    """(the job's run status, one line about it) for a job that left no result."""
    summary = run_summary(sweep_dir, index)
    where = f"log {job.paths.stdout}"
    if summary is not None:
        status = str(summary.get("status"))
        reason = summary.get("incomplete_reason") or status
        return status, f"{status}: {reason}; run dir {summary.get('run_dir')}; {where}"
    last = last_error_line(Path(str(job.paths.stderr)))
    detail = last or " ".join(str(err).split())[:200]
    return "no run", f"ended without a run (SLURM state {job.state}): {detail}; {where}"


def run_summary(sweep_dir: Path, index: int) -> dict[str, Any] | None:
    """The summary.json of the sweep's job `index` (its run dir names itself), if written."""
    for path in sorted(sweep_dir.glob("*/summary.json")):
        try:
            summary = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if (summary.get("command") or {}).get("job_num") == index:
            return summary
    return None


def last_error_line(path: Path) -> str | None:
    """The job's last line on stderr that is not SLURM's own step report."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    mine = [ln.strip() for ln in lines if ln.strip() and not ln.startswith(("srun:", "slurmstepd"))]
    return mine[-1] if mine else None
