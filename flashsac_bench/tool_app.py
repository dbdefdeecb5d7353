"""The Hydra command lines of the tools (evaluate, export, convert) on typed schemas.

`run_tool(Tool(...))` gives a tool what `python -m flashsac_bench` has: `--help`, `--cfg job`,
`-m` sweeps and `--debug`, and bad input ends in one line on stderr with a non-zero exit status
(flashsac_bench.cli_errors). Before Hydra runs a job, every job of the command is composed,
typed (unknown keys, types, required keys, the schema's own checks) and checked by the tool
(e.g. that its checkpoint is readable), so that nothing is written when any job is invalid.
Where the outputs go is the tool's business: conf/<tool>.yaml keeps Hydra's files out.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from flashsac_bench import cli_errors
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.root import to_object

CONFIG_MODULE = "flashsac_bench.conf"
CONFIG_PATH = f"pkg://{CONFIG_MODULE}"


@dataclass(frozen=True)
class Tool:
    prog: str  # e.g. "flashsac_bench.evaluate": the prefix of its messages
    config_name: str  # conf/<config_name>.yaml
    schema_name: str  # the ConfigStore name that yaml's defaults list starts with
    schema: type  # the options' dataclass
    job: Callable[[Any], int]  # the composed DictConfig of one job -> exit status
    # Keys without a default, with what to pass ("checkpoint" -> "<run dir or .pt>").
    required: dict[str, str] = field(default_factory=dict)
    # Checks of one job's typed options before any job runs; raises a user error (ConfigError).
    check: Callable[[Any], None] | None = None


def to_schema(cfg: Any, schema: type) -> Any:
    """The typed options of a composed config (without its `hydra` node): keys the schema does
    not have (Hydra's `+key=`) and the checks in its __post_init__ raise ConfigError."""
    from omegaconf import open_dict

    from flashsac_bench.config.keys import unknown_keys

    if "hydra" in cfg:
        cfg = cfg.copy()
        with open_dict(cfg):
            del cfg["hydra"]
    unknown = unknown_keys(cfg, schema())
    if unknown:
        raise ConfigError(f"unknown key {', '.join(unknown)}: not an option of this command")
    return to_object(cfg)


def missing_message(cfg: Any, tool: Tool) -> str | None:
    """'key=<what> is required (--help)' for the first required key left at ???."""
    from omegaconf import OmegaConf

    for key, what in tool.required.items():
        if OmegaConf.is_missing(cfg, key):
            return f"{key}={what} is required (--help)"
    return None


def check_jobs(argv: list[str], tool: Tool) -> None:
    """Compose, type and check every job of the command; one UsageError for the bad ones."""
    from hydra import compose, initialize_config_module

    from flashsac_bench import preflight

    args = preflight.parse(argv)
    if args is None:  # --help, --cfg, ...: Hydra prints; a bad override is still one line
        preflight.compose_errors(argv, tool.config_name)
        return
    multirun = preflight.is_multirun(args)
    try:
        per_job = preflight.job_overrides(list(args.overrides), multirun)
    except Exception as err:  # noqa: BLE001 - describe() re-raises what is not a user error
        raise cli_errors.UsageError(_message(err)) from None
    jobs = [preflight.Job(i, o) for i, o in enumerate(per_job)]
    with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
        for job in jobs:
            try:
                _typed_options(compose, tool, job.overrides)
            except Exception as err:  # noqa: BLE001
                job.error, job.exc = _message(err), err
    preflight.raise_invalid(preflight.Plan(multirun, jobs))


def compose_options(tool: Tool, overrides: list[str], check: bool = True) -> Any:
    """One job's typed (and with `check`, checked) options, composed as the command line
    composes them; a user error raises UsageError with the command line's message."""
    from hydra import compose, initialize_config_module
    from hydra.core.config_store import ConfigStore
    from hydra.core.global_hydra import GlobalHydra

    ConfigStore.instance().store(name=tool.schema_name, node=tool.schema)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
            return _typed_options(compose, tool, overrides, check)
    except Exception as err:  # noqa: BLE001
        raise cli_errors.UsageError(_message(err)) from None


def _typed_options(compose: Any, tool: Tool, overrides: list[str], check: bool = True) -> Any:
    cfg = compose(config_name=tool.config_name, overrides=overrides)
    missing = missing_message(cfg, tool)
    if missing:
        raise cli_errors.UsageError(missing)
    options = to_schema(cfg, tool.schema)
    if check and tool.check is not None:
        tool.check(options)
    return options


def _message(err: BaseException) -> str:
    found = cli_errors.describe(err)
    if found is None:
        raise err
    return found[0]


def run_tool(tool: Tool) -> None:
    """The command line of `tool` (sys.argv): checks, then Hydra runs the job(s)."""
    import hydra
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name=tool.schema_name, node=tool.schema)
    argv = cli_errors.strip_debug_flag(sys.argv[1:])
    sys.argv = [sys.argv[0], *argv]
    try:
        check_jobs(argv, tool)
    except Exception as err:
        _exit_on_user_error(err, tool.prog)

    def job(cfg: Any) -> None:
        try:
            rc = tool.job(cfg)
        except Exception as err:
            _exit_on_user_error(err, tool.prog)
        if rc:
            raise SystemExit(rc)

    app = hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name=tool.config_name)
    try:
        app(job)()
    except KeyboardInterrupt:
        if cli_errors.debug_enabled():
            raise
        print(f"{tool.prog}: aborted", file=sys.stderr)
        raise SystemExit(130) from None


def _exit_on_user_error(err: Exception, prog: str) -> NoReturn:
    """One line and the exit status for an error the user can fix; anything else re-raised."""
    found = None if cli_errors.debug_enabled() else cli_errors.describe(err)
    if found is None:
        raise err
    print(f"{prog}: {found[0]}", file=sys.stderr)
    raise SystemExit(found[1]) from None
