"""Env-steps/s of the G1 Walk Flat env per num_envs and layout, beside its physics ceiling.

    python scripts/bench_env.py --num-envs 64 --threads 2 --workers 1 2 --ceiling
    python scripts/bench_env.py --num-envs 256 1024 --workers 15 --threads 16 --ceiling \
        --results docs/results/h200_env.json --deadline 400
    python scripts/bench_env.py --num-envs 64 --threads 1 --profile --mj-timers --compare-rollout

Layouts: `--threads T` = the in-process thread pool of T threads (backend.mode=threads),
`--workers K` = K worker processes (backend.workers=K). `--ceiling` adds, for every layout, the
raw physics of the same model in the same layout (flashsac_bench/bench/env_bench.py says
exactly what it runs), so each figure is also a fraction of what the machine can do.
`--results` appends one row per (layout, num_envs) to a JSON list; `--deadline` stops starting
new measurements after that many seconds (what finished is kept and written).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from flashsac_bench.bench import env_bench as eb


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--num-envs", type=int, nargs="+", default=[16, 64, 256])
    p.add_argument("--threads", type=int, nargs="*", default=[], help="thread-pool layouts")
    p.add_argument("--workers", type=int, nargs="*", default=[], help="worker-process layouts")
    p.add_argument("--ceiling", action="store_true", help="raw-physics row of every layout")
    p.add_argument("--steps", type=int, default=200, help="timed steps per repeat")
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--actions", choices=["random", "zero"], default="random")
    p.add_argument("--profile", action="store_true", help="step-time breakdown (1 thread)")
    p.add_argument("--compare-rollout", action="store_true", help="pool vs mujoco.rollout")
    p.add_argument("--mj-timers", action="store_true", help="MuJoCo's internal timers")
    p.add_argument("--json", metavar="PATH", help="write every result as JSON")
    p.add_argument("--results", metavar="PATH", help="append rows to this JSON list")
    p.add_argument("--deadline", type=float, default=0.0, help="seconds; 0 = none")
    p.add_argument(
        "--idle-probe",
        type=float,
        default=0.0,
        help="time only while the 2-thread probe speedup is >= this (shared boxes)",
    )
    p.add_argument("--idle-timeout", type=float, default=900.0)  # fmt: skip
    a = p.parse_args(argv)
    args = eb.BenchArgs(a.steps, a.warmup, a.repeats, a.actions, a.idle_probe, a.idle_timeout)
    layouts = [eb.Layout("threads", threads=t) for t in a.threads]
    layouts += [eb.Layout("processes", workers=k) for k in a.workers]
    if not layouts and not (a.profile or a.mj_timers or a.compare_rollout):
        layouts = [eb.Layout("threads", threads=eb.available_cores())]
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
    print(header + f" {'ceiling':>9} {'of ceil':>8} {'ep len':>7}")
    for n in a.num_envs:
        for lay in layouts:
            if not time_left():
                print(f"# deadline: skipped {n} envs / {lay.label}")
                continue
            if lay.mode == "processes" and lay.workers > n:
                continue
            r = eb.measured(lambda n=n, lay=lay: eb.bench_env(n, lay, args), args)
            if a.ceiling and time_left():
                c = eb.measured(lambda n=n, lay=lay: eb.bench_ceiling(n, lay, args), args)
                r["ceiling_env_steps_per_s"] = c["env_steps_per_s_median"]
                r["fraction_of_ceiling"] = r["env_steps_per_s_median"] / c["env_steps_per_s_median"]
            rows.append(r)
            ceil = r.get("ceiling_env_steps_per_s")
            frac = f"{r['fraction_of_ceiling']:.2f}" if ceil else "-"
            rate, best = r["env_steps_per_s_median"], r["env_steps_per_s_best"]
            print(f"{n:>6} {lay.label:>8} {r['ms_per_step_median']:>8.2f} {rate:>12.0f} "
                  f"{best:>8.0f} {ceil or 0:>9.0f} {frac:>8} {r['mean_episode_length']:>7.1f}",
                  flush=True)  # fmt: skip
    result: dict[str, Any] = {"machine": info, "args": vars(a), "rows": rows}
    for flag, fn in (("profile", eb.profile), ("mj_timers", eb.mj_timers)):
        if getattr(a, flag) and time_left():
            result[flag] = [eb.measured(lambda n=n, fn=fn: fn(n, args), args) for n in a.num_envs]
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
        path = Path(a.results)
        old = json.loads(path.read_text()) if path.exists() else []
        keep = ("mode", "num_envs", "workers", "threads", "env_steps_per_s_median")
        for r in rows:
            row = {k: r[k] for k in keep}
            row["env_steps_per_s"] = row.pop("env_steps_per_s_median")
            row.update(
                ceiling_env_steps_per_s=r.get("ceiling_env_steps_per_s"),
                cpu=info["cpu"],
                cores=info["cores"],
                date=info["date"],
                commit=info["commit"],
                command=command,
            )
            old.append(row)
        path.write_text(json.dumps(old, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
