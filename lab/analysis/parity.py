"""Learning parity of the update paths: the analysis of a grid of runs (same seeds, same env
settings) and its report, OUT/parity.json / .md / .png.

scripts/learning_parity.py's docstring (and docs/learning_parity.md) says what each part of the
report measures: per-checkpoint mean ± 95% CI over seeds, permutation tests on the final values
(primary: the final episode return, Bonferroni over the pairs), same-seed lockstep divergence
relative to the seed-to-seed spread, and the time to the walking thresholds.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from typing import Any

import numpy as np

from lab.analysis.parity_report import fmt, markdown, plot
from lab.analysis.parity_runs import (
    CURVE_METRICS,
    FINAL_METRICS,
    LOCKSTEP_METRICS,
    PRIMARY_METRIC,
    RunData,
    group_runs,
    load_run,
    num,
    run_grid,
)
from lab.analysis.parity_stats import mean_ci, permutation_test


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
    decision = verdict(tests, args.alpha, len(grouped))
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
        "verdict": decision,
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
    return num(value.get("median") if isinstance(value, dict) else value)


def verdict(tests: list[dict[str, Any]], alpha: float, n_paths: int) -> dict[str, Any]:
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
            f"undecidable with these seed counts: the smallest attainable p ({fmt(smallest)}) is "
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


def run_parity(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    """Run (or, with --analyze, only read) the grid and write the report; `args` is
    scripts/learning_parity.py's command line, `argv` what the report's header quotes."""
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.analyze:
        from flashsac_bench.analysis.compare import find_run_dirs

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
    from flashsac_bench.runner.summary import write_json
    from flashsac_bench.runner.writes import atomic_write_text

    write_json(out / "parity.json", {"header": header, **report})
    atomic_write_text(out / "parity.md", markdown(report, header))
    plot(group_runs(runs), out / "parity.png", args)
    print(f"verdict: {report['verdict']['text']}")
    for pair in report["lockstep"]["pairs"]:
        print(
            f"lockstep {pair['path']} vs {report['lockstep']['reference']} (first "
            f"{report['lockstep']['horizon']} iterations): max {fmt(pair['max_rel'], 2)} of the "
            "seed-to-seed spread"
        )
    print(f"wrote {out / 'parity.md'}, {out / 'parity.json'}, {out / 'parity.png'}")
    return 0
