"""The one rule for numbers in a config: every float is finite unless its field says otherwise.

A NaN passes every `x > 0` / `x <= y` check written for real numbers (each comparison is simply
False), and an inf passes most of them, so a range check alone lets both through, and the run
then computes with them: updates skipped, rewards zeroed, a division by zero after the learner
is built. `require_finite` walks a config dataclass (nested ones and lists of numbers too) and
raises ConfigError naming the first value that is not finite; every group calls it first in
its __post_init__, before its domain checks (which may then assume real numbers).

A field that may hold inf or NaN on purpose says so in its metadata: `field(metadata=NONFINITE)`.
"""

from __future__ import annotations

import math
from dataclasses import fields, is_dataclass
from typing import Any

from flashsac_bench.config.errors import ConfigError

NONFINITE = {"nonfinite": True}


def _bad(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def require_finite(obj: Any, prefix: str) -> None:
    """ConfigError naming the first float of `obj` (a dataclass instance; nested dataclasses,
    lists and dicts of numbers included) that is NaN or infinite."""
    for f in fields(obj):
        if f.metadata.get("nonfinite"):
            continue
        _check(getattr(obj, f.name), f"{prefix}{f.name}")


def _check(value: Any, key: str) -> None:
    if _bad(value):
        raise ConfigError(f"{key}={value}: must be a finite number")
    if is_dataclass(value) and not isinstance(value, type):
        require_finite(value, f"{key}.")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            if _bad(item):
                raise ConfigError(f"{key}[{i}]={item} (in {key}): must be a finite number")
            if isinstance(item, list | tuple | dict) or is_dataclass(item):
                _check(item, f"{key}[{i}]")
    elif isinstance(value, dict):
        for name, item in value.items():
            _check(item, f"{key}.{name}")


def require_range(key: str, value: float, low: float, high: float, *, closed: str = "[]") -> None:
    """ConfigError unless low <(=) value <(=) high; `closed` says which ends belong to it:
    "[]", "[)", "(]" or "()"."""
    lo_ok = value >= low if closed[0] == "[" else value > low
    hi_ok = value <= high if closed[1] == "]" else value < high
    if not (lo_ok and hi_ok):
        raise ConfigError(f"{key} must be in {closed[0]}{low:g}, {high:g}{closed[1]}, got {value}")


def require_positive(key: str, value: float) -> None:
    if not value > 0:
        raise ConfigError(f"{key} must be > 0, got {value}")
