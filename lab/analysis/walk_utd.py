"""Time to walk per setting: one record per run, a table per setting and a plot.

A run is a `+experiment=g1_walk_h200` / `g1_walk_fast` run dir (usually with
`run.stop_at_walk=true`, scripts/device/walk_utd.sh); its setting is what training_config says
ran: updates per iteration, envs, path, env workers. The thresholds are config.run's WALK_*.

Every run counts. A run that stopped before the thresholds did not walk within the seconds it
ran ("not within T s"); in a median it sorts after every run that walked (as +infinity), so a
setting whose median run did not walk has no median time, only "> T". A median over the runs
that walked alone would report the lucky seeds.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from flashsac_bench.config.run import WALK_EPISODE_LENGTH, WALK_TRACKING_FRAC
from lab.analysis.parity import time_to_threshold
from lab.analysis.parity_runs import RunData, load_run


def walk_record(run: RunData) -> dict[str, Any]:
    """What one run says about time to walk (times in s since the runner started)."""
    s, tc = run.summary, run.summary.get("training_config", {})
    hit = time_to_threshold(run, WALK_EPISODE_LENGTH, WALK_TRACKING_FRAC)
    if not hit["reached"]:
        # how long it ran without walking, on the since-start clock that time to walk uses
        ran = run.time_s[np.isfinite(run.time_s)]
        hit["not_within_s"] = round(run.startup_s + float(ran[-1]), 1) if len(ran) else None
    tracking = run.series["tracking_lin_vel_frac"]
    logged = tracking[np.isfinite(tracking)]
    startup = s.get("startup") or {}
    return {
        "run": run.run_dir.name,
        "updates_per_step": int(tc.get("updates_per_step", 0)),
        "num_envs": int(tc.get("num_envs", 0)),
        "actor_updates_per_iteration": tc.get("actor_updates_per_iteration"),
        "seed": run.seed,
        # what really ran: a recorded executor other than the path (a capture fallback, the
        # eager steps of a removed lever) or a lever that was on is a setting of its own, not a
        # seed of the path; so is another batch or learning rate (a sweep's points)
        "path": path_label(tc, run.path) + learner_label(s),
        # env worker processes (0: in-process): a setting of its own, e.g. a 15 vs 16 A/B
        "env_workers": int(tc.get("env_workers") or 0),
        **hit,
        "setup_s": round(run.startup_s, 2),
        "cold_start_s": round(float(startup.get("cold_start_s", float("nan"))), 2),
        # since start at the end of the first learning iteration: the setup and the
        # random-action iterations, apart from the loop's host noise that the time to walk
        # also carries
        "learning_since_start_s": _learning_since_start(run),
        # the timed setup parts, and what a random-action iteration took
        "startup": {k: round(v, 2) for k, v in startup.items() if isinstance(v, int | float)},
        "random_iter_ms_mean": _random_iter_ms(s),
        "final_tracking_lin_vel_frac": float(logged[-1]) if len(logged) else None,
        "iter_ms_median": (s.get("iter_ms") or {}).get("median"),
        "learner_train_ms_median": (s.get("learner_train_ms") or {}).get("median"),
        "collector_cycle_ms_median": (s.get("collector_cycle_ms") or {}).get("median"),
        # MuJoCo's share of the collector: tells a slower host from a slower program
        "env_step_ms_median": ((s.get("extra_timings") or {}).get("env_step_ms") or {}).get(
            "median"
        ),
        "iterations_done": s.get("iterations_done"),
        "stopped_by": s.get("stopped_by"),
        # a walk trained in segments: time_s runs on across them, setup_s is the last segment's
        "resumed_from": s.get("resumed_from"),
    }


def _learning_since_start(run: RunData) -> float | None:
    rows = run.summary.get("rows_all") or [{"iteration": 0}]
    k = None if run.first_learning is None else run.first_learning - rows[0]["iteration"]
    if k is None or not 0 <= k < len(run.time_s) or not np.isfinite(run.time_s[k]):
        return None
    return round(run.startup_s + float(run.time_s[k]), 2)


def _random_iter_ms(summary: dict[str, Any]) -> float | None:
    ms = [r["iter_ms"] for r in summary.get("rows_all", []) if not r.get("learning")]
    ms = [float(x) for x in ms if isinstance(x, int | float)]
    return round(statistics.mean(ms), 1) if ms else None


# Levers a recorded walk may have had on (training_config key, label; docs/paths.md lists the
# removed ones): each one on makes its own setting, also where it leaves every number as it
# was (a same-seed A/B then differs only in time), so no such run is a seed of the default.
LEVERS = (
    ("prefill_iterations", "prefill"),
    ("aligned_layout", "aligned_layout"),
    ("overlap_store", "overlap_store"),
)


def path_label(tc: dict[str, Any], path: str) -> str:
    """The executor that ran the cycle, then every lever that was on: "cudagraph + prefill".
    Recorded runs of removed levers keep their own settings apart from the default's."""
    levers = [label for key, label in LEVERS if tc.get(key)]
    if tc.get("collector") == "inline":
        levers.append("inline tick")
    return " + ".join([str(tc.get("executor") or path), *levers])


def learner_label(summary: dict[str, Any]) -> str:
    """ ", batch 2048, lr 0.0003": the batch and peak learning rate a run trained with, where
    its summary records them."""
    batch = (summary.get("training_config") or {}).get("batch_size")
    lr = ((summary.get("config") or {}).get("learner") or {}).get("lr_peak")
    label = f", batch {batch}" if batch else ""
    return label + (f", lr {lr:.3g}" if isinstance(lr, int | float) else "")


@dataclass(frozen=True)
class WalkMedian:
    """Time to walk over all runs of a setting; a run that did not walk sorts last."""

    n: int
    walked: int
    median_s: float | None  # None: the median run did not walk (then only "> limit_s")
    low_s: float | None  # the fastest run that walked
    high_s: float | None  # the slowest run that walked
    limits_s: tuple[float, ...]  # "not within T s" of each run that did not walk

    def text(self) -> str:
        """E.g. "55.9 s [36.4-72.0], n=21" or "110.6 s [95.4-149.9; 2 of 14 not within
        120.0/175.0], n=14"; "> 120.0 s [...]" where the median run did not walk; "828.1 s,
        n=1" for one run."""
        known = sorted({t for t in self.limits_s if math.isfinite(t)})
        limits = "/".join(_s(t) for t in known) or "?"
        if not self.walked:
            return f"not within {limits} s, n={self.n}"
        median = (
            _s(self.median_s) if self.median_s is not None else f"> {_s(min(known, default=None))}"
        )
        if self.n == 1:
            return f"{median} s, n=1"
        spread = f"{_s(self.low_s)}-{_s(self.high_s)}"
        if self.limits_s:
            spread += f"; {len(self.limits_s)} of {self.n} not within {limits}"
        return f"{median} s [{spread}], n={self.n}"


def _s(x: float | None) -> str:
    return "?" if x is None or not math.isfinite(x) else f"{x:.1f}"


def walk_median(times: list[float | None], limits: list[float | None] | None = None) -> WalkMedian:
    """times[i]: seconds to walk, None where run i did not walk within limits[i] seconds."""
    limits = limits or [None] * len(times)
    hit = [t for t in times if t is not None]
    failed = tuple(
        math.nan if t is None else float(t) for w, t in zip(times, limits, strict=True) if w is None
    )
    median = _median([math.inf if t is None else t for t in times])
    return WalkMedian(
        n=len(times),
        walked=len(hit),
        median_s=median if median is not None and math.isfinite(median) else None,
        low_s=min(hit, default=None),
        high_s=max(hit, default=None),
        limits_s=failed,
    )


def _median(values: list[float]) -> float | None:
    """Median where inf (a run that did not get there) sorts last; inf when it is the middle."""
    return statistics.median(values) if values else None


def _setting(r: dict[str, Any]) -> tuple[int, int, str, int]:
    return (
        r["updates_per_step"],
        r.get("num_envs", 0),
        str(r.get("path") or ""),
        int(r.get("env_workers") or 0),
    )


def setting_table(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (updates_per_step, num_envs, path, env_workers): its seeds, how many walked
    and medians over all of them, a seed that did not walk counting as the slowest (inf)."""
    rows = []
    for ups, envs, path, workers in sorted({_setting(r) for r in records}):
        rs = [r for r in records if _setting(r) == (ups, envs, path, workers)]
        hit = [r for r in rs if r.get("reached")]

        def over_all(key: str, rs: list[dict[str, Any]] = rs) -> float | None:
            return _median([r[key] if r.get("reached") else math.inf for r in rs])

        walk = walk_median(
            [r["since_start_s"] if r.get("reached") else None for r in rs],
            [None if r.get("reached") else r.get("not_within_s") for r in rs],
        )
        rows.append(
            {
                "updates_per_step": ups,
                "num_envs": envs,
                "path": path,
                "env_workers": workers,
                "seeds": sorted(r["seed"] for r in rs),
                "walked": len(hit),
                "iterations_median": over_all("iteration"),
                "loop_s_median": over_all("loop_s"),
                "since_start_s_median": walk.median_s,
                "since_start": walk.text(),
                "since_start_s": {r["seed"]: round(r["since_start_s"], 1) for r in hit},
                "iter_ms_median": _median([r["iter_ms_median"] for r in rs if r["iter_ms_median"]]),
                "learner_train_ms_median": _median(
                    [r["learner_train_ms_median"] for r in rs if r["learner_train_ms_median"]]
                ),
                "final_tracking_median": _median(
                    [
                        r["final_tracking_lin_vel_frac"]
                        for r in rs
                        if r["final_tracking_lin_vel_frac"] is not None
                    ]
                ),
            }
        )
    return rows


def markdown(rows: list[dict[str, Any]], records: list[dict[str, Any]]) -> str:
    def f(x: float | None, d: int = 1) -> str:
        if x is not None and math.isinf(x):
            return "not walked"  # the median seed did not walk
        return "-" if x is None else f"{x:.{d}f}"

    out = [
        f"Thresholds: mean episode length >= {WALK_EPISODE_LENGTH:g}, lin-vel tracking >= "
        f"{100 * WALK_TRACKING_FRAC:g}% of max. Medians over all seeds; a seed that did not "
        "walk counts as slower than every seed that did.",
        "",
        "| updates/iter (critic) | envs | path | workers | seeds | walked | iterations | loop s "
        "| since start s | iteration ms | learner ms | final tracking |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['updates_per_step']} | {r['num_envs']} | {r['path'] or '-'} "
            f"| {r.get('env_workers') or '-'} | {','.join(map(str, r['seeds']))} "
            f"| {r['walked']} "
            f"| {f(r['iterations_median'], 0)} | {f(r['loop_s_median'])} "
            f"| {r['since_start']} | {f(r['iter_ms_median'], 2)} "
            f"| {f(r['learner_train_ms_median'], 2)} | {f(r['final_tracking_median'], 3)} |"
        )
    out += [
        "",
        "| run | iteration | loop s | setup s (cold start) | learning from s | since start s "
        "| iteration ms | env step ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(records, key=lambda r: (*_setting(r), r["seed"])):
        out.append(
            f"| {r['run']} | {r.get('iteration', '-')} | {f(r.get('loop_s'))} "
            f"| {f(r['setup_s'])} ({f(r['cold_start_s'])}) "
            f"| {f(r.get('learning_since_start_s'), 2)} | {_since(r)} "
            f"| {f(r.get('iter_ms_median'), 2)} | {f(r.get('env_step_ms_median'), 2)} |"
        )
    return "\n".join(out) + "\n"


def _since(r: dict[str, Any]) -> str:
    if r.get("reached"):
        return f"{r['since_start_s']:.1f}"
    return f"not within {_s(r.get('not_within_s'))}"


def plot(records: list[dict[str, Any]], rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, key, label in (
        (axes[0], "iteration", "iterations to walk"),
        (axes[1], "since_start_s", "seconds to walk (since runner start)"),
    ):
        med = "iterations_median" if key == "iteration" else "since_start_s_median"
        # a row carries its setting's keys, so _setting reads rows and records alike
        for setting in sorted({_setting(r)[1:] for r in rows}):
            envs, exec_path, workers = setting
            line = [
                r
                for r in rows
                if _setting(r)[1:] == setting and r[med] is not None and math.isfinite(r[med])
            ]
            (drawn,) = ax.plot(
                [r["updates_per_step"] for r in line],
                [r[med] for r in line],
                marker="o",
                label=f"{envs} envs{', ' + exec_path if exec_path else ''}"
                f"{f', {workers} workers' if workers else ''} (median)",
            )
            hit = [r for r in records if r.get("reached") and _setting(r)[1:] == setting]
            ax.scatter(
                [r["updates_per_step"] for r in hit],
                [r[key] for r in hit],
                alpha=0.4,
                color=drawn.get_color(),
            )
        ax.set_xlabel("critic updates per iteration")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8)
    fig.suptitle("G1 walk: iterations and seconds to the thresholds per update-to-data ratio")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report(run_dirs: list[Path], out: Path) -> list[dict[str, Any]]:
    """Writes out/walk_utd.{json,md,png}; returns the per-setting rows."""
    records = [walk_record(load_run(d)) for d in run_dirs]
    rows = setting_table(records)
    out.mkdir(parents=True, exist_ok=True)
    (out / "walk_utd.json").write_text(json.dumps({"settings": rows, "runs": records}, indent=1))
    (out / "walk_utd.md").write_text(markdown(rows, records))
    plot(records, rows, out / "walk_utd.png")
    return rows
