"""Check a command line before Hydra starts anything: every job composed and checked once.

For every command (`python -m flashsac_bench`, evaluate, export, convert) each job the command
would run is composed exactly as Hydra will compose it (a sweep's jobs by Hydra's own
BasicSweeper expansion) and handed to the command's check: one function that types the job's
options and checks them against this machine and the files they name, and returns the checked
options. All problems of all jobs are reported in one message and nothing runs; Hydra's help /
--cfg / --info commands are left to Hydra (a composition error of --cfg is still one line).

The checked plan is kept for the process: a job that Hydra runs in it takes its options from
the plan (`checked_job`), so a config is composed and checked once per process. A job process
started elsewhere (a launcher's worker, a SLURM node) holds no plan: `checked_job` checks the
config Hydra hands it there, with the same function.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flashsac_bench.cli import config_tree, hydra_flags
from flashsac_bench.cli.config_tree import CONFIG_MODULE
from flashsac_bench.cli.environment import check_environment_paths
from flashsac_bench.cli.errors import UsageError, debug_enabled, describe

# A command's check: (one job's composed config without its `hydra` node, the job's run dir)
# -> the checked options; a user error raises (ConfigError, UsageError, ...).
Check = Callable[[Any, Path], Any]


@dataclass
class Job:
    index: int
    overrides: list[str]
    options: Any = None  # what the command's check returned (training: the Config)
    composed: dict[str, Any] | None = None  # the composed config as plain data, no `hydra`
    run_dir: Path | None = None
    sweep_dir: Path | None = None
    error: str | None = None
    exc: BaseException | None = None  # the original error (re-raised under --debug)


@dataclass
class Plan:
    config_name: str
    multirun: bool
    jobs: list[Job]
    sweep_dir: Path | None = None


# The checked plan of this process's command line (check_command), for its jobs.
_checked: Plan | None = None

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


def compose_errors(argv: list[str], config_name: str) -> None:
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


def is_multirun(args: Any) -> bool:
    """-m / --multirun, or Hydra's other spelling of it, `hydra.mode=MULTIRUN`."""
    multirun = bool(args.multirun)
    for override in args.overrides:
        key, _, value = override.partition("=")
        if key.lstrip("+~") == "hydra.mode":
            multirun = multirun or value.strip() == "MULTIRUN"
    return multirun


def _message(err: BaseException) -> str:
    """The one line of a job that failed its check. A failure the checks do not know (a value
    that breaks a computation they make) is still this job's input error: its type and message
    (--debug shows where it came from), never a traceback and never a job that runs anyway."""
    found = describe(err)
    if found is not None:
        return found[0]
    text = " ".join(str(err).split()) or "no message"
    return f"invalid configuration: checking it failed with {type(err).__name__}: {text[:300]}"


def _output_dirs(cfg: Any, multirun: bool, index: int) -> tuple[Path, Path | None]:
    """(run dir, sweep dir) as Hydra will name them (a sweep job's subdir with its number)."""
    from omegaconf import OmegaConf, open_dict
    from omegaconf.errors import InterpolationResolutionError

    def folder(key: str) -> Path:
        # An empty value would put the outputs into the current directory, among its files.
        try:
            value = str(OmegaConf.select(cfg, key, default="") or "").strip()
        except InterpolationResolutionError as err:  # ${oc.env:VAR} of a variable not set
            detail = str(err).strip().splitlines()[0].split("resolving interpolation: ")[-1]
            raise UsageError(f"{key} cannot be resolved: {detail}") from None
        if not value:
            raise UsageError(f"{key} is empty: name the folder the outputs go to")
        return Path(value)

    if not multirun:
        return folder("hydra.run.dir"), None
    with open_dict(cfg.hydra):
        cfg.hydra.job.num = index
    base = folder("hydra.sweep.dir")
    return base / str(OmegaConf.select(cfg, "hydra.sweep.subdir")), base


def _check_into(job: Job, cfg: Any, check: Check) -> Job:
    """The one place a job's options are checked: `check`, and the composed config as data."""
    from omegaconf import OmegaConf

    assert job.run_dir is not None
    job.options = check(cfg, job.run_dir)
    job.composed = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    return job


def _compose_and_check(job: Job, multirun: bool, compose: Any, name: str, check: Check) -> None:
    from omegaconf import open_dict

    try:
        cfg = compose(config_name=name, overrides=job.overrides, return_hydra_config=True)
        job.run_dir, job.sweep_dir = _output_dirs(cfg, multirun, job.index)
        config_tree.refuse_instantiated(cfg)  # before Hydra makes its callbacks and launcher
        with open_dict(cfg):
            del cfg["hydra"]
        _check_into(job, cfg, check)
    except Exception as err:  # noqa: BLE001 - every failure is this job's error (_message)
        job.error, job.exc = _message(err), err


def plan(argv: list[str], config_name: str, check: Check) -> Plan | None:
    """Compose and check every job of the command; None when Hydra handles the command."""
    args = parse(argv)
    if args is None:
        compose_errors(argv, config_name)
        return None
    check_environment_paths()  # a cache folder the command would fail to create, mid-way
    from hydra import compose, initialize_config_module

    multirun = is_multirun(args)
    try:
        overrides_per_job = job_overrides(list(args.overrides), multirun)
    except Exception as err:  # noqa: BLE001
        raise UsageError(_message(err)) from None
    jobs = [Job(i, o) for i, o in enumerate(overrides_per_job)]
    with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
        for job in jobs:
            _compose_and_check(job, multirun, compose, config_name, check)
    return Plan(config_name, multirun, jobs, jobs[0].sweep_dir if jobs else None)


def check_command(argv: list[str], config_name: str, check: Check) -> Plan | None:
    """plan(), raising one UsageError that lists every invalid job; a valid plan is kept for
    the jobs Hydra runs in this process (checked_job)."""
    global _checked
    _checked = None
    hydra_flags.refuse(argv)  # a flag that would read a file as code: before anything else
    config_tree.refuse_options_outside(argv)  # a config file from outside the tree: too
    p = plan(argv, config_name, check)
    if p is not None:
        raise_invalid(p)
        _checked = p
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


def checked_job(cfg: Any, config_name: str, check: Check) -> Job:
    """The job Hydra runs now, checked: the plan's job when this process checked the command
    and planned this very job (same number, same overrides); else `cfg` (Hydra's composition,
    without `hydra`) checked here by `check` -- a job process started elsewhere."""
    from hydra.core.hydra_config import HydraConfig

    hc: Any = HydraConfig.get()  # a DictConfig at runtime (typed as the HydraConf schema)
    planned = _planned_job(hc, config_name)
    if planned is not None:
        return planned
    job = Job(hc.job.get("num") or 0, list(hc.overrides.task))
    job.run_dir = Path(hc.runtime.output_dir)
    return _check_into(job, cfg, check)


def _planned_job(hc: Any, config_name: str) -> Job | None:
    from hydra.types import RunMode

    p = _checked
    if p is None or p.config_name != config_name:
        return None
    multirun = hc.mode == RunMode.MULTIRUN
    index = int(hc.job.get("num") or 0) if multirun else 0
    if multirun != p.multirun or not 0 <= index < len(p.jobs):
        return None
    job = p.jobs[index]
    return job if _task_overrides(job.overrides) == list(hc.overrides.task) else None


def _task_overrides(overrides: list[str]) -> list[str]:
    """The overrides Hydra records as the job's task overrides: all but Hydra's own."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    return [o.input_line for o in parsed if o.input_line is not None and not o.is_hydra_override()]
