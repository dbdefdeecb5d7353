"""Where two runs of one seed stop computing the same numbers.

Two runs of the same config and seed should log the same metrics row for row (the env's
per-env random streams and the learner's counter-based RNG are seeded); timings differ and are
ignored. `first_divergence` names the first iteration and the metrics that differ, which tells
the env (rows before learning starts) from the learner (a loss of the first learning row).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flashsac_bench.runner.summary import SUMMARY_NAME, load_summary

# What a row computes (not how long it took): env outcomes, then the learner's outputs.
METRIC_KEYS = (
    "env_steps",
    "reward_mean",
    "episodes_done",
    "episode_return_mean",
    "episode_length_mean",
    "critic_loss",
    "q_mean",
    "actor_loss",
    "entropy",
    "temperature_loss",
    "temperature",
    "reward_scale",
    "critic_lr",
    "actor_lr",
)


@dataclass
class Divergence:
    iteration: int
    learning: bool  # whether that row had updates (False: the env or the warm-up differs)
    values: dict[str, tuple[Any, Any]]  # metric -> (run a, run b), only those that differ


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def first_divergence(
    rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]], keys: tuple[str, ...] = METRIC_KEYS
) -> Divergence | None:
    """The first row (in iteration order, over the iterations both runs logged) whose metrics
    differ; None when every common row agrees."""
    by_iter = {r["iteration"]: r for r in rows_b}
    for ra in sorted(rows_a, key=lambda r: r["iteration"]):
        rb = by_iter.get(ra["iteration"])
        if rb is None:
            continue
        diff = {k: (ra.get(k), rb.get(k)) for k in keys if not _same(ra.get(k), rb.get(k))}
        if diff:
            return Divergence(ra["iteration"], bool(ra.get("learning")), diff)
    return None


def load_rows(run_dir: Path) -> list[dict[str, Any]]:
    try:
        return load_summary(run_dir)["rows_all"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        path = Path(run_dir) / SUMMARY_NAME
        raise ValueError(f"{path}: no readable rows_all ({type(err).__name__})") from err


def describe(a: Path, b: Path) -> tuple[bool, str]:
    """(identical, a short report) for two run dirs."""
    rows_a, rows_b = load_rows(a), load_rows(b)
    common = sorted({r["iteration"] for r in rows_a} & {r["iteration"] for r in rows_b})
    if not common:
        return False, f"no common iterations ({a}: {len(rows_a)} rows, {b}: {len(rows_b)} rows)"
    d = first_divergence(rows_a, rows_b)
    if d is None:
        return True, (
            f"identical over {len(common)} common iterations ({common[0]}-{common[-1]}), "
            f"metrics: {', '.join(METRIC_KEYS)}"
        )
    first_learning = next((r["iteration"] for r in rows_a if r.get("learning")), None)
    lines = [
        f"first difference at iteration {d.iteration} "
        f"({'a learning row' if d.learning else 'before any update'}; "
        f"the first learning row is {first_learning}; {len(common)} common iterations)"
    ]
    lines += [f"  {k}: {va!r} vs {vb!r}" for k, (va, vb) in d.values.items()]
    return False, "\n".join(lines)
