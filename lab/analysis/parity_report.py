"""parity.md and parity.png of a learning-parity report."""

from __future__ import annotations

import argparse
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from lab.analysis.parity_runs import CURVE_METRICS, LABELS, LOCKSTEP_METRICS, RunData


def fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.{digits}g}"


def fmt_ci(stat: dict[str, Any], digits: int = 3) -> str:
    if stat.get("mean") is None:
        return "-"
    ci = stat.get("ci95")
    return f"{stat['mean']:.{digits}g}" + ("" if ci is None else f" ± {ci:.2g}")


def markdown(report: dict[str, Any], header: dict[str, Any]) -> str:
    paths = report["paths"]
    lines = [
        "# Learning parity",
        "",
        f"- command: `{header.get('command', '')}`",
        f"- preset: {header.get('preset')}, overrides: {header.get('overrides') or '-'}",
        f"- iterations: {report['iterations']}, seeds: {report['seeds']}",
        f"- final values: mean over the last {report['final_window']} iterations",
        f"- **verdict** (primary: final {report['primary_metric']}): {report['verdict']['text']}",
        *[
            f"- **{name} is {v['status']}** (not complete; last checkpoint {v['last_checkpoint']})"
            for name, v in report.get("run_status", {}).items()
            if v["status"] != "complete"
        ],
        "",
        "## Final values (mean ± 95% CI over seeds)",
        "",
        "| metric | " + " | ".join(paths) + " |",
        "|---|" + "---:|" * len(paths),
    ]
    for m, by_path in report["final_stats"].items():
        lines.append(f"| {m} | " + " | ".join(fmt_ci(by_path[p]) for p in paths) + " |")
    lines += [
        "",
        "## Permutation tests on the final values (two-sided)",
        "",
        "| pair | metric | diff (A - B) | p | exact | smallest attainable p |",
        "|---|---|---:|---:|---|---:|",
    ]
    for t in report["tests"]:
        lines.append(
            f"| {' vs '.join(t['pair'])} | {t['metric']} | {fmt(t['diff'])} | {fmt(t['p'])} | "
            f"{t['exact']} | {fmt(t['min_p'])} |"
        )
    ls = report["lockstep"]
    lines += [
        "",
        f"## Same-seed lockstep divergence (iterations < {ls['horizon']}, vs {ls['reference']})",
        "",
        "max |path - reference| over those iterations / mean seed-to-seed difference of the "
        "reference; warm-up = rows up to the first learning iteration bit-identical.",
        "",
        "| path | seed | max rel. | identical | warm-up identical | "
        + " | ".join(LOCKSTEP_METRICS)
        + " |",
        "|---|---:|---:|---|---|" + "---:|" * len(LOCKSTEP_METRICS),
    ]
    for pair in ls["pairs"]:
        for seed, v in pair["seeds"].items():
            cells = [fmt(v["metrics"][m]["rel_to_seed_spread"], 2) for m in LOCKSTEP_METRICS]
            lines.append(
                f"| {pair['path']} | {seed} | {fmt(v['max_rel'], 2)} | {v['identical']} | "
                f"{v['warmup_identical']} | " + " | ".join(cells) + " |"
            )
    tt = report["time_to_threshold"]
    lines += [
        "",
        f"## Time to episode length >= {tt['episode_length']:g} and lin-vel tracking >= "
        f"{100 * tt['lin_vel_tracking_frac']:g}% of max",
        "",
        "| run | reached | iteration | env steps | loop s | since runner start s |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, v in tt["runs"].items():
        if v["reached"]:
            lines.append(
                f"| {name} | yes | {v['iteration']} | {v['env_steps']:,} | {v['loop_s']:.1f} | "
                f"{v['since_start_s']:.1f} |"
            )
        else:
            lines.append(f"| {name} | no | - | - | - | - |")
    lines += ["", "## Speed (mean over seeds of each run's median)", ""]
    lines += [
        "| path | cold start s | iter ms | learner ms | collector ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for p, v in report["performance"].items():
        keys = ("cold_start_s", "iter_ms", "learner_train_ms", "collector_cycle_ms")
        lines.append(f"| {p} | " + " | ".join(fmt_ci(v[k]) for k in keys) + " |")
    lines += ["", "## Checkpoints (block means; mean ± 95% CI over seeds)", ""]
    for m in CURVE_METRICS:
        lines += [f"### {m}", "", "| iterations | " + " | ".join(paths) + " |"]
        lines.append("|---|" + "---:|" * len(paths))
        for row in report["checkpoints"]:
            a, b = row["iterations"]
            lines.append(f"| {a}-{b} | " + " | ".join(fmt_ci(row[m][p]) for p in paths) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


def plot(grouped: dict[str, dict[int, RunData]], path: Path, args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = ("reward_mean", "episode_length_mean", "tracking_lin_vel_frac")
    fig, axes = plt.subplots(2, 3, figsize=(15, 8), squeeze=False)
    colors = {"eager": "tab:blue", "compile": "tab:orange", "cudagraph": "tab:green"}
    n_iter = min(r.iterations for rs in grouped.values() for r in rs.values())
    smooth = args.smooth or max(1, n_iter // 50)
    for p, rs in grouped.items():
        color = colors.get(p, None)
        curves = {
            m: np.stack([_smooth(r.series[m][:n_iter], smooth) for r in rs.values()])
            for m in metrics
        }
        times = np.stack([r.time_s[:n_iter] for r in rs.values()])
        its = np.arange(n_iter)
        for j, m in enumerate(metrics):
            for row_i, x_all in enumerate((np.broadcast_to(its, times.shape), times)):
                ax = axes[row_i][j]
                for k in range(len(rs)):
                    ok = np.isfinite(curves[m][k])
                    ax.plot(x_all[k][ok], curves[m][k][ok], color=color, alpha=0.25, lw=0.8)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
                    mean = np.nanmean(curves[m], axis=0)
                    x = np.nanmean(x_all, axis=0)
                ok = np.isfinite(mean) & np.isfinite(x)
                ax.plot(x[ok], mean[ok], color=color, lw=2, label=f"{p} (n={len(rs)})")
    for j, m in enumerate(metrics):
        for row_i, xlabel in enumerate(("iteration", "wall-clock s (training loop)")):
            ax = axes[row_i][j]
            ax.set_xlabel(xlabel)
            ax.set_ylabel(LABELS[m])
            ax.grid(alpha=0.3)
            if m == "episode_length_mean":
                ax.axhline(args.length_threshold, color="k", ls=":", lw=1)
            if m == "tracking_lin_vel_frac":
                ax.axhline(args.tracking_threshold, color="k", ls=":", lw=1)
    axes[0][0].legend(loc="best", fontsize=8)
    fig.suptitle(f"Learning parity (thin: seeds, thick: mean; smoothing {smooth} iterations)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _smooth(x: np.ndarray, k: int) -> np.ndarray:
    """Trailing mean over the last k finite values (NaN where none)."""
    if k <= 1:
        return x
    ok = np.isfinite(x)
    c = np.concatenate([[0.0], np.cumsum(np.where(ok, x, 0.0))])
    n = np.concatenate([[0], np.cumsum(ok)])
    idx = np.arange(1, len(x) + 1)
    lo = np.maximum(idx - k, 0)
    cnt = n[idx] - n[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (c[idx] - c[lo]) / cnt
    out[cnt == 0] = np.nan
    return out
