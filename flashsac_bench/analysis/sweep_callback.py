"""Hydra callback: the sweep root gets comparison.csv/.md/.png after every multirun.

It is rebuilt after each job too (in the job's process: the basic launcher's, or submitit's),
so a sweep that stops early, or whose job failed, still leaves a comparison of the runs so far;
writes are atomic, so parallel submitit jobs cannot tear the files. on_multirun_end, in the
launching process after all jobs, writes the final one. An interrupted sweep never reaches
on_multirun_end: the CLI then calls `rebuild` itself with the dir recorded here at its start.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

log = logging.getLogger(__name__)

# The sweep dir of the multirun this process launched (set by on_multirun_start).
current_sweep_dir: Path | None = None


def rebuild(sweep_dir: Path) -> dict[str, Path] | None:
    from flashsac_bench.analysis.compare import write_comparison

    try:
        files = write_comparison([sweep_dir], sweep_dir)
    except Exception:  # noqa: BLE001 - a report must never fail the sweep
        log.exception("could not write the sweep comparison in %s", sweep_dir)
        return None
    if files:
        log.info("sweep comparison: %s", ", ".join(str(p) for p in files.values()))
    return files


class ComparisonCallback(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        global current_sweep_dir
        current_sweep_dir = Path(str(config.hydra.sweep.dir))

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        from hydra.types import RunMode

        if config.hydra.mode != RunMode.MULTIRUN:
            return
        # output_dir = sweep.dir / subdir; derive the root from it rather than re-resolving
        # sweep.dir's ${now:...} inside a job process.
        out = Path(config.hydra.runtime.output_dir)
        depth = len(Path(str(config.hydra.sweep.subdir)).parts)
        rebuild(out.parents[depth - 1] if depth else out)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        rebuild(Path(str(config.hydra.sweep.dir)))
