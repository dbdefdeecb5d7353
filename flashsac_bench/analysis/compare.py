"""Sweep comparison: comparison.csv / .md / .png from any set of run dirs (one row per run).

Used by the Hydra callback at the end of every multirun, by `scripts/compare.py DIR...` and,
its medians table only, by `python -m flashsac_bench.summary DIR...`. A DIR is a run dir (holds
summary.json) or a sweep dir (its sub-dirs hold them). A run whose summary says "running" but
whose writer is gone (SIGKILL, a full disk) is listed as `stale`, with its last checkpoint
(runner.liveness).

comparison.md leads with the medians table (`medians_table`: what a reader compares first, a
dozen columns at most) and then gives every statistic (`markdown_table`).

% reduction columns compare each run with the eager run(s) of the same task, update ratio and
setup (task, updates_per_step, policy_frequency, num_envs, batch_size, device, dtype); several
eager runs of one setup (repeats) are averaged. 100 * (1 - run / eager): positive = faster.
`return` is the run's last logged episode_return_mean (its last 100 episodes), any task's.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from flashsac_bench.runner.liveness import run_state
from flashsac_bench.runner.summary import SUMMARY_NAME, TIMINGS
from flashsac_bench.runner.writes import atomic_write, atomic_write_text

log = logging.getLogger(__name__)

STATS = ("mean", "median", "p90", "p95")
PATH_ORDER = {"eager": 0, "compile": 1, "cudagraph": 2}
BASELINE_KEYS = (
    "task",
    "updates_per_step",
    "policy_frequency",
    "num_envs",
    "batch_size",
    "device",
    "dtype",
)
SHORT = {"learner_train_ms": "learner", "collector_cycle_ms": "collector", "iter_ms": "iter"}
OUTPUTS = ("comparison.csv", "comparison.md", "comparison.png")


def find_run_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Run dirs under the given paths (each a run dir or a folder of them), in order."""
    found: list[Path] = []
    for p in map(Path, paths):
        if (p / SUMMARY_NAME).is_file():
            found.append(p)
        elif p.is_dir():
            found.extend(sorted(s.parent for s in p.rglob(SUMMARY_NAME)))
        else:
            raise FileNotFoundError(
                f"{p} does not exist" if not p.exists() else f"{p} is not a run dir or sweep dir"
            )
    unique: dict[Path, None] = {}
    for d in found:
        unique.setdefault(d.resolve(), None)
    return list(unique)


def _row(run_dir: Path, s: dict[str, Any]) -> dict[str, Any]:
    tc = s.get("training_config", {})
    state = run_state(run_dir, s)
    if state["status"] == "stale":
        log.warning(
            "%s is stale: %s; last checkpoint %s",
            run_dir,
            state["detail"],
            state["last_checkpoint"],
        )
    rows = s.get("rows_all") or []
    row: dict[str, Any] = {
        "run": run_dir.name,
        # The task; a Gymnasium task by its env (task=gymnasium's runs compare per env).
        "task": tc.get("env_id") or tc.get("task"),
        "update": tc.get("update"),
        "path": tc.get("path"),
        "executor": tc.get("executor"),
        "hardware": tc.get("hardware"),
        "device": tc.get("device"),
        "gpu": s.get("device", {}).get("gpu"),
        "dtype": tc.get("dtype"),
        "num_envs": tc.get("num_envs"),
        "batch_size": tc.get("batch_size"),
        "updates_per_step": tc.get("updates_per_step"),
        "policy_frequency": tc.get("policy_frequency"),
        "critic_updates": tc.get("critic_updates_per_iteration"),
        "actor_updates": tc.get("actor_updates_per_iteration"),
        "complete": bool(s.get("complete")),
        "status": state["status"],
        "last_checkpoint": state["last_checkpoint"],
        "iterations_done": s.get("iterations_done"),
        "num_samples": s.get("num_samples"),
        "cold_start_s": s.get("cold_start_s"),
        "compiled_code": _compiled_code(s.get("compile") or {}),
    }
    for timing in TIMINGS:
        stats = s.get(timing) or {}
        for stat in STATS:
            row[f"{timing}_{stat}"] = stats.get(stat)
    row["overlap_efficiency"] = s.get("overlap_efficiency")
    row["env_steps_per_s"] = s.get("env_steps_per_s")
    row["return"] = rows[-1].get("episode_return_mean") if rows else None
    row["run_dir"] = str(run_dir)
    return row


def _compiled_code(compile_info: dict[str, Any]) -> str | None:
    """Where the run's compiled update came from: "compiled" (it paid the compile), "loaded"
    (an earlier run of the same shapes compiled it: a sweep's later jobs), None (nothing
    compiled: eager)."""
    if compile_info.get("artifacts_compiled"):
        return "compiled"
    if compile_info.get("artifacts_loaded"):
        return "loaded"
    return None


def comparison_frame(run_dirs: Sequence[Path]) -> pd.DataFrame:
    rows = []
    for d in run_dirs:
        try:
            with open(d / SUMMARY_NAME) as f:
                rows.append(_row(d, json.load(f)))
        except (OSError, json.JSONDecodeError) as err:
            log.warning("skipping %s: %s", d, err)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["_order"] = df["path"].map(PATH_ORDER).fillna(len(PATH_ORDER))
    df = df.sort_values(["updates_per_step", "policy_frequency", "num_envs", "_order", "run"])
    df = df.drop(columns="_order").reset_index(drop=True)
    _add_reductions(df)
    return df


def _add_reductions(df: pd.DataFrame) -> None:
    cols = {
        (t, stat): f"{SHORT[t]}_reduction_{stat}_pct"
        for t in ("learner_train_ms", "iter_ms")
        for stat in ("mean", "median")
    }
    for col in cols.values():
        df[col] = math.nan
    df["iter_speedup_median"] = math.nan
    keys = [k for k in BASELINE_KEYS if k in df.columns]
    for _, group in df.groupby(keys, dropna=False, sort=False):
        eager = group[group["path"] == "eager"]
        if eager.empty:
            continue
        base = pd.to_numeric(eager["iter_ms_median"], errors="coerce").mean()
        values = pd.to_numeric(group["iter_ms_median"], errors="coerce")
        df.loc[group.index, "iter_speedup_median"] = base / values
        for (timing, stat), col in cols.items():
            base = pd.to_numeric(eager[f"{timing}_{stat}"], errors="coerce").mean()
            if not base or math.isnan(base):
                continue
            values = pd.to_numeric(group[f"{timing}_{stat}"], errors="coerce")
            df.loc[group.index, col] = 100.0 * (1.0 - values / base)


def _fmt(value: Any, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


MEDIANS_NOTE = (
    "Medians in ms per iteration over each run's summary rows. `iter vs eager`: the iteration "
    "median of the eager run of the same update ratio and setup over this run's (2.00x: twice "
    "as fast). `cold start s (this job)`: this job's own setup, compile and capture included; "
    "`compiled`: it compiled its update, `loaded`: it loaded what an earlier run of the same "
    "shapes compiled (a sweep's later jobs do), so the figure depends on the job's place in "
    "the sweep.\n"
)


def _cell(value: Any, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return fmt.format(value) if fmt else str(value)


def medians_table(df: pd.DataFrame) -> str:
    """The comparison's lead: one row per run, the medians a reader compares first, padded so
    that it reads as plain text too (markdown)."""
    columns: list[tuple[str, str, str]] = [("run", "run", "")]
    if df["task"].nunique(dropna=False) > 1:
        columns.append(("task", "task", ""))
    columns += [
        ("update", "update", ""),
        ("path", "path", ""),
        ("status", "status", ""),
        ("learner_train_ms_median", "learner ms", "{:.2f}"),
        ("collector_cycle_ms_median", "collector ms", "{:.2f}"),
        ("iter_ms_median", "iter ms", "{:.2f}"),
        ("iter_speedup_median", "iter vs eager", "{:.2f}x"),
        ("cold_start_s", "cold start s (this job)", "{:.1f}"),
        ("return", "return", "{:.2f}"),
    ]
    rows = []
    for _, r in df.iterrows():
        row = [_cell(r.get(c), f) for c, _, f in columns]
        code = r.get("compiled_code")
        if isinstance(code, str) and row[-2] != "-":
            row[-2] += f" {code}"
        rows.append(row)
    heads = [title for _, title, _ in columns]
    widths = [max(len(x) for x in col) for col in zip(heads, *rows, strict=True)]
    right = [bool(f) for _, _, f in columns]

    def line(cells: list[str]) -> str:
        padded = [
            c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)
        ]
        return "| " + " | ".join(padded) + " |"

    sep = "|".join("-" * (w + 1) + (":" if r else "-") for w, r in zip(widths, right, strict=True))
    return "\n".join([line(heads), f"|{sep}|", *map(line, rows)]) + "\n"


def markdown_table(df: pd.DataFrame) -> str:
    """A GitHub-markdown table of every statistic of the comparison (no tabulate dependency)."""
    columns: list[tuple[str, str, int]] = [
        ("run", "run", 0),
        ("task", "task", 0),
        ("update", "update", 0),
        ("path", "path", 0),
        ("complete", "complete", 0),
        ("status", "status", 0),
        ("num_samples", "n", 0),
    ]
    for timing in TIMINGS:
        for stat in STATS:
            columns.append((f"{timing}_{stat}", f"{SHORT[timing]} {stat}", 3))
    columns += [
        ("overlap_efficiency", "overlap", 3),
        ("env_steps_per_s", "env-steps/s", 0),
        ("learner_reduction_mean_pct", "learner -% (mean)", 1),
        ("learner_reduction_median_pct", "learner -% (median)", 1),
        ("iter_reduction_mean_pct", "iter -% (mean)", 1),
        ("iter_reduction_median_pct", "iter -% (median)", 1),
        ("cold_start_s", "cold start s (this job)", 1),
        ("return", "return", 1),
    ]
    head = "| " + " | ".join(title for _, title, _ in columns) + " |"
    text = {"run", "task", "update", "path", "complete", "status"}
    sep = "|" + "|".join("---" if c in text else "---:" for c, _, _ in columns)
    lines = [head, sep + "|"]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(_fmt(r.get(c), d) for c, _, d in columns) + " |")
    return "\n".join(lines) + "\n"


def plot(df: pd.DataFrame, path: Path) -> None:
    """Bars of the median of each timing per run, whiskers up to the p90."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n = len(df)
    fig = Figure(figsize=(max(6.0, 1.6 * n + 2), 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    width = 0.26
    labels = [f"{r['update']} {r['path']}\n{r['run']}" for _, r in df.iterrows()]
    for i, timing in enumerate(TIMINGS):
        med = pd.to_numeric(df[f"{timing}_median"], errors="coerce").fillna(0.0)
        p90 = pd.to_numeric(df[f"{timing}_p90"], errors="coerce").fillna(0.0)
        xs = [j + (i - 1) * width for j in range(n)]
        ax.bar(
            xs,
            med,
            width,
            yerr=[[0.0] * n, (p90 - med).clip(lower=0.0).tolist()],
            capsize=3,
            label=f"{SHORT[timing]} (median, p90 whisker)",
        )
    ax.set_xticks(range(n), labels, fontsize=8)
    ax.set_ylabel("ms per iteration")
    ax.set_title("flashsac_bench: learner / collector / iteration time")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    # Written as every output is: a temp file renamed over it, with the mode the umask gives.
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120), "comparison plot")


def write_comparison(
    paths: Iterable[str | os.PathLike[str]], out_dir: str | os.PathLike[str]
) -> dict[str, Path] | None:
    """Write comparison.csv/.md/.png into out_dir; None (and nothing written) without runs."""
    run_dirs = find_run_dirs(paths)
    df = comparison_frame(run_dirs)
    if df.empty:
        log.warning("no summary.json under %s: no comparison written", list(map(str, paths)))
        return None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {name: out / name for name in OUTPUTS}
    atomic_write_text(files["comparison.csv"], df.to_csv(index=False))
    title = f"# flashsac_bench comparison ({len(df)} runs)\n\n"
    note = (
        "\nTimes in ms per iteration over each run's summary rows. `-%` columns: reduction vs "
        "the eager run of the same update ratio and setup (positive = faster).\n"
    )
    text = (
        f"{title}{medians_table(df)}\n{MEDIANS_NOTE}\n## Every statistic\n\n"
        f"{markdown_table(df)}{note}"
    )
    atomic_write_text(files["comparison.md"], text)
    plot(df, files["comparison.png"])
    return files


def report(dirs: Sequence[str | Path], out: str | Path | None = None) -> int:
    """scripts/compare.py: write the comparison of `dirs` into `out` (default: the single dir
    given, else the current directory) and print its files; an exit status."""
    out = out or (dirs[0] if len(dirs) == 1 else ".")
    try:
        files = write_comparison(dirs, out)
    except OSError as err:  # a missing dir, an unwritable --out: one line, no traceback
        text = (
            err.strerror
            if err.errno is None or not err.filename
            else f"{err.filename}: {err.strerror}"
        )
        print(f"scripts/compare.py: {text or err}", file=sys.stderr)
        return 2
    if files is None:
        print("no runs found (no summary.json under the given dirs)")
        return 1
    for path in files.values():
        print(path)
    return 0
