"""`python -m flashsac_bench [--debug] [-m] [+experiment=...] [group=option ...] [key=value ...]`.

Before Hydra starts, flashsac_bench.preflight composes and checks every job of the command, so
bad input fails with one line (flashsac_bench.cli_errors) and nothing is created. --debug (or
FLASHSAC_BENCH_DEBUG=1, or Hydra's HYDRA_FULL_ERROR=1) shows tracebacks instead.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from flashsac_bench import cli_errors
from flashsac_bench.config import ConfigError, register_configs, to_config

register_configs()

# Hydra writes these into a run dir before the task function runs.
_HYDRA_ONLY = {".hydra"}


@hydra.main(version_base="1.3", config_path="pkg://flashsac_bench.conf", config_name="config")
def _hydra_main(cfg: DictConfig) -> float | None:
    try:
        config = to_config(cfg)
        from flashsac_bench.hydra_app import train

        return train(config, cfg)
    except Exception as err:
        if cli_errors.debug_enabled():
            raise
        code = cli_errors.report(err)
        if code is None:
            raise
        if isinstance(err, ConfigError):
            _remove_hydra_only_run_dir()
        raise SystemExit(code) from None


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


def _preflight(argv: list[str]):  # -> preflight.Plan | None
    from flashsac_bench import preflight

    try:
        plan = preflight.check(argv)
    except Exception as err:
        if cli_errors.debug_enabled():
            raise
        code = cli_errors.report(err)
        if code is None:
            # A bug in the checks must not block a valid command: Hydra checks it again.
            print(
                f"flashsac_bench: warning: preflight check failed ({type(err).__name__}: "
                f"{cli_errors.one_line(str(err))}); continuing without it",
                file=sys.stderr,
            )
            return None
        raise SystemExit(code) from None
    if plan is not None:
        for text in preflight.warnings(plan):
            print(f"flashsac_bench: {text}", file=sys.stderr)
    return plan


def _after_sweep_interrupt(plan, argv: list[str]) -> None:
    """An interrupted sweep still gets the comparison of its runs and the resume command."""
    if plan is None or not plan.multirun:
        return
    from flashsac_bench.analysis import sweep_callback as callbacks
    from flashsac_bench.runner.resume import sweep_resume_command

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


def main() -> None:
    argv = cli_errors.strip_debug_flag(sys.argv[1:])
    sys.argv = [sys.argv[0], *argv]
    plan = None
    try:
        plan = _preflight(argv)
        _hydra_main()
    except KeyboardInterrupt as err:
        _after_sweep_interrupt(plan, argv)
        if cli_errors.debug_enabled():
            raise
        text = str(err) if isinstance(err, cli_errors.Aborted) else "aborted"
        print(f"flashsac_bench: {cli_errors.one_line(text)}", file=sys.stderr)
        raise SystemExit(130) from None
    except SystemExit as err:
        if err.code not in (0, None, 1, 2):  # 128 + signal: an interrupted run
            _after_sweep_interrupt(plan, argv)
        raise


if __name__ == "__main__":
    main()
