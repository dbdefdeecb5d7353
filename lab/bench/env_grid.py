"""The env benchmark grid of scripts/bench_env.py: every (num_envs, layout) timed, beside its
raw-physics ceiling when asked, then the optional profiles; printed, written as JSON, and
appended as rows to a results list. `--backend mjwarp` adds the MuJoCo Warp backend's rows
(bench.env_bench_warp): one per num_envs, on `--warp-device`, beside its physics ceiling."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from lab.bench import env_bench as eb


def run(a: argparse.Namespace, argv: list[str] | None = None) -> int:
    """scripts/bench_env.py's command line `a`; `argv` is what the rows' command quotes."""
    args = eb.BenchArgs(a.steps, a.warmup, a.repeats, a.actions, a.idle_probe, a.idle_timeout)
    backends = a.backend or ["mujoco"]
    layouts = [eb.Layout("threads", threads=t) for t in a.threads]
    layouts += [eb.Layout("processes", workers=k) for k in a.workers]
    if not layouts and not (a.profile or a.mj_timers or a.compare_rollout):
        layouts = [eb.Layout("threads", threads=eb.available_cores())]
    if "mujoco" not in backends:
        layouts = []
    start = time.monotonic()

    def time_left() -> bool:
        return not a.deadline or time.monotonic() - start < a.deadline

    info = eb.machine()
    command = shlex.join(["python", "scripts/bench_env.py", *(argv or sys.argv[1:])])
    print(f"# {info['date']} {info['commit']}  {info['cpu']}  cores={info['cores']}  mujoco "
          f"{info['mujoco']}  load {info['loadavg_start']:.2f}  2-thread probe "
          f"{info['parallel_speedup_start']:.2f}x  actions={a.actions}")  # fmt: skip
    rows: list[dict[str, Any]] = []
    header = f"{'envs':>6} {'layout':>8} {'ms/step':>8} {'env-steps/s':>12} {'best':>8}"
    print(header + f" {'ceiling':>9} {'of ceil':>8} {'ep len':>7} {'strag':>6} {'ceil strag':>10}")
    for n in a.num_envs:
        if "mjwarp" in backends and time_left():
            rows.append(_warp_row(n, a, args, time_left))
            _print_row(n, rows[-1]["device"], rows[-1])
        for lay in layouts:
            if not time_left():
                print(f"# deadline: skipped {n} envs / {lay.label}")
                continue
            if lay.mode == "processes" and lay.workers > n:
                continue
            r = eb.measured(partial(eb.bench_env, n, lay, args), args)
            if a.ceiling and time_left():
                c = eb.measured(partial(eb.bench_ceiling, n, lay, args), args)
                r["ceiling_env_steps_per_s"] = c["env_steps_per_s_median"]
                r["fraction_of_ceiling"] = r["env_steps_per_s_median"] / c["env_steps_per_s_median"]
                r["ceiling_straggler_ms_median"] = c["straggler_ms_median"]
            r["backend"] = "mujoco"
            rows.append(r)
            _print_row(n, lay.label, r)
    result: dict[str, Any] = {"machine": info, "args": vars(a), "rows": rows}
    for flag, fn in (("profile", eb.profile), ("mj_timers", eb.mj_timers)):
        if getattr(a, flag) and time_left():
            result[flag] = [eb.measured(partial(fn, n, args), args) for n in a.num_envs]
            for r in result[flag]:
                print(f"{flag} " + "  ".join(f"{k}={v:.3g}" for k, v in r.items()))
    if a.compare_rollout and time_left():
        threads = a.threads or [1]
        result["rollout"] = [eb.compare_rollout(n, t, args) for n in a.num_envs for t in threads]
        for r in result["rollout"]:
            print("physics " + "  ".join(f"{k}={v:.3g}" for k, v in r.items()))
    print(f"# at the end: load {os.getloadavg()[0]:.2f}  "
          f"2-thread probe {eb.parallel_speedup():.2f}x")  # fmt: skip
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2))
    if a.results:
        append_rows(Path(a.results), rows, info, command)
    return 0


def _warp_row(n: int, a: argparse.Namespace, args: Any, time_left: Any) -> dict[str, Any]:
    """The MuJoCo Warp backend's full task at n worlds, with its physics ceiling when asked."""
    from lab.bench import env_bench_warp as ew  # imports Warp: only when asked

    r = eb.measured(lambda: ew.bench_warp_env(n, a.warp_device, args), args)
    if a.ceiling and time_left():
        c = eb.measured(lambda: ew.bench_warp_ceiling(n, a.warp_device, args), args)
        r["ceiling_env_steps_per_s"] = c["env_steps_per_s_median"]
        r["fraction_of_ceiling"] = r["env_steps_per_s_median"] / c["env_steps_per_s_median"]
        r["ceiling_straggler_ms_median"] = None
    return r


def _print_row(n: int, label: str, r: dict[str, Any]) -> None:
    ceil = r.get("ceiling_env_steps_per_s")
    frac = f"{r['fraction_of_ceiling']:.2f}" if ceil else "-"
    rate, best = r["env_steps_per_s_median"], r["env_steps_per_s_best"]
    strag = _ms(r["straggler_ms_median"]), _ms(r.get("ceiling_straggler_ms_median"))
    print(f"{n:>6} {label:>8} {r['ms_per_step_median']:>8.2f} {rate:>12.0f} "
          f"{best:>8.0f} {ceil or 0:>9.0f} {frac:>8} {r['mean_episode_length']:>7.1f} "
          f"{strag[0]:>6} {strag[1]:>10}", flush=True)  # fmt: skip


def append_rows(path: Path, rows: list[dict[str, Any]], info: dict[str, Any], command: str) -> None:
    """One row per measurement, with the machine and the command, appended to a JSON list."""
    old = json.loads(path.read_text()) if path.exists() else []
    keep = ("mode", "num_envs", "workers", "threads", "env_steps_per_s_median")
    for r in rows:
        row = {k: r[k] for k in keep}
        row["env_steps_per_s"] = row.pop("env_steps_per_s_median")
        row.update(
            backend=r["backend"],
            ceiling_env_steps_per_s=r.get("ceiling_env_steps_per_s"),
            straggler_ms_median=r.get("straggler_ms_median"),
            ceiling_straggler_ms_median=r.get("ceiling_straggler_ms_median"),
            cpu=info["cpu"],
            cores=info["cores"],
            date=info["date"],
            commit=info["commit"],
            command=command,
        )
        old.append(row)
    path.write_text(json.dumps(old, indent=2) + "\n")


def _ms(value: float | None) -> str:
    """A straggler median for the table ("-" in-process, where there are no workers)."""
    return "-" if value is None else f"{value:.2f}"
