"""The runs of a learning-parity grid: making them through the runner (as the CLI composes
them, so a parity run is an ordinary run), and reading back each run's curves from its
summary.json rows and TensorBoard scalars (scripts/learning_parity.py says which)."""

from __future__ import annotations

import argparse
import json
import logging
import math
import shutil
import time
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
        series[key] = np.array([num(r.get(key)) for r in rows], dtype=np.float64)
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
    return RunData(
        run_dir=run_dir,
        path=str(tc.get("path")),
        seed=int(tc.get("seed", -1)),
        iterations=n,
        num_envs=int(tc.get("num_envs", 0)),
        series=series,
        time_s=np.array([num(r.get("time_s")) for r in rows], dtype=np.float64),
        first_learning=s.get("first_learning_iteration"),
        startup_s=_setup_s(s),
        summary=s,
        status=state["status"],
        last_checkpoint=state["last_checkpoint"],
    )


def _setup_s(summary: dict[str, Any]) -> float:
    """Seconds from the runner's start to the first iteration (a resumed run: its segment's).

    Summaries since setup_s was recorded have it measured; older ones add the timed startup
    parts, which miss the short steps between them. cold_start_s already includes
    device_steps_capture_s, which is therefore not added a second time."""
    measured = summary.get("setup_s")
    if isinstance(measured, int | float):
        return float(measured)
    startup = summary.get("startup") or {}
    return float(
        sum(
            v
            for k, v in startup.items()
            if isinstance(v, int | float) and k != "device_steps_capture_s"
        )
    )


def num(x: Any) -> float:
    return float(x) if isinstance(x, int | float) and x is not None else math.nan


def _read_tb(tb_dir: Path, tags: list[str]) -> dict[str, list[tuple[int, float]]]:
    if not tb_dir.is_dir():
        return {}
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tb_dir), size_guidance={"scalars": 0})
    acc.Reload()
    have = set(acc.Tags().get("scalars", []))
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in tags if t in have}


def group_runs(runs: list[RunData]) -> dict[str, dict[int, RunData]]:
    grouped: dict[str, dict[int, RunData]] = {}
    for r in runs:
        if r.seed in grouped.setdefault(r.path, {}):
            raise ValueError(f"two runs of path {r.path} with seed {r.seed}")
        grouped[r.path][r.seed] = r
    order = {p: i for i, p in enumerate(PATH_ORDER)}
    return dict(sorted(grouped.items(), key=lambda kv: order.get(kv[0], len(order))))


def run_grid(args: argparse.Namespace, out: Path) -> list[Path]:
    """Compose and run every (seed, path) through the runner, seed-major (so a partial grid is
    balanced); reuse complete runs of the same settings unless --fresh."""
    from hydra import compose, initialize_config_module

    from flashsac_bench.cli.train import train
    from flashsac_bench.config import register_configs, to_config
    from flashsac_bench.runner.resume import earlier_outputs

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
                    "logger=tensorboard",
                    *args.override,
                ]
                dirs.append(run_dir)
                if not args.fresh and _reusable(run_dir, overrides):
                    log.info("reusing %s", run_dir)
                    continue
                if earlier_outputs(run_dir):  # --fresh, incomplete, or other settings
                    log.info("discarding the earlier run in %s", run_dir)
                    shutil.rmtree(run_dir)
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
