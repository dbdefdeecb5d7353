"""Bad input ends in one line on stderr and a non-zero exit status, never a traceback.

`describe` maps the errors a user can fix to (message, exit status):

  ConfigError and its kinds (invalid configuration, cannot resume, unreadable checkpoint,
  invalid task.model_file, invalid environment variable)                  -> 2
  Hydra composition errors (unknown key, wrong type, no such option)      -> 2
  a full disk (DiskFullError / ENOSPC, also behind another error), an
  unwritable file or folder                                               -> 1
  a run that ended by a fault it names (runner.faults: not learning, an
  env worker lost), with what to do next (the resume command)              -> 1
  an abort by a signal (a second Ctrl-C, or the first before the loop)   -> 128 + signal

Anything else is a bug and keeps its traceback. `--debug` (stripped from argv before Hydra
parses it), FLASHSAC_BENCH_DEBUG=1 or Hydra's own HYDRA_FULL_ERROR=1 show the traceback of the
errors above too; --debug sets both variables, so Hydra and job processes see it as well.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.runner.faults import RunFaultError
from flashsac_bench.runner.writes import (
    DISK_FULL_ERRNOS,
    NOT_WRITABLE_ERRNOS,
    DiskFullError,
    NotWritableError,
    chained_disk_full,
)

PROG = "flashsac_bench"
DEBUG_FLAG = "--debug"
DEBUG_VARS = ("FLASHSAC_BENCH_DEBUG", "HYDRA_FULL_ERROR")


class Aborted(KeyboardInterrupt):
    """A run ended by a signal at once (a second Ctrl-C / SIGTERM, or the first one before its
    loop began): the message says what was kept and how to go on; `code`: the exit status."""

    def __init__(self, message: str, code: int = 130) -> None:
        super().__init__(message)
        self.code = code


class UsageError(Exception):
    """A one-line error with its own exit status (e.g. several invalid sweep jobs)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def strip_debug_flag(argv: list[str]) -> list[str]:
    if DEBUG_FLAG not in argv:
        return argv
    for var in DEBUG_VARS:
        os.environ[var] = "1"
    return [a for a in argv if a != DEBUG_FLAG]


def debug_enabled() -> bool:
    return any(os.environ.get(v, "").strip() not in ("", "0") for v in DEBUG_VARS)


def one_line(text: str) -> str:
    parts = [p.strip() for p in str(text).strip().splitlines() if p.strip()]
    return "; ".join(parts)


def _hydra_message(err: BaseException) -> str | None:
    """Hydra's composition errors, compacted: the key, what is wrong, the options."""
    try:
        from hydra.errors import (
            ConfigCompositionException,
            MissingConfigException,
            OverrideParseException,
        )
    except ImportError:  # pragma: no cover
        return None
    if isinstance(err, MissingConfigException):
        lines = str(err).strip().splitlines()
        options = getattr(err, "options", None)
        first = lines[0].replace("In 'config': ", "")
        if options:
            return f"{first}; available: {', '.join(map(str, options))}"
        return first
    if isinstance(err, OverrideParseException):
        return f"cannot parse override: {str(err).splitlines()[0]}"
    if isinstance(err, ConfigCompositionException):
        cause = err.__cause__
        key = getattr(cause, "full_key", None)
        if cause is not None:
            detail = str(cause).strip().splitlines()[0]
            if key and type(cause).__name__ in ("ConfigAttributeError", "ConfigKeyError"):
                return _unknown_key(str(key), detail, getattr(cause, "object_type", None))
            return f"{key}: {detail}" if key else detail
        return str(err)
    return None


def _unknown_key(key: str, detail: str, parent: type | None = None) -> str:
    """'unknown key K (did you mean K2?): detail'; the suggestion comes from the fields of the
    key's parent node (`parent`, the dataclass OmegaConf names), else from the training schema."""
    import difflib
    from dataclasses import fields, is_dataclass

    from flashsac_bench.config.keys import unknown_key_hint

    close = None
    if isinstance(parent, type) and is_dataclass(parent):
        *parents, leaf = key.split(".")
        match = difflib.get_close_matches(leaf, [f.name for f in fields(parent)], 1, 0.75)
        close = ".".join([*parents, match[0]]) if match else None
    else:
        from flashsac_bench.config.keys import suggest
        from flashsac_bench.config.root import Config

        close = suggest(key, Config())
    # The option composed for the key's group (its schema's name), e.g. backend=mujoco.
    chosen = getattr(parent, "name", None) if key.startswith(("backend.", "task.")) else None
    return f"unknown key {key}{unknown_key_hint(key, close, chosen)}: {detail}"


def describe(err: BaseException) -> tuple[str, int] | None:
    """(one-line message, exit status) for an error the user can fix; None for a bug."""
    if isinstance(err, Aborted):
        return one_line(str(err)), err.code
    if isinstance(err, RunFaultError):
        hint = f"; {err.hint}" if err.hint else ""
        return f"{err.label}: {one_line(str(err))}{hint}", 1
    if isinstance(err, UsageError):
        return str(err), err.code  # may hold one line per sweep job
    if isinstance(err, ConfigError):
        return f"{err.label}: {one_line(str(err))}", 2
    hydra = _hydra_message(err)
    if hydra is not None:
        return f"invalid configuration: {one_line(hydra)}", 2
    if isinstance(err, DiskFullError | NotWritableError):
        return one_line(err.strerror or str(err)), 1
    if isinstance(err, OSError):
        if err.errno in DISK_FULL_ERRNOS:
            return one_line(f"no space left on device: {err.filename or err}"), 1
        if err.errno in NOT_WRITABLE_ERRNOS and err.filename:
            return one_line(f"cannot write {err.filename}: {err.strerror}"), 1
    full = chained_disk_full(err)
    if full is not None:
        return describe(full)
    return None


def report(err: BaseException, stream: Any = None) -> int | None:
    """Print the one line for `err` and return its exit status (None: not a user error)."""
    found = describe(err)
    if found is None:
        return None
    message, code = found
    print(f"{PROG}: {message}", file=stream or sys.stderr)
    return code
