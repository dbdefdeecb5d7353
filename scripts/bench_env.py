"""Env-steps/s of the G1 Walk Flat MuJoCo env versus num_envs and worker threads.

    python scripts/bench_env.py                                 # the table of docs/benchmarks.md
    python scripts/bench_env.py --num-envs 64 --threads 2 --profile --compare-rollout
    python scripts/bench_env.py --json bench_env.json

One env-step = one control step (3 physics steps) of one env, including observations, rewards,
terminations and autoresets. Every configuration is warmed up, then timed `--repeats` times;
the table shows the median and the best repeat. `--profile` splits the step time into MuJoCo's
own mj_step, the post-step sensor refresh, the thread pool's Python overhead and the task's numpy
math. `--compare-rollout` times the raw physics of the thread pool against `mujoco.rollout`;
`--mj-timers` reports MuJoCo's internal per-stage timers.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import platform
import statistics
import time
from typing import Any

import mujoco
import numpy as np

from flashsac_bench.config.backend import BackendConfig
from flashsac_bench.config.task import TaskConfig
from flashsac_bench.envs import batched, make_env


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    import torch

    return {
        "date": datetime.date.today().isoformat(),
        "cpu": cpu,
        "cores": len(os.sched_getaffinity(0)),
        "mujoco": mujoco.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "loadavg_start": os.getloadavg()[0],
        "parallel_speedup_start": parallel_speedup(),
    }


def parallel_speedup(threads: int = 2, steps: int = 300) -> float:
    """Speedup of `threads` threads stepping one MjData each over one thread doing it all: about
    `threads` on an idle machine, lower when other processes hold the cores (shared CI boxes)."""
    import threading

    from flashsac_bench.envs.g1_model import build_g1_model

    model = build_g1_model()
    datas = [mujoco.MjData(model) for _ in range(threads)]

    def run(d: mujoco.MjData) -> None:
        mujoco.mj_resetDataKeyframe(model, d, 0)  # same trajectory in both timings
        for _ in range(steps):
            mujoco.mj_step(model, d)

    t0 = time.perf_counter()
    for d in datas:
        run(d)
    serial = time.perf_counter() - t0
    workers = [threading.Thread(target=run, args=(d,)) for d in datas]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return serial / (time.perf_counter() - t0)


def wait_for_idle(threshold: float, timeout_s: float) -> float:
    """Poll the 2-thread probe until it reaches `threshold` (other load gone); returns it."""
    deadline = time.monotonic() + timeout_s
    while True:
        probe = parallel_speedup()
        if probe >= threshold or time.monotonic() > deadline:
            return probe
        time.sleep(5.0)


def measured(fn: Any, args: argparse.Namespace) -> dict[str, Any]:
    """fn() under the --idle-probe policy: wait for an idle machine, rerun when load came back
    during the measurement (probe after below the threshold), at most 3 tries."""
    if not args.idle_probe:
        return fn()
    for _ in range(3):
        before = wait_for_idle(args.idle_probe, args.idle_timeout)
        result = fn()
        after = parallel_speedup()
        result.update(probe_before=before, probe_after=after)
        if min(before, after) >= args.idle_probe:
            break
    return result


def _actions(kind: str, n: int, steps: int, seed: int = 0) -> np.ndarray:
    if kind == "zero":
        return np.zeros((steps, n, 29), np.float32)
    return np.random.default_rng(seed).uniform(-1, 1, (steps, n, 29)).astype(np.float32)


def bench_env(n: int, threads: int, args: argparse.Namespace) -> dict[str, Any]:
    env = make_env(TaskConfig(), BackendConfig(num_threads=threads), n, seed=0)
    actions = _actions(args.actions, n, args.warmup + args.steps)
    for a in actions[: args.warmup]:
        env.step(a)
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for a in actions[args.warmup :]:
            env.step(a)
        times.append(time.perf_counter() - t0)
    m = env.metrics()
    env.close()
    per_step = [t / args.steps for t in times]
    return {
        "num_envs": n,
        "threads": env.physics.num_threads,
        "actions": args.actions,
        "ms_per_step_median": 1e3 * statistics.median(per_step),
        "env_steps_per_s_median": n / statistics.median(per_step),
        "env_steps_per_s_best": n / min(per_step),
        "mean_episode_length": m["curriculum/mean_episode_length"],
    }


def profile(n: int, args: argparse.Namespace) -> dict[str, float]:
    """CPU time of one vector step on one thread, split into MuJoCo's mj_step, the sensor
    refresh, the per-env Python of the pool and the task's numpy math (obs, rewards, resets),
    by timing wrappers around those calls during ordinary env steps."""
    env = make_env(TaskConfig(), BackendConfig(num_threads=1), n, seed=0)
    actions = _actions(args.actions, n, args.warmup + args.steps)
    for a in actions[: args.warmup]:
        env.step(a)
    acc = {"mj_step": 0.0, "refresh": 0.0, "physics": 0.0}

    def timed(fn: Any, key: str) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            result = fn(*a, **k)
            acc[key] += time.perf_counter() - t0
            return result

        return wrapper

    saved = mujoco.mj_step, batched.refresh
    mujoco.mj_step = timed(saved[0], "mj_step")  # the pool looks both up on every step
    batched.refresh = timed(saved[1], "refresh")
    env.physics.step = timed(env.physics.step, "physics")  # type: ignore[method-assign]
    try:
        t0 = time.perf_counter()
        for a in actions[args.warmup :]:
            env.step(a)
        total = time.perf_counter() - t0
    finally:
        mujoco.mj_step, batched.refresh = saved
    env.close()
    parts = {
        "mj_step": acc["mj_step"],
        "sensor_refresh": acc["refresh"],
        "pool_python": acc["physics"] - acc["mj_step"] - acc["refresh"],
        "task_numpy": total - acc["physics"],
    }
    out: dict[str, float] = {"num_envs": n, "cpu_ms_per_step": 1e3 * total / args.steps}
    out.update({f"{k}_ms": 1e3 * v / args.steps for k, v in parts.items()})
    out.update({f"{k}_share": v / total for k, v in parts.items()})
    return out


def mj_timers(n: int, args: argparse.Namespace) -> dict[str, float]:
    """MuJoCo's internal timers (microseconds per physics step, averaged over all envs) and the
    mean contact / constraint-row counts during ordinary env steps."""
    env = make_env(TaskConfig(), BackendConfig(num_threads=1), n, seed=0)
    actions = _actions(args.actions, n, args.warmup + args.steps)
    for a in actions[: args.warmup]:
        env.step(a)
    names = ("STEP", "POSITION", "POS_COLLISION", "POS_MAKE", "CONSTRAINT", "VELOCITY", "ADVANCE")
    timers = [getattr(mujoco.mjtTimer, f"mjTIMER_{k}") for k in names]
    for d in env.physics.datas:
        for t in timers:
            d.timer[t].duration = d.timer[t].number = 0
    ncon = nefc = 0.0
    for a in actions[args.warmup :]:
        env.step(a)
        ncon += np.mean([d.ncon for d in env.physics.datas])
        nefc += np.mean([d.nefc for d in env.physics.datas])
    out: dict[str, float] = {"num_envs": n}
    for name, t in zip(names, timers, strict=True):
        total = sum(d.timer[t].duration for d in env.physics.datas)
        count = sum(d.timer[t].number for d in env.physics.datas)
        out[f"{name.lower()}_us"] = 1e6 * total / max(count, 1)
    out["ncon"], out["nefc"] = ncon / args.steps, nefc / args.steps
    env.close()
    return out


def compare_rollout(n: int, threads: int, args: argparse.Namespace) -> dict[str, float]:
    """Raw physics, 3 substeps per control step: our thread pool vs mujoco.rollout."""
    from mujoco import rollout

    env = make_env(TaskConfig(), BackendConfig(num_threads=threads), n, seed=0)
    actions = _actions(args.actions, n, args.warmup + args.steps)
    for a in actions[: args.warmup]:
        env.step(a)
    state = env.get_state()
    ctrls = env.layout.default_joint_pos + np.clip(actions[args.warmup :], -1, 1)
    phys = env.physics

    def pool(publish: bool) -> float:
        env.set_state(state)
        t0 = time.perf_counter()
        for c in ctrls:
            phys.ctrl[:, env.layout.actuators] = c
            phys.step(3, publish=publish)
        return (time.perf_counter() - t0) / args.steps

    t_pool, t_pool_raw = pool(True), pool(False)
    env.set_state(state)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    size = mujoco.mj_stateSize(env.model, spec)
    x0 = np.empty((n, size))
    for m, d, row in zip(phys.models, phys.datas, x0, strict=True):
        mujoco.mj_getState(m, d, row, spec)
    datas = [copy.copy(phys.datas[0]) for _ in range(threads)]
    out_state = np.empty((n, 3, size))
    out_sens = np.empty((n, 3, env.model.nsensordata))
    control = np.empty((n, 3, env.model.nu))
    with rollout.Rollout(nthread=threads) as r:
        t0 = time.perf_counter()
        for c in ctrls:
            control[:, :, env.layout.actuators] = c[:, None, :]
            r.rollout(phys.models, datas, x0, control, nstep=3, skip_checks=True,
                      state=out_state, sensordata=out_sens)  # fmt: skip
            x0[:] = out_state[:, -1]
        t_rollout = (time.perf_counter() - t0) / args.steps
    env.close()
    return {
        "num_envs": n,
        "threads": threads,
        "pool_ms": 1e3 * t_pool,
        "pool_no_refresh_ms": 1e3 * t_pool_raw,
        "rollout_no_refresh_ms": 1e3 * t_rollout,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-envs", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=200, help="timed steps per repeat")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--actions", choices=["random", "zero"], default="random")
    parser.add_argument("--profile", action="store_true", help="step-time breakdown")
    parser.add_argument("--compare-rollout", action="store_true")
    parser.add_argument("--mj-timers", action="store_true", help="MuJoCo's internal timers")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument(
        "--idle-probe",
        type=float,
        default=0.0,
        help="on a shared machine: time each configuration only while the 2-thread probe "
        "speedup is at least this (e.g. 1.8), retrying when other load appears",
    )
    parser.add_argument("--idle-timeout", type=float, default=900.0)
    args = parser.parse_args()

    info = machine()
    print(
        f"# {info['date']}  {info['cpu']}  cores={info['cores']}  mujoco {info['mujoco']}  "
        f"torch {info['torch']}  load {info['loadavg_start']:.2f}  "
        f"2-thread speedup probe {info['parallel_speedup_start']:.2f}x  actions={args.actions}"
    )
    rows = []
    print(
        f"{'envs':>6} {'threads':>7} {'ms/step':>8} {'env-steps/s':>12} {'best':>8} "
        f"{'ep len':>7} {'probe':>10}"
    )
    for n in args.num_envs:
        for t in args.threads:
            r = measured(lambda n=n, t=t: bench_env(n, t, args), args)
            rows.append(r)
            probe = f"{r['probe_before']:.2f}/{r['probe_after']:.2f}" if "probe_after" in r else "-"
            print(f"{n:>6} {r['threads']:>7} {r['ms_per_step_median']:>8.2f} "
                  f"{r['env_steps_per_s_median']:>12.0f} {r['env_steps_per_s_best']:>8.0f} "
                  f"{r['mean_episode_length']:>7.1f} {probe:>10}", flush=True)  # fmt: skip
    result: dict[str, Any] = {"machine": info, "args": vars(args), "rows": rows}
    if args.profile:
        result["profile"] = []
        for n in args.num_envs:
            p = measured(lambda n=n: profile(n, args), args)
            result["profile"].append(p)
            print("profile " + "  ".join(f"{k}={v:.3g}" for k, v in p.items()))
    if args.compare_rollout:
        result["rollout"] = []
        for n in args.num_envs:
            for t in args.threads:
                c = measured(lambda n=n, t=t: compare_rollout(n, t, args), args)
                result["rollout"].append(c)
                print("physics " + "  ".join(f"{k}={v:.3g}" for k, v in c.items()))
    if args.mj_timers:
        result["mj_timers"] = []
        for n in args.num_envs:
            c = mj_timers(n, args)
            result["mj_timers"].append(c)
            print("mj_timers " + "  ".join(f"{k}={v:.3g}" for k, v in c.items()))
    info["loadavg_end"] = os.getloadavg()[0]
    info["parallel_speedup_end"] = parallel_speedup()
    print(
        f"# at the end: load {info['loadavg_end']:.2f}  "
        f"2-thread speedup probe {info['parallel_speedup_end']:.2f}x"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
