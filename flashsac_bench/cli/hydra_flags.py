"""Hydra's own command-line flags, classified by what they read: a command reads data, not code.

Every command (`python -m flashsac_bench` / `flashsac-bench`, evaluate, export, convert) is a
Hydra app, so Hydra's argument parser (`hydra._internal.utils.get_args_parser`) reads its flags
before any of ours. `FLAGS` names every flag of that parser (by its argparse `dest`) and what it
does with files; `refuse` parses a command line with Hydra's very parser (so abbreviations such
as `--experimental-re`, `--flag=value` and the short forms count as what Hydra takes them for)
and refuses, in one line, every flag that would load a file as code or swap the command's
configs for files elsewhere:

- `--experimental-rerun FILE` unpickles FILE (pickle runs whatever the file names);
- `--config-dir` / `--config-path` / `--config-name` (and the override `hydra.searchpath`) read
  the command's configs from elsewhere: such a file may name `_target_`s that Hydra instantiates
  (callbacks, launchers, logging handlers), and a job composed from it skips this command's
  checks. Each command has one config tree, `flashsac_bench.conf`; `+experiment=...` and
  overrides choose within it.

A flag of the parser that `FLAGS` does not know (a newer Hydra) is refused as well: nothing
passes unclassified. tests/runner/test_hydra_flags.py holds `FLAGS` equal to the installed
Hydra's parser and sends a crafted pickle through every flag that takes a value.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

from flashsac_bench.cli.errors import UsageError

# argparse dest -> None (reads no file, or only this command's own configs) or why it is refused.
FLAGS: dict[str, str | None] = {
    "help": None,  # prints the command's help
    "hydra_help": None,  # prints Hydra's help
    "version": None,  # prints Hydra's version
    "overrides": None,  # key=value: data, checked by the command (hydra.searchpath: below)
    "cfg": None,  # prints the composed config (job / hydra / all)
    "resolve": None,  # --cfg with interpolations resolved
    "package": None,  # --cfg of one package of the composed config
    "run": None,  # run mode (the default)
    "multirun": None,  # -m: a sweep
    "shell_completion": None,  # prints or installs shell completion scripts
    "info": None,  # prints Hydra's information (config, defaults, plugins, search path)
    "experimental_rerun": "unpickles the file it names, and unpickling runs code",
    "config_path": "replaces the command's config tree with files elsewhere",
    "config_name": "replaces the command's config with another",
    "config_dir": "adds configs from a folder elsewhere",
}
# Overrides that make Hydra read configs from elsewhere, like --config-dir.
REFUSED_OVERRIDES = {"hydra.searchpath": "adds config folders elsewhere"}
WHY = (
    "files are read as data, never code, and configs come from flashsac_bench.conf only "
    "(+experiment=..., key=value)"
)


def parser_flags() -> dict[str, list[str]]:
    """dest -> option strings of every argument of the installed Hydra's parser."""
    from hydra._internal.utils import get_args_parser

    return {a.dest: list(a.option_strings) for a in get_args_parser()._actions}


def parse_args(argv: list[str]) -> Any | None:
    """Hydra's parse of `argv`; None when Hydra's parser refuses it (Hydra then says why, and
    runs nothing)."""
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return parser.parse_args(argv)
    except SystemExit:
        return None


def _is_set(args: Any, dest: str) -> bool:
    from hydra._internal.utils import get_args_parser

    defaults = {a.dest: a.default for a in get_args_parser()._actions}
    value = getattr(args, dest, None)
    return value is not None and value is not False and value != defaults.get(dest)


def refuse(argv: list[str]) -> None:
    """UsageError (one line) for a flag or override of `argv` that reads a file as code or
    configs from elsewhere, or a flag this module does not know."""
    args = parse_args(argv)
    if args is None:
        return
    flags = parser_flags()
    for dest in flags:
        if dest == "overrides" or not _is_set(args, dest):
            continue
        why = FLAGS.get(dest, "is a Hydra flag this version of flashsac_bench does not know")
        if why is None:
            continue
        names = "/".join(flags[dest]) or dest
        raise UsageError(f"{names} refused: it {why}; {WHY}")
    for override in args.overrides or []:
        key = override.split("=", 1)[0].lstrip("+~")
        if key in REFUSED_OVERRIDES:
            raise UsageError(f"{key} refused: it {REFUSED_OVERRIDES[key]}; {WHY}")
