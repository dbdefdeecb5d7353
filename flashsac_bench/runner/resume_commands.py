"""The exact commands that continue a run, start it again, or resume a sweep (printed on an
interrupt, a lost env worker, a stop before the loop; summary.json's `resume_command`:
`continue_command`)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

# run.resume=auto: continue this run dir from its newest checkpoint, skip it when complete,
# else start fresh (runner.resume.plan_resume).
AUTO = "auto"
_PLAIN = re.compile(r"[A-Za-z0-9_./:@+-]+")


def hydra_value(text: str) -> str:
    """A value as a Hydra override can hold it (quoted when it has , = spaces ...)."""
    if _PLAIN.fullmatch(text):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _without(overrides: list[str], *keys: str) -> list[str]:
    out = []
    for o in overrides:
        key = o.split("=", 1)[0].lstrip("+~")
        if key not in keys:
            out.append(o)
    return out


def resume_command(command: dict[str, Any], run_dir: Path, source: Path | None = None) -> str:
    """The exact command that continues this run (from `source`, default its own latest
    checkpoint) in its own run dir."""
    overrides = command.get("overrides")
    src = str(source or run_dir)
    if overrides is None:  # called through the API, not the CLI
        return f"train(config with run.resume={src!r}, run_dir={str(run_dir)!r})"
    kept = _without(list(overrides), "run.resume", "hydra.run.dir")
    args = [*kept, f"run.resume={hydra_value(src)}", f"hydra.run.dir={hydra_value(str(run_dir))}"]
    return shlex.join(["python", "-m", "flashsac_bench", *args])


def restart_command(command: dict[str, Any], run_dir: Path) -> str:
    """The exact command that starts a run again in its own run dir, whatever an earlier attempt
    left there (run.resume=auto: continue from a checkpoint if there is one, else start over,
    the earlier attempt's files set aside)."""
    overrides = command.get("overrides")
    if overrides is None:  # called through the API, not the CLI
        return f"train(config with run.resume={AUTO!r}, run_dir={str(run_dir)!r})"
    kept = _without(list(overrides), "run.resume", "hydra.run.dir")
    args = [*kept, f"run.resume={AUTO}", f"hydra.run.dir={hydra_value(str(run_dir))}"]
    return shlex.join(["python", "-m", "flashsac_bench", *args])


def continue_command(
    command: dict[str, Any], run_dir: Path, resumed_from: str | None, checkpointed: bool
) -> str:
    """The command that goes on with a run from where it stands, as the line printed when it
    stops says: from its own newest checkpoint once it wrote one (`checkpointed`); before that,
    from the checkpoint of another run it resumed, if any; else run.resume=auto, which starts it
    again (run.resume=<its run dir> would find no checkpoint there)."""
    if checkpointed:
        return resume_command(command, run_dir)
    if resumed_from is not None:
        source = Path(resumed_from)
        if source.resolve().parent.parent != Path(run_dir).resolve():
            return resume_command(command, run_dir, source)
    return restart_command(command, run_dir)


def sweep_resume_command(argv: list[str], sweep_dir: Path) -> str:
    """The exact command that resumes a sweep: the same sweep into the same dir, every job with
    run.resume=auto (continue from its checkpoint, skip when complete, else start)."""
    args = [a for a in argv if a not in ("-m", "--multirun", "--debug")]
    kept = _without(args, "run.resume", "hydra.sweep.dir")
    target = hydra_value(str(sweep_dir))
    cmd = ["python", "-m", "flashsac_bench", "-m", *kept]
    return shlex.join([*cmd, f"hydra.sweep.dir={target}", f"run.resume={AUTO}"])
