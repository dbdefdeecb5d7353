"""The one rule for numbers in a config: every number is finite and within its field's range.

A NaN passes every `x > 0` / `x <= y` check written for real numbers (each comparison is simply
False), and an inf passes most of them; a finite number far outside any sense passes a check
for finiteness (a reward weight of 1e38 trains near float32's overflow, a seed of 1e23
overflows torch's generator after the run dir exists). So `require_bounded` walks a config
dataclass (nested ones, lists and dicts of numbers too) and raises ConfigError naming the first
number that is not finite or lies outside its range:

- the range its field declares, `field(metadata=within(low, high))` (`ranged(...)` writes it);
- else its type's: an int in [0, INT_MAX] (counts, sizes, seeds, indices are never negative),
  a float in [-FLOAT_BOUND, FLOAT_BOUND].

Every group calls it first in its __post_init__, before its cross-field checks (which may then
assume real numbers of sane size). The values a file brings (a checkpoint's stored config,
evaluate's options) go through the same classes, hence the same rule, as the command line's.
A field that may hold inf or NaN on purpose says so: `field(metadata=NONFINITE)`; a free dict
whose values are another library's options (path.inductor_options) says so with FREE.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, field, fields, is_dataclass
from typing import Any

from flashsac_bench.config.errors import ConfigError

NONFINITE = {"nonfinite": True}
FREE = {"free": True}  # values checked by whoever reads them (finite numbers only, here)
# The default ranges. Past these a number is a typo, not a setting.
FLOAT_BOUND = 1e6
INT_MAX = 2**31 - 1


def within(low: float, high: float, closed: str = "[]") -> dict[str, Any]:
    """Field metadata: the value lies in [low, high] (`closed`: "[]", "[)", "(]" or "()")."""
    return {"range": (low, high, closed)}


def ranged(
    default: Any = MISSING,
    *,
    low: float,
    high: float,
    closed: str = "[]",
    default_factory: Any = MISSING,
) -> Any:
    """A dataclass field with its range (`within`)."""
    meta = within(low, high, closed)
    if default_factory is not MISSING:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


def _fmt(x: float) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _default_range(value: int | float) -> tuple[float, float, str]:
    if isinstance(value, int):
        return 0, INT_MAX, "[]"
    return -FLOAT_BOUND, FLOAT_BOUND, "[]"


def _problem(value: int | float, bounds: tuple[float, float, str] | None, free: bool) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number"
    if free:
        return None
    low, high, closed = bounds or _default_range(value)
    if not _inside(value, low, high, closed):
        return f"must be in {closed[0]}{_fmt(low)}, {_fmt(high)}{closed[1]}"
    return None


def _inside(value: float, low: float, high: float, closed: str) -> bool:
    lo_ok = value >= low if closed[0] == "[" else value > low
    hi_ok = value <= high if closed[1] == "]" else value < high
    return lo_ok and hi_ok


def require_bounded(obj: Any, prefix: str) -> None:
    """ConfigError naming the first number of `obj` (a dataclass instance; nested dataclasses,
    lists and dicts of numbers included) that is not finite or outside its range."""
    for f in fields(obj):
        if f.metadata.get("nonfinite"):
            continue
        bounds = f.metadata.get("range")
        free = bool(f.metadata.get("free"))
        _check(getattr(obj, f.name), f"{prefix}{f.name}", bounds, free)


def _check(value: Any, key: str, bounds: tuple[float, float, str] | None, free: bool) -> None:
    if _number(value):
        if problem := _problem(value, bounds, free):
            raise ConfigError(f"{key}={value}: {problem}")
    elif is_dataclass(value) and not isinstance(value, type):
        require_bounded(value, f"{key}.")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            if _number(item):
                if problem := _problem(item, bounds, free):
                    raise ConfigError(f"{key}[{i}]={item} (in {key}): {problem}")
            elif isinstance(item, list | tuple | dict) or is_dataclass(item):
                _check(item, f"{key}[{i}]", bounds, free)
    elif isinstance(value, dict):
        for name, item in value.items():
            _check(item, f"{key}.{name}", bounds, free)


def require_range(key: str, value: float, low: float, high: float, *, closed: str = "[]") -> None:
    """ConfigError unless low <(=) value <(=) high (a range that depends on other fields)."""
    if not _inside(value, low, high, closed):
        raise ConfigError(
            f"{key} must be in {closed[0]}{_fmt(low)}, {_fmt(high)}{closed[1]}, got {value}"
        )


def require_positive(key: str, value: float) -> None:
    if not value > 0:
        raise ConfigError(f"{key} must be > 0, got {value}")


def require_no_interpolation(tree: Any, prefix: str = "") -> None:
    """ConfigError naming the first string of `tree` (nested dicts and lists) that holds `${`,
    which OmegaConf would resolve (an interpolation, or a resolver such as oc.env) instead of
    reading it as the value it is: a stored config is data."""
    if isinstance(tree, str):
        if "${" in tree:
            raise ConfigError(
                f"{prefix or 'value'}={tree!r} holds an interpolation: a stored config is data, "
                "and is never resolved"
            )
    elif isinstance(tree, dict):
        for key, item in tree.items():
            require_no_interpolation(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(tree, list | tuple):
        for i, item in enumerate(tree):
            require_no_interpolation(item, f"{prefix}[{i}]")
