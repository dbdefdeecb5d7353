#!/usr/bin/env python
"""Learning parity of the update paths: same seeds, same env settings, N iterations each.

GPU (issue 6, G1 Walk Flat at the H200 preset; about 10 min per run at that preset's size):
    python scripts/learning_parity.py --preset g1_walk_h200 --paths eager,compile,cudagraph \
        --seeds 1,2,3 --iterations 2000 --out parity_h200
CPU (the CI variant, tests/evaluation/test_learning_parity.py):
    python scripts/learning_parity.py --preset parity_cpu --paths eager,compile --seeds 1,2,3 \
        --iterations 24 --out parity_cpu
Runs made elsewhere (e.g. `python -m flashsac_bench -m +experiment=g1_walk_h200
path=compile,cudagraph run.seed=1,2,3`), analysed only:
    python scripts/learning_parity.py --analyze outputs/multirun/<date>/<time> --out parity_h200

Every run is composed exactly as `python -m flashsac_bench +experiment=<preset> path=<p>
run.seed=<s> run.iterations=<N> run.tensorboard=true [--override ...]` composes it (Hydra compose,
`to_config`, `runner.train`) into OUT/runs/<path>_s<seed>/; a complete run with the same
settings is reused (--fresh re-runs). Curves come from each run's summary.json `rows_all`
(reward/mean, mean episode length / return of the last 100 episodes, wall-clock) and its
TensorBoard `Reward/tracking_*` scalars (one point per run.log_every iterations; shown as the
fraction of the term's maximum weight * ctrl_dt).

Writes OUT/parity.json, OUT/parity.md and OUT/parity.png:
  * per-checkpoint mean ± 95% CI over seeds (Student t) of each metric, per path;
  * an exact (or Monte-Carlo) two-sided permutation test per pair of paths on the final values
    (mean over the last --final-window iterations). Primary: the final episode return, Bonferroni
    over the pairs; the other metrics count only below alpha / (all tests). With n seeds per path
    the smallest attainable p is 2 / C(2n, n) (0.1 at n = 3, 0.029 at 4, 0.008 at 5): too few
    seeds make the comparison undecidable, and the report says so instead of "not
    distinguishable";
  * same-seed lockstep divergence: the paths start from identical weights, replay contents and
    env states (warm-up iterations are checked to be bit-identical), so for the first
    --lockstep-horizon iterations the same-seed curves should differ only by floating-point
    reassociation amplified by the closed loop. Reported as max |A - B| over those iterations
    divided by the seed-to-seed spread of the reference path (mean |ref_s - ref_s'|);
  * time to the issue-6 thresholds (mean episode length >= 900, lin-vel tracking >= 80% of max).
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import math
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("learning_parity")

ROW_METRICS = ("reward_mean", "episode_length_mean", "episode_return_mean")
LOSS_METRICS = ("critic_loss", "actor_loss", "q_mean", "entropy")
TB_METRICS = {
    "tracking_lin_vel_frac": "tracking_lin_vel",
    "tracking_ang_vel_frac": "tracking_ang_vel",
}
CURVE_METRICS = (*ROW_METRICS, *TB_METRICS)
FINAL_METRICS = (
    "episode_return_mean",
    "episode_length_mean",
    "tracking_lin_vel_frac",
    "reward_mean",
)
PRIMARY_METRIC = "episode_return_mean"  # the permutation test that decides
LOCKSTEP_METRICS = ("reward_mean", "episode_return_mean", *LOSS_METRICS)
LABELS = {
    "reward_mean": "reward/mean (per env-step)",
    "episode_length_mean": "episode length (mean of last 100)",
    "episode_return_mean": "episode return (mean of last 100)",
    "tracking_lin_vel_frac": "lin-vel tracking (fraction of max)",
    "tracking_ang_vel_frac": "ang-vel tracking (fraction of max)",
}
PATH_ORDER = ("eager", "compile", "cudagraph")
# Student t quantiles t_{0.975, df} for df = 1..30 (beyond: 1.96 + 2.5 / df, within 0.002).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


# ---------------------------------------------------------------------------- statistics
def t975(df: int) -> float:
    if df < 1:
        raise ValueError("df must be >= 1")
    return _T975[df - 1] if df <= len(_T975) else 1.96 + 2.5 / df


def mean_ci(values: np.ndarray) -> dict[str, float | int | None]:
    """Mean and 95% CI half-width (Student t over the finite values; None below 2 values)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    n = len(v)
    if n == 0:
        return {"n": 0, "mean": None, "ci95": None}
    half = t975(n - 1) * v.std(ddof=1) / math.sqrt(n) if n > 1 else None
    return {"n": n, "mean": float(v.mean()), "ci95": None if half is None else float(half)}


def permutation_test(
    a: np.ndarray, b: np.ndarray, n_perm: int = 20_000, max_exact: int = 200_000, seed: int = 0
) -> dict[str, Any]:
    """Two-sided permutation test of mean(a) - mean(b) (exact when C(n, k) <= max_exact).

    p = fraction of relabelings whose |mean difference| is at least the observed one (the
    identity labeling included); Monte Carlo: (1 + hits) / (1 + n_perm).
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if len(a) == 0 or len(b) == 0:
        return {"p": None, "diff": None, "exact": None, "min_p": None, "n": [len(a), len(b)]}
    pooled = np.concatenate([a, b])
    n, k = len(pooled), len(a)
    observed = abs(a.mean() - b.mean())
    # Relative slack: identical labelings must count as "at least as extreme" despite rounding.
    tol = 1e-12 * max(1.0, float(np.abs(pooled).max()))
    total = math.comb(n, k)
    if total <= max_exact:
        hits = 0
        s = pooled.sum()
        for idx in itertools.combinations(range(n), k):
            sa = pooled[list(idx)].sum()
            if abs(sa / k - (s - sa) / (n - k)) >= observed - tol:
                hits += 1
        p, exact = hits / total, True
    else:
        rng = np.random.default_rng(seed)
        hits = 0
        for _ in range(n_perm):
            perm = rng.permutation(pooled)
            if abs(perm[:k].mean() - perm[k:].mean()) >= observed - tol:
                hits += 1
        p, exact = (1 + hits) / (1 + n_perm), False
    # The identity and its mirror (when k = n - k) are always as extreme as the observation.
    min_p = (2 if 2 * k == n else 1) / total
    return {
        "p": float(p),
        "diff": float(a.mean() - b.mean()),
        "exact": exact,
        "min_p": float(min_p),
        "n": [len(a), len(b)],
    }


# ---------------------------------------------------------------------------- run data
@dataclass
class RunData:
    run_dir: Path
    path: str
    seed: int
    iterations: int
    num_envs: int
    series: dict[str, np.ndarray]  # metric -> [iterations] float, NaN where not recorded
    time_s: np.ndarray  # loop wall-clock at the end of each iteration
    first_learning: int | None
    startup_s: float
    summary: dict[str, Any] = field(repr=False, default_factory=dict)
    # complete / interrupted / failed / stale (writer gone while "running"), runner.liveness
    status: str = "unknown"
    last_checkpoint: str | None = None

    @property
    def name(self) -> str:
        return f"{self.path}_s{self.seed}"


def load_run(run_dir: Path) -> RunData:
    from flashsac_bench.runner.liveness import run_state

    s = json.loads((run_dir / "summary.json").read_text())
    state = run_state(run_dir, s)
    if state["status"] != "complete":
        log.warning(
            "%s is %s (%s); analysed as far as it got, last checkpoint %s",
            run_dir,
            state["status"],
            state["detail"] or s.get("incomplete_reason"),
            state["last_checkpoint"],
        )
    rows = s["rows_all"]
    tc = s.get("training_config", {})
    n = len(rows)
    its = np.array([r["iteration"] for r in rows], dtype=np.int64)
    if n and not np.array_equal(its, np.arange(its[0], its[0] + n)):
        raise ValueError(f"{run_dir}: rows_all iterations are not consecutive")
    series: dict[str, np.ndarray] = {}
    for key in (*ROW_METRICS, *LOSS_METRICS):
        series[key] = np.array([_num(r.get(key)) for r in rows], dtype=np.float64)
    task = (s.get("config") or {}).get("task", {})
    ctrl_dt = float(task.get("ctrl_dt", 0.02))
    weights = task.get("rewards", {})
    scalars = _read_tb(run_dir / "tb", [f"Reward/{t}" for t in TB_METRICS.values()])
    for name, term in TB_METRICS.items():
        top = float(weights.get(term, 0.0)) * ctrl_dt
        arr = np.full(n, np.nan)
        for step, value in scalars.get(f"Reward/{term}", []):
            if 0 <= step < n and top:
                arr[step] = value / top
        series[name] = arr
    startup = s.get("startup") or {}
    return RunData(
        run_dir=run_dir,
        path=str(tc.get("path")),
        seed=int(tc.get("seed", -1)),
        iterations=n,
        num_envs=int(tc.get("num_envs", 0)),
        series=series,
        time_s=np.array([_num(r.get("time_s")) for r in rows], dtype=np.float64),
        first_learning=s.get("first_learning_iteration"),
        startup_s=float(sum(v for v in startup.values() if isinstance(v, int | float))),
        summary=s,
        status=state["status"],
        last_checkpoint=state["last_checkpoint"],
    )


def _num(x: Any) -> float:
    return float(x) if isinstance(x, int | float) and x is not None else math.nan


def _read_tb(tb_dir: Path, tags: list[str]) -> dict[str, list[tuple[int, float]]]:
    if not tb_dir.is_dir():
        return {}
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tb_dir), size_guidance={"scalars": 0})
    acc.Reload()
    have = set(acc.Tags().get("scalars", []))
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in tags if t in have}


# ---------------------------------------------------------------------------- analysis
def group_runs(runs: list[RunData]) -> dict[str, dict[int, RunData]]:
    grouped: dict[str, dict[int, RunData]] = {}
    for r in runs:
        if r.seed in grouped.setdefault(r.path, {}):
            raise ValueError(f"two runs of path {r.path} with seed {r.seed}")
        grouped[r.path][r.seed] = r
    order = {p: i for i, p in enumerate(PATH_ORDER)}
    return dict(sorted(grouped.items(), key=lambda kv: order.get(kv[0], len(order))))


def final_value(run: RunData, metric: str, window: int) -> float:
    v = run.series[metric][-window:]
    v = v[np.isfinite(v)]
    return float(v.mean()) if len(v) else math.nan


def checkpoint_table(
    grouped: dict[str, dict[int, RunData]], iterations: int, checkpoints: int
) -> list[dict[str, Any]]:
    """Block means: checkpoint j = mean over iterations [j*B, (j+1)*B) of each run, then mean
    ± 95% CI over the seeds of each path."""
    block = max(1, math.ceil(iterations / checkpoints))
    rows = []
    for start in range(0, iterations, block):
        stop = min(start + block, iterations)
        row: dict[str, Any] = {"iterations": [start, stop - 1]}
        for metric in CURVE_METRICS:
            row[metric] = {}
            for path, runs in grouped.items():
                vals = []
                for r in runs.values():
                    seg = r.series[metric][start:stop]
                    seg = seg[np.isfinite(seg)]
                    vals.append(seg.mean() if len(seg) else math.nan)
                row[metric][path] = mean_ci(np.array(vals))
        rows.append(row)
    return rows


def lockstep_divergence(
    grouped: dict[str, dict[int, RunData]], horizon: int, reference: str | None = None
) -> dict[str, Any]:
    """Same-seed divergence of every path from the reference path over iterations < horizon."""
    paths = list(grouped)
    ref = reference or paths[0]
    ref_runs = grouped[ref]
    seeds = sorted(ref_runs)
    scale: dict[str, float] = {}
    for m in LOCKSTEP_METRICS:
        diffs = [
            _nanmean(np.abs(ref_runs[a].series[m][:horizon] - ref_runs[b].series[m][:horizon]))
            for a, b in itertools.combinations(seeds, 2)
        ]
        diffs = [d for d in diffs if math.isfinite(d)]
        scale[m] = float(np.mean(diffs)) if diffs else math.nan
    out: dict[str, Any] = {"reference": ref, "horizon": horizon, "seed_spread": scale, "pairs": []}
    for path in paths:
        if path == ref:
            continue
        pair: dict[str, Any] = {"path": path, "seeds": {}}
        for seed in sorted(set(seeds) & set(grouped[path])):
            a, b = grouped[path][seed], ref_runs[seed]
            per: dict[str, Any] = {}
            identical = True
            for m in LOCKSTEP_METRICS:
                x, y = a.series[m][:horizon], b.series[m][:horizon]
                same = np.array_equal(x, y, equal_nan=True)
                identical &= same
                d = np.abs(x - y)
                d = d[np.isfinite(d)]
                worst = float(d.max()) if len(d) else math.nan
                per[m] = {
                    "max_abs": worst,
                    "rel_to_seed_spread": worst / scale[m] if scale[m] > 0 else math.nan,
                    "identical": bool(same),
                }
            warm = _warmup_identical(a, b)
            rels = [v["rel_to_seed_spread"] for v in per.values()]
            rels = [r for r in rels if math.isfinite(r)]
            pair["seeds"][seed] = {
                "metrics": per,
                "max_rel": max(rels) if rels else math.nan,
                "identical": bool(identical),
                "warmup_identical": warm,
            }
        vals = [v["max_rel"] for v in pair["seeds"].values() if math.isfinite(v["max_rel"])]
        pair["max_rel"] = max(vals) if vals else math.nan
        out["pairs"].append(pair)
    return out


def _warmup_identical(a: RunData, b: RunData) -> bool | None:
    """Rows up to and including the first learning iteration (random actions, then the
    untouched initial actor) must be bit-identical between two runs of one seed."""
    if a.first_learning is None or b.first_learning is None:
        return None
    if a.first_learning != b.first_learning:
        return False
    k = a.first_learning + 1
    return bool(np.array_equal(a.series["reward_mean"][:k], b.series["reward_mean"][:k]))


def _nanmean(x: np.ndarray) -> float:
    x = x[np.isfinite(x)]
    return float(x.mean()) if len(x) else math.nan


def time_to_threshold(run: RunData, length: float, tracking: float) -> dict[str, Any]:
    """First iteration with mean episode length >= length and (last logged) lin-vel tracking
    fraction >= tracking."""
    lengths = run.series["episode_length_mean"]
    track = _ffill(run.series["tracking_lin_vel_frac"])
    hit = np.flatnonzero((lengths >= length) & (track >= tracking))
    if not len(hit):
        return {"reached": False}
    k = int(hit[0])
    return {
        "reached": True,
        "iteration": k,
        "env_steps": (k + 1) * run.num_envs,
        "loop_s": float(run.time_s[k]),
        # Runner start to the threshold: env build + learner build + compile/capture + loop.
        "since_start_s": float(run.startup_s + run.time_s[k]),
    }


def _ffill(x: np.ndarray) -> np.ndarray:
    out = x.copy()
    last = math.nan
    for i, v in enumerate(out):
        if math.isfinite(v):
            last = v
        else:
            out[i] = last
    return out


def analyze(runs: list[RunData], args: argparse.Namespace) -> dict[str, Any]:
    grouped = group_runs(runs)
    iterations = min(r.iterations for r in runs)
    window = args.final_window or max(1, iterations // 10)
    finals = {
        m: {p: {s: final_value(r, m, window) for s, r in rs.items()} for p, rs in grouped.items()}
        for m in FINAL_METRICS
    }
    final_stats = {
        m: {p: mean_ci(np.array(list(v.values()))) for p, v in by_path.items()}
        for m, by_path in finals.items()
    }
    tests = []
    for (pa, ra), (pb, rb) in itertools.combinations(grouped.items(), 2):
        for m in FINAL_METRICS:
            res = permutation_test(
                np.array([finals[m][pa][s] for s in ra]),
                np.array([finals[m][pb][s] for s in rb]),
                n_perm=args.permutations,
            )
            tests.append({"pair": [pa, pb], "metric": m, **res})
    verdict = _verdict(tests, args.alpha, len(grouped))
    thresholds = {
        r.name: time_to_threshold(r, args.length_threshold, args.tracking_threshold)
        for rs in grouped.values()
        for r in rs.values()
    }
    perf = {
        p: {
            key: mean_ci(np.array([_stat(r.summary, key) for r in rs.values()]))
            for key in ("cold_start_s", "iter_ms", "learner_train_ms", "collector_cycle_ms")
        }
        for p, rs in grouped.items()
    }
    return {
        "paths": list(grouped),
        "seeds": {p: sorted(rs) for p, rs in grouped.items()},
        "iterations": iterations,
        "final_window": window,
        "final_values": finals,
        "final_stats": final_stats,
        "tests": tests,
        "alpha": args.alpha,
        "primary_metric": PRIMARY_METRIC,
        "verdict": verdict,
        "checkpoints": checkpoint_table(grouped, iterations, args.checkpoints),
        "lockstep": lockstep_divergence(grouped, min(args.lockstep_horizon, iterations)),
        "time_to_threshold": {
            "episode_length": args.length_threshold,
            "lin_vel_tracking_frac": args.tracking_threshold,
            "runs": thresholds,
        },
        "performance": perf,
        "runs": {r.name: str(r.run_dir) for rs in grouped.values() for r in rs.values()},
        "run_status": {
            r.name: {"status": r.status, "last_checkpoint": r.last_checkpoint}
            for rs in grouped.values()
            for r in rs.values()
        },
    }


def _stat(summary: dict[str, Any], key: str) -> float:
    """cold_start_s, or the median of a timing block of summary.json."""
    value = summary.get(key)
    return _num(value.get("median") if isinstance(value, dict) else value)


def _verdict(tests: list[dict[str, Any]], alpha: float, n_paths: int) -> dict[str, Any]:
    """Primary: final episode return, Bonferroni over the pairs of paths. Secondary metrics
    count as a difference only below alpha / (all tests)."""
    primary = [t for t in tests if t["metric"] == PRIMARY_METRIC]
    thr = alpha / max(1, len(primary))
    thr_all = alpha / max(1, len(tests))
    decidable = [t for t in primary if t["min_p"] is not None and t["min_p"] < thr]
    hits = [t for t in primary if t["p"] is not None and t["p"] < thr]
    secondary = [
        t
        for t in tests
        if t["metric"] != PRIMARY_METRIC and t["p"] is not None and t["p"] < thr_all
    ]
    if hits:
        text = "distinguishable on the final return: " + "; ".join(
            f"{' vs '.join(t['pair'])} (p={t['p']:.3g})" for t in hits
        )
    elif len(decidable) < len(primary) or not primary:
        smallest = max((t["min_p"] for t in primary if t["min_p"] is not None), default=None)
        text = (
            f"undecidable with these seed counts: the smallest attainable p ({_g(smallest)}) is "
            f"not below alpha / pairs = {thr:.3g} (n >= 4 seeds per path for one pair, >= 5 "
            "for three pairs at alpha 0.05)"
        )
    else:
        text = f"not distinguishable on the final return at alpha={alpha} (Bonferroni over pairs)"
    if secondary:
        text += "; secondary differences: " + "; ".join(
            f"{' vs '.join(t['pair'])} on {t['metric']} (p={t['p']:.3g})" for t in secondary
        )
    return {
        "text": text,
        "distinguishable": bool(hits) or bool(secondary),
        "decidable": bool(primary) and len(decidable) == len(primary),
        "threshold_primary": thr,
        "threshold_secondary": thr_all,
        "paths": n_paths,
    }


def _g(x: float | None, digits: int = 3) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.{digits}g}"


def _mc(stat: dict[str, Any], digits: int = 3) -> str:
    if stat.get("mean") is None:
        return "-"
    ci = stat.get("ci95")
    return f"{stat['mean']:.{digits}g}" + ("" if ci is None else f" ± {ci:.2g}")


# ---------------------------------------------------------------------------- outputs
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
        lines.append(f"| {m} | " + " | ".join(_mc(by_path[p]) for p in paths) + " |")
    lines += [
        "",
        "## Permutation tests on the final values (two-sided)",
        "",
        "| pair | metric | diff (A - B) | p | exact | smallest attainable p |",
        "|---|---|---:|---:|---|---:|",
    ]
    for t in report["tests"]:
        lines.append(
            f"| {' vs '.join(t['pair'])} | {t['metric']} | {_g(t['diff'])} | {_g(t['p'])} | "
            f"{t['exact']} | {_g(t['min_p'])} |"
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
            cells = [_g(v["metrics"][m]["rel_to_seed_spread"], 2) for m in LOCKSTEP_METRICS]
            lines.append(
                f"| {pair['path']} | {seed} | {_g(v['max_rel'], 2)} | {v['identical']} | "
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
        lines.append(f"| {p} | " + " | ".join(_mc(v[k]) for k in keys) + " |")
    lines += ["", "## Checkpoints (block means; mean ± 95% CI over seeds)", ""]
    for m in CURVE_METRICS:
        lines += [f"### {m}", "", "| iterations | " + " | ".join(paths) + " |"]
        lines.append("|---|" + "---:|" * len(paths))
        for row in report["checkpoints"]:
            a, b = row["iterations"]
            lines.append(f"| {a}-{b} | " + " | ".join(_mc(row[m][p]) for p in paths) + " |")
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


# ---------------------------------------------------------------------------- running
def run_grid(args: argparse.Namespace, out: Path) -> list[Path]:
    """Compose and run every (seed, path) through the runner, seed-major (so a partial grid is
    balanced); reuse complete runs of the same settings unless --fresh."""
    from hydra import compose, initialize_config_module

    from flashsac_bench.config import register_configs, to_config
    from flashsac_bench.runner import train

    register_configs()
    dirs = []
    with initialize_config_module(config_module="flashsac_bench.conf", version_base="1.3"):
        for seed in args.seeds:
            for path in args.paths:
                run_dir = out / "runs" / f"{path}_s{seed}"
                overrides = [
                    *([f"+experiment={args.preset}"] if args.preset else []),
                    f"path={path}",
                    f"run.seed={seed}",
                    f"run.iterations={args.iterations}",
                    "run.tensorboard=true",
                    *args.override,
                ]
                dirs.append(run_dir)
                if not args.fresh and _reusable(run_dir, overrides):
                    log.info("reusing %s", run_dir)
                    continue
                cfg = compose(config_name="config", overrides=overrides)
                config = to_config(cfg)
                log.info("run %s: %s", run_dir.name, " ".join(overrides))
                t = time.perf_counter()
                train(config, cfg, run_dir=run_dir)
                (run_dir / "parity_overrides.json").write_text(json.dumps(overrides) + "\n")
                log.info("run %s done in %.1f s", run_dir.name, time.perf_counter() - t)
    return dirs


def _reusable(run_dir: Path, overrides: list[str]) -> bool:
    try:
        done = json.loads((run_dir / "summary.json").read_text()).get("complete")
        same = json.loads((run_dir / "parity_overrides.json").read_text()) == overrides
    except (OSError, json.JSONDecodeError):
        return False
    return bool(done and same)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--preset", default="g1_walk_h200", help="experiment preset ('' for none)")
    ap.add_argument("--paths", default=None, help="default: eager,compile (+cudagraph on CUDA)")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--override", action="append", default=[], help="extra Hydra override")
    ap.add_argument("--out", type=Path, default=Path("parity"))
    ap.add_argument("--analyze", nargs="+", type=Path, default=None, help="run dirs or sweeps")
    ap.add_argument("--fresh", action="store_true", help="re-run complete runs too")
    ap.add_argument("--checkpoints", type=int, default=10, help="blocks in the table")
    ap.add_argument("--final-window", type=int, default=0, help="default: iterations // 10")
    ap.add_argument("--lockstep-horizon", type=int, default=24)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--permutations", type=int, default=20_000)
    ap.add_argument("--length-threshold", type=float, default=900.0)
    ap.add_argument("--tracking-threshold", type=float, default=0.8)
    ap.add_argument("--smooth", type=int, default=0, help="plot smoothing (iterations)")
    args = ap.parse_args(argv)
    args.seeds = [int(s) for s in str(args.seeds).split(",") if s]
    if args.paths is None:
        import torch

        args.paths = "eager,compile" + (",cudagraph" if torch.cuda.is_available() else "")
    args.paths = [p for p in args.paths.split(",") if p]
    args.preset = args.preset or None
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("tensorboard").setLevel(logging.WARNING)  # event-file reader chatter
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.analyze:
        from flashsac_bench.runner.compare import find_run_dirs

        try:
            dirs = find_run_dirs(args.analyze)
        except FileNotFoundError as err:
            print(f"scripts/learning_parity.py: {err}", file=sys.stderr)
            return 2
    else:
        dirs = run_grid(args, out)
    runs = [load_run(d) for d in dirs]
    report = analyze(runs, args)
    header = {
        "command": " ".join(["python", "scripts/learning_parity.py", *(argv or sys.argv[1:])]),
        "preset": args.preset if not args.analyze else None,
        "overrides": args.override,
        "analyzed": [str(p) for p in args.analyze] if args.analyze else None,
    }
    from flashsac_bench.runner.summary import atomic_write_text, write_json

    write_json(out / "parity.json", {"header": header, **report})
    atomic_write_text(out / "parity.md", markdown(report, header))
    plot(group_runs(runs), out / "parity.png", args)
    print(f"verdict: {report['verdict']['text']}")
    for pair in report["lockstep"]["pairs"]:
        print(
            f"lockstep {pair['path']} vs {report['lockstep']['reference']} (first "
            f"{report['lockstep']['horizon']} iterations): max {_g(pair['max_rel'], 2)} of the "
            "seed-to-seed spread"
        )
    print(f"wrote {out / 'parity.md'}, {out / 'parity.json'}, {out / 'parity.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
