"""One training run from Hydra: its run dir, its command and its composed config.

`train` is what `python -m flashsac_bench` (flashsac_bench.__main__) calls for every job, and
what tests and scripts call with an explicit run dir; `flashsac_bench.runner.Runner` does the run.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from flashsac_bench.cli_errors import Aborted
from flashsac_bench.config.root import Config
from flashsac_bench.runner.collector import DEFAULT_TIMEOUT_S
from flashsac_bench.runner.env_factory import EnvFactory
from flashsac_bench.runner.liveness import last_checkpoint
from flashsac_bench.runner.loop import Runner
from flashsac_bench.runner.resume import resume_command


def hydra_context() -> tuple[Path | None, dict[str, Any]]:
    """Hydra's run dir and a reconstruction of the command (job processes launched by
    submitit do not see the user's argv)."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
    except (ImportError, ValueError):
        return None, {"argv": list(sys.argv), "cwd": os.getcwd()}
    overrides = list(hc.overrides.task)
    multirun = hc.mode == RunMode.MULTIRUN
    cmd = ["python", "-m", "flashsac_bench", *(["-m"] if multirun else []), *overrides]
    return Path(hc.runtime.output_dir), {
        "command": shlex.join(cmd),
        "argv": list(sys.argv),
        "overrides": overrides,
        "cwd": os.getcwd(),
        "mode": "multirun" if multirun else "run",
        "job_num": hc.job.get("num"),
    }


def train(
    config: Config,
    raw_cfg: Any = None,
    *,
    run_dir: str | os.PathLike[str] | None = None,
    env_factory: EnvFactory | None = None,
    collector_timeout_s: float = DEFAULT_TIMEOUT_S,
) -> float | None:
    """Run one training run; returns the median iter_ms (what a Hydra sweeper would minimize)."""
    hydra_dir, command = hydra_context()
    out = Path(run_dir) if run_dir is not None else hydra_dir
    if out is None:
        out = Path("outputs") / time.strftime("%Y-%m-%d/%H-%M-%S")
    composed = None
    if raw_cfg is not None:
        from omegaconf import OmegaConf

        composed = OmegaConf.to_container(raw_cfg, resolve=True)
    runner = Runner(
        config,
        out,
        composed=composed,  # type: ignore[arg-type]
        command=command,
        env_factory=env_factory,
        collector_timeout_s=collector_timeout_s,
    )
    try:
        summary = runner.run()
    except KeyboardInterrupt as err:
        if isinstance(err, Aborted):
            raise
        raise Aborted(_abort_message(runner, err)) from None
    return (summary.get("iter_ms") or {}).get("median")


def _abort_message(runner: Runner, err: KeyboardInterrupt) -> str:
    """What a second Ctrl-C kept, and the command that continues from there."""
    signame = str(err) or "SIGINT"
    head = f"aborted by a second {signame} during iteration {runner.state.done_iterations}"
    ckpt = last_checkpoint(runner.run_dir) if runner.run_dir.is_dir() else None
    source = runner.run_dir if ckpt else runner.state.resumed_from
    if source is None:
        return f"{head}; no checkpoint was written (rerun to start over)"
    cmd = resume_command(runner.info.command, runner.run_dir, Path(source))
    kept = f"last checkpoint {ckpt or source}"
    return f"{head} (nothing of it was saved); {kept}; continue with: {cmd}"
