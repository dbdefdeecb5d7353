"""`python -m flashsac_bench`: training runs and sweeps, checked before Hydra creates anything.

  main      the command line: --debug, the preflight (cli.preflight with `check_job`: every
            job of the command composed, typed and checked before any starts; bad input is one
            line and nothing is created), the up-front CPU-time warning, then Hydra runs the
            jobs; an interrupted sweep still gets its comparison and the command resuming it.
  run_job   one job under Hydra: its checked Config (the preflight's; in a job process started
            elsewhere, checked there by `check_job`), its run dir and command, then the runner;
            a user error is one line.
  train     a run of a Config built elsewhere (tests, scripts), with their own run dir: checked
            as a job is (cli.runtime_checks), then run.

The runner knows no CLI: it raises, and this module turns what a user can fix into one line.
--debug (or FLASHSAC_BENCH_DEBUG=1, or Hydra's HYDRA_FULL_ERROR=1) shows tracebacks instead.
"""

from __future__ import annotations

import functools
import logging
import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from flashsac_bench.cli import errors, preflight
from flashsac_bench.cli.errors import Aborted, UsageError
from flashsac_bench.cli.runtime_checks import check_runtime
from flashsac_bench.cli.writable import probe_writable
from flashsac_bench.config import ConfigError, register_configs, to_config
from flashsac_bench.config.root import Config
from flashsac_bench.runner.env_factory import EnvFactory
from flashsac_bench.runner.faults import EnvLostError, StartInterrupted

if TYPE_CHECKING:  # imported where used: --help and bad input answer without torch
    from flashsac_bench.runner.loop import Runner

CONFIG_NAME = "config"
CONFIG_PATH = f"pkg://{preflight.CONFIG_MODULE}"
# Hydra writes these into a run dir before the task function runs.
_HYDRA_ONLY = {".hydra"}


# ---------------------------------------------------------------------------- checks
def check_job(cfg: Any, run_dir: Path) -> Config:
    """The check of one training job, before anything of it exists: the typed Config (unknown
    keys, types, cross-group rules), this machine, the env factory and task.model_file
    (cli.runtime_checks), run.resume (the checkpoint exists, is intact, fits the config) and
    the run dir (writable). Raises the user error."""
    from flashsac_bench.runner.env_factory import env_factory_is_default
    from flashsac_bench.runner.resume import plan_resume

    config = to_config(cfg)
    check_runtime(config)
    model = None
    if env_factory_is_default():
        from flashsac_bench.envs import task_record

        model = task_record(config.task)
    plan_resume(config, run_dir, mmap=True, model=model)
    problem = probe_writable(run_dir)
    if problem:
        raise UsageError(problem, 1)
    return config


def cpu_warnings(plan: preflight.Plan) -> list[str]:
    """The up-front warning for jobs that will run long on the CPU: a run's, or one line with
    a sweep's total."""
    from flashsac_bench.cli.runtime_estimate import cpu_warning, sweep_cpu_warning

    configs = [job.options for job in plan.jobs]
    if plan.multirun:
        text = sweep_cpu_warning(configs)
    else:
        text = cpu_warning(configs[0]) if configs and configs[0] is not None else None
    return [text] if text else []


# ---------------------------------------------------------------------------- one run
def hydra_context() -> tuple[Path | None, dict[str, Any]]:
    """Hydra's run dir and a reconstruction of the command (job processes launched by
    submitit do not see the user's argv)."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc: Any = HydraConfig.get()  # a DictConfig at runtime (typed as the HydraConf schema)
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


def run_job(cfg: Any) -> float | None:
    """The Hydra task of `python -m flashsac_bench` (flashsac_bench.__main__ wraps it)."""
    try:
        job = preflight.checked_job(cfg, CONFIG_NAME, check_job)
        return _run(job.options, job.composed)
    except Exception as err:
        if errors.debug_enabled():
            raise
        code = errors.report(err)
        if code is None:
            raise
        if isinstance(err, ConfigError):
            _remove_hydra_only_run_dir()
        raise SystemExit(code) from None


def train(
    config: Config,
    raw_cfg: Any = None,
    *,
    run_dir: str | os.PathLike[str] | None = None,
    env_factory: EnvFactory | None = None,
    collector_timeout_s: float | None = None,
) -> float | None:
    """Check and run one training run of `config` (`raw_cfg`: the composed config it came
    from, recorded with the run); returns the median iter_ms."""
    check_runtime(config, env_factory)
    composed = None
    if raw_cfg is not None:
        from omegaconf import OmegaConf

        composed = OmegaConf.to_container(raw_cfg, resolve=True)
    return _run(
        config,
        composed,  # type: ignore[arg-type]
        run_dir=run_dir,
        env_factory=env_factory,
        collector_timeout_s=collector_timeout_s,
    )


def _run(
    config: Config,
    composed: dict[str, Any] | None,
    *,
    run_dir: str | os.PathLike[str] | None = None,
    env_factory: EnvFactory | None = None,
    collector_timeout_s: float | None = None,
) -> float | None:
    """Run a checked config; returns the median iter_ms (what a Hydra sweeper would minimize).
    collector_timeout_s: how long a collector step may take (None: the collector's default)."""
    from flashsac_bench.runner.collector import DEFAULT_TIMEOUT_S
    from flashsac_bench.runner.loop import Runner

    if collector_timeout_s is None:
        collector_timeout_s = DEFAULT_TIMEOUT_S

    hydra_dir, command = hydra_context()
    out = Path(run_dir) if run_dir is not None else hydra_dir
    if out is None:
        out = Path("outputs") / time.strftime("%Y-%m-%d/%H-%M-%S")
    if errors.debug_enabled():  # the runner logs the tracebacks it does not raise at DEBUG
        logging.getLogger("flashsac_bench.runner").setLevel(logging.DEBUG)
    runner = Runner(
        config,
        out,
        composed=composed,
        command=command,
        env_factory=env_factory,
        collector_timeout_s=collector_timeout_s,
    )
    from flashsac_bench.runner.collector import CollectorError

    try:
        summary = runner.run()
    except KeyboardInterrupt as err:
        if isinstance(err, Aborted):
            raise
        if isinstance(err, StartInterrupted):  # before the loop: nothing to save
            raise Aborted(f"{err}; {err.hint}" if err.hint else str(err), err.code) from None
        raise Aborted(_abort_message(runner, err)) from None
    except CollectorError as err:
        if not _env_lost(runner, err):
            raise  # an env that raised: a bug of the env, with its traceback
        lost = _env_lost_error_type()(str(err))
        lost.hint = runner.dir.continue_hint()
        raise lost from err
    return (summary.get("iter_ms") or {}).get("median")


@functools.cache
def _env_lost_error_type() -> type[EnvLostError]:
    """EnvLostError that is also the runner's CollectorError (what callers of `train` catch);
    made on first use: the collector imports torch, which --help and bad input never need."""
    from flashsac_bench.runner.collector import CollectorError

    return type("EnvLostCollectorError", (CollectorError, EnvLostError), {})


def _env_lost(runner: Runner, err: BaseException) -> bool:
    """An env worker that died, hung or failed, or a collector stuck in env.step: the envs are
    gone, and the run goes on from its last checkpoint."""
    from flashsac_bench.envs.g1.cpu.shards import EnvWorkerError

    if isinstance(err.__cause__, EnvWorkerError):
        return True
    return runner.parts is not None and runner.parts.collector.hung


def _abort_message(runner: Runner, err: KeyboardInterrupt) -> str:
    """What a second Ctrl-C kept, and the command that continues from there."""
    signame = str(err) or "SIGINT"
    head = f"aborted by a second {signame} during iteration {runner.state.done_iterations}"
    hint = runner.dir.continue_hint()
    if hint.startswith("no checkpoint"):
        return f"{head}; {hint}"
    return f"{head} (nothing of it was saved); {hint}"


def _remove_hydra_only_run_dir() -> None:
    """A run that never started leaves no run dir: remove it if it holds only Hydra's files."""
    try:
        from hydra.core.hydra_config import HydraConfig

        out = Path(HydraConfig.get().runtime.output_dir)
    except (ImportError, ValueError):
        return
    if not out.is_dir():
        return
    entries = list(out.iterdir())
    if all(e.name in _HYDRA_ONLY or (e.is_file() and e.suffix == ".log") for e in entries):
        shutil.rmtree(out, ignore_errors=True)


# ---------------------------------------------------------------------------- command line
def main(app: Callable[[], Any]) -> None:
    """The command line (sys.argv); `app`: the Hydra-decorated task that calls run_job."""
    register_configs()
    argv = errors.strip_debug_flag(sys.argv[1:])
    sys.argv = [sys.argv[0], *argv]
    plan = None
    try:
        plan = _preflight(argv)
        app()
    except KeyboardInterrupt as err:
        _abort_on_another_signal()
        _after_sweep_interrupt(plan, argv)
        if errors.debug_enabled():
            raise
        text = str(err) if isinstance(err, Aborted) else "aborted"
        print(f"flashsac_bench: {errors.one_line(text)}", file=sys.stderr)
        _exit_now(err.code if isinstance(err, Aborted) else 130)
    except SystemExit as err:
        if err.code not in (0, None, 1, 2):  # 128 + signal: an interrupted run
            _abort_on_another_signal()
            _after_sweep_interrupt(plan, argv)
        raise


def _abort_on_another_signal() -> None:
    """The command is ending on a signal (its run's files are written): another SIGINT or
    SIGTERM ends the process at once, in one line, wherever the main thread is (the sweep's
    comparison, the interpreter's exit), instead of a KeyboardInterrupt's traceback."""

    def abort(signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        os.write(2, f"flashsac_bench: aborted by a second {name} while ending\n".encode())
        os._exit(128 + signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, abort)


def _exit_now(code: int) -> NoReturn:
    """End a command that a signal stopped at once, without the interpreter's exit: its run's
    files are written and closed, and that exit would wait for torch's compile workers to
    finish the kernel each compiles (seconds), which die with this process instead."""
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()  # the run's log file, flushed and closed
    os._exit(code)


def _preflight(argv: list[str]) -> preflight.Plan | None:
    try:
        plan = preflight.check_command(argv, CONFIG_NAME, check_job)
    except Exception as err:
        if errors.debug_enabled():
            raise
        code = errors.report(err)
        if code is None:
            # The preflight never lets a command through unchecked: whatever failed inside it
            # is this command's error, in one line (--debug shows the traceback).
            print(
                f"flashsac_bench: invalid command: checking it failed with "
                f"{type(err).__name__}: {errors.one_line(str(err))}",
                file=sys.stderr,
            )
            code = 2
        raise SystemExit(code) from None
    if plan is not None:
        for text in cpu_warnings(plan):
            print(f"flashsac_bench: {text}", file=sys.stderr)
    return plan


def _after_sweep_interrupt(plan: preflight.Plan | None, argv: list[str]) -> None:
    """An interrupted sweep still gets the comparison of its runs and the resume command."""
    if plan is None or not plan.multirun:
        return
    from flashsac_bench.analysis import sweep_callback as callbacks
    from flashsac_bench.runner.resume_commands import sweep_resume_command

    sweep_dir = callbacks.current_sweep_dir or plan.sweep_dir
    if sweep_dir is None:
        return
    files = callbacks.rebuild(sweep_dir) if sweep_dir.is_dir() else None
    where = f"comparison of the runs so far: {files['comparison.md']}" if files else "no runs yet"
    print(
        f"flashsac_bench: sweep interrupted ({where}); resume it with: "
        f"{sweep_resume_command(argv, sweep_dir)}",
        file=sys.stderr,
    )
