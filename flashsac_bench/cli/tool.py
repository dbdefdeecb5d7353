"""The Hydra command lines of the tools (evaluate, export, convert) on typed schemas.

`run_tool(Tool(...))` gives a tool what `python -m flashsac_bench` has: `--help`, `--cfg job`,
`-m` sweeps and `--debug`, and bad input ends in one line on stderr with a non-zero exit status
(flashsac_bench.cli.errors). Before Hydra runs a job, every job of the command is composed,
typed (unknown keys, types, required keys, the schema's own checks) and checked by the tool
(e.g. that its checkpoint is readable) by `typed_options` (cli.preflight), so that nothing is
written when any job is invalid; the job then runs on those checked options.
Where the outputs go is the tool's business: conf/<tool>.yaml keeps Hydra's files out.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from flashsac_bench.cli import errors, preflight
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.root import to_object

CONFIG_PATH = f"pkg://{preflight.CONFIG_MODULE}"


@dataclass(frozen=True)
class Tool:
    prog: str  # e.g. "flashsac_bench.evaluate": the prefix of its messages
    config_name: str  # conf/<config_name>.yaml
    schema_name: str  # the ConfigStore name that yaml's defaults list starts with
    schema: type  # the options' dataclass
    # One job: (its checked options, its composed config as plain data) -> exit status.
    job: Callable[[Any, dict[str, Any]], int]
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
    from flashsac_bench.config.keys import suggest

    unknown = unknown_keys(cfg, schema())
    if unknown:
        named = []
        for key in unknown:
            close = suggest(key, schema())
            named.append(f"{key} (did you mean {close}?)" if close else key)
        raise ConfigError(f"unknown key {', '.join(named)}: not an option of this command")
    return to_object(cfg)


def missing_message(cfg: Any, tool: Tool) -> str | None:
    """'key=<what> is required (--help)' for the first required key left at ???."""
    from omegaconf import OmegaConf

    for key, what in tool.required.items():
        if OmegaConf.is_missing(cfg, key):
            return f"{key}={what} is required (--help)"
    return None


def typed_options(tool: Tool, cfg: Any, check: bool = True) -> Any:
    """The check of one job of `tool`: required keys, the typed options and (with `check`) the
    tool's own check. Raises the user error."""
    missing = missing_message(cfg, tool)
    if missing:
        raise errors.UsageError(missing)
    options = to_schema(cfg, tool.schema)
    if check and tool.check is not None:
        tool.check(options)
    return options


def register(tool: Tool) -> None:
    """The tool's schema, and the config groups' own schemas (each backend's) that its YAML's
    defaults list may compose, in Hydra's ConfigStore."""
    from hydra.core.config_store import ConfigStore

    from flashsac_bench.config.store import register_configs

    register_configs()
    ConfigStore.instance().store(name=tool.schema_name, node=tool.schema)


def compose_options(tool: Tool, overrides: list[str], check: bool = True) -> Any:
    """One job's typed (and with `check`, checked) options, composed as the command line
    composes them; a user error raises UsageError with the command line's message."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    register(tool)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module=preflight.CONFIG_MODULE, version_base="1.3"):
            cfg = compose(config_name=tool.config_name, overrides=overrides)
            return typed_options(tool, cfg, check)
    except Exception as err:  # noqa: BLE001
        found = errors.describe(err)
        if found is None:
            raise
        raise errors.UsageError(found[0]) from None


def run_tool(tool: Tool) -> None:
    """The command line of `tool` (sys.argv): checks, then Hydra runs the job(s)."""
    import hydra

    register(tool)
    argv = errors.strip_debug_flag(sys.argv[1:])
    sys.argv = [sys.argv[0], *argv]

    def check(cfg: Any, run_dir: Path) -> Any:
        return typed_options(tool, cfg)

    try:
        preflight.check_command(argv, tool.config_name, check)
    except Exception as err:
        _exit_on_user_error(err, tool.prog, preflight=True)

    def job(cfg: Any) -> None:
        try:
            checked = preflight.checked_job(cfg, tool.config_name, check)
            assert checked.composed is not None
            rc = tool.job(checked.options, checked.composed)
        except Exception as err:
            _exit_on_user_error(err, tool.prog)
        if rc:
            raise SystemExit(rc)

    app = hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name=tool.config_name)
    try:
        app(job)()
    except KeyboardInterrupt:
        if errors.debug_enabled():
            raise
        print(f"{tool.prog}: aborted", file=sys.stderr)
        raise SystemExit(130) from None


def _exit_on_user_error(err: Exception, prog: str, preflight: bool = False) -> NoReturn:
    """One line and the exit status for an error the user can fix; anything else re-raised,
    except in the preflight, which never lets a command through unchecked (one line, 2)."""
    if errors.debug_enabled():
        raise err
    found = errors.describe(err)
    if found is None and preflight:
        found = (f"invalid command: checking it failed with {type(err).__name__}: "
                 f"{errors.one_line(str(err))}", 2)  # fmt: skip
    if found is None:
        raise err
    print(f"{prog}: {found[0]}", file=sys.stderr)
    raise SystemExit(found[1]) from None
