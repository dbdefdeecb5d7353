"""Validate a command line before Hydra starts anything (no run dir, env or learner yet).

For `python -m flashsac_bench [-m] overrides...` every job the command would run is composed
exactly as Hydra will compose it (a sweep's jobs by Hydra's own BasicSweeper expansion), turned
into the typed Config (unknown keys, types, cross-group rules), and checked against this
machine (CUDA), the env factory (importable, callable with a factory's arguments),
task.model_file, run.resume (the checkpoint exists, is intact, fits the config) and the run dir
(writable). All problems of all jobs are reported in one message and nothing runs; Hydra's
help / --cfg / --info commands are left to Hydra.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flashsac_bench.cli_errors import UsageError, debug_enabled, describe
from flashsac_bench.config import Config, to_config

CONFIG_MODULE = "flashsac_bench.conf"
CONFIG_NAME = "config"


@dataclass
class Job:
    index: int
    overrides: list[str]
    config: Config | None = None
    run_dir: Path | None = None
    sweep_dir: Path | None = None
    error: str | None = None
    exc: BaseException | None = None  # the original error (re-raised under --debug)


@dataclass
class Plan:
    multirun: bool
    jobs: list[Job]
    sweep_dir: Path | None = None


# Commands that print something and exit: Hydra's own business (--cfg / --info print the
# composed config, so only its composition is checked, see compose_errors).
_HYDRA_ONLY_FLAGS = {"--help", "-h", "--hydra-help", "--version", "--shell-completion", "-sc"}
_HYDRA_ONLY_FLAGS |= {"--experimental-rerun", "--info", "-i", "--cfg", "-c"}
_PRINT_FLAGS = {"--info", "-i", "--cfg", "-c"}


def parse(argv: list[str]) -> Any | None:
    """Hydra's own argument parser; None when Hydra should handle the command itself."""
    from hydra._internal.utils import get_args_parser

    if any(a.split("=", 1)[0] in _HYDRA_ONLY_FLAGS for a in argv):
        return None
    parser = get_args_parser()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args = parser.parse_args(argv)
    except SystemExit:
        return None  # a usage error: Hydra reports it (once) itself
    if any(
        getattr(args, name, None)
        for name in (
            "help",
            "hydra_help",
            "cfg",
            "info",
            "shell_completion",
            "experimental_rerun",
            "config_path",
            "config_name",
            "config_dir",
        )
    ):
        return None
    return args


def compose_errors(argv: list[str], config_name: str = CONFIG_NAME) -> None:
    """For --cfg / --info: a composition error as one line (UsageError), like a run's."""
    if not any(a.split("=", 1)[0] in _PRINT_FLAGS for a in argv):
        return
    if any(a.split("=", 1)[0] in _HYDRA_ONLY_FLAGS - _PRINT_FLAGS for a in argv):
        return
    if any(a in ("-m", "--multirun") for a in argv):
        return
    from hydra import compose, initialize_config_module

    flags_with_values = {"--cfg", "-c", "--info", "-i", "--package", "-p"}
    overrides, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in flags_with_values:
            skip = a in ("--cfg", "-c", "--package", "-p")  # --info's value is optional
        elif a.startswith("-"):
            return  # a flag we do not model: leave it to Hydra
        elif "=" in a or a.startswith(("+", "~")):
            overrides.append(a)
    try:
        with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
            compose(config_name=config_name, overrides=overrides)
    except Exception as err:  # noqa: BLE001
        found = describe(err)
        if found is None or debug_enabled():
            raise
        raise UsageError(found[0], found[1]) from None


def job_overrides(overrides: list[str], multirun: bool) -> list[list[str]]:
    if not multirun:
        return [list(overrides)]
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    batches = BasicSweeper.split_arguments(parsed, None)
    return [job for batch in batches for job in batch]


def _message(err: BaseException) -> str:
    found = describe(err)
    if found is None:
        raise err
    return found[0]


def _probe_writable(target: Path) -> str | None:
    """Can `target` (a run or sweep dir, maybe not created yet) be written? Creates nothing
    but a temp file in its nearest existing folder, removed at once."""
    existing = target
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        return f"cannot create the run dir {target}: {existing} is not a directory"
    try:
        fd, tmp = tempfile.mkstemp(prefix=".flashsac_bench_probe.", dir=existing)
    except OSError as err:
        return f"cannot create the run dir {target}: {existing} is not writable ({err.strerror})"
    os.close(fd)
    os.unlink(tmp)
    return None


def _output_dirs(cfg: Any, multirun: bool, index: int) -> tuple[Path, Path | None]:
    """(run dir, sweep dir) as Hydra will name them (a sweep job's subdir with its number)."""
    from omegaconf import OmegaConf, open_dict

    if not multirun:
        return Path(str(OmegaConf.select(cfg, "hydra.run.dir"))), None
    with open_dict(cfg.hydra):
        cfg.hydra.job.num = index
    base = Path(str(OmegaConf.select(cfg, "hydra.sweep.dir")))
    return base / str(OmegaConf.select(cfg, "hydra.sweep.subdir")), base


def _validate(job: Job, multirun: bool, compose: Any) -> None:
    from omegaconf import open_dict

    from flashsac_bench.checks import check_runtime
    from flashsac_bench.runner.resume import plan_resume

    try:
        cfg = compose(config_name=CONFIG_NAME, overrides=job.overrides, return_hydra_config=True)
        job.run_dir, job.sweep_dir = _output_dirs(cfg, multirun, job.index)
        with open_dict(cfg):
            del cfg["hydra"]
        job.config = config = to_config(cfg)
        check_runtime(config)
        plan_resume(config, job.run_dir, mmap=True)
    except Exception as err:  # noqa: BLE001 - describe() re-raises what is not a user error
        job.error, job.exc = _message(err), err
        return
    assert job.run_dir is not None
    problem = _probe_writable(job.run_dir)
    if problem:
        job.error = problem


def is_multirun(args: Any) -> bool:
    """-m / --multirun, or Hydra's other spelling of it, `hydra.mode=MULTIRUN`."""
    multirun = bool(args.multirun)
    for override in args.overrides:
        key, _, value = override.partition("=")
        if key.lstrip("+~") == "hydra.mode":
            multirun = multirun or value.strip() == "MULTIRUN"
    return multirun


def plan(argv: list[str]) -> Plan | None:
    """Compose and check every job of the command; None when Hydra handles the command."""
    args = parse(argv)
    if args is None:
        compose_errors(argv)
        return None
    from hydra import compose, initialize_config_module

    multirun = is_multirun(args)
    try:
        overrides_per_job = job_overrides(list(args.overrides), multirun)
    except Exception as err:  # noqa: BLE001
        raise UsageError(_message(err)) from None
    jobs = [Job(i, o) for i, o in enumerate(overrides_per_job)]
    with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
        for job in jobs:
            _validate(job, multirun, compose)
    return Plan(multirun, jobs, jobs[0].sweep_dir if jobs else None)


def check(argv: list[str]) -> Plan | None:
    """plan(), raising one UsageError that lists every invalid job."""
    p = plan(argv)
    if p is not None:
        raise_invalid(p)
    return p


def raise_invalid(p: Plan) -> None:
    """One UsageError naming every invalid job of `p` (all valid: nothing)."""
    bad = [j for j in p.jobs if j.error]
    if not bad:
        return
    if debug_enabled() and bad[0].exc is not None:
        raise bad[0].exc
    if not p.multirun:
        raise UsageError(bad[0].error or "", _exit_code(bad[0].error))
    common = set.intersection(*(set(j.overrides) for j in p.jobs))
    lines = [f"{len(bad)} of {len(p.jobs)} sweep jobs are invalid; no job was started:"]
    for j in bad:
        own = " ".join(o for o in j.overrides if o not in common) or "no overrides"
        lines.append(f"  job {j.index} ({own}): {j.error}")
    raise UsageError("\n".join(lines), 2)


def _exit_code(message: str | None) -> int:
    text = message or ""
    return 1 if text.startswith(("no space left", "cannot write", "cannot create")) else 2


def warnings(p: Plan) -> list[str]:
    """Up-front warnings for jobs that will run (long CPU runs)."""
    from flashsac_bench.runtime_estimate import cpu_warning

    out = []
    for job in p.jobs:
        if job.config is None:
            continue
        text = cpu_warning(job.config)
        if text:
            prefix = f"job {job.index}: " if p.multirun else ""
            out.append(prefix + text)
    return out
