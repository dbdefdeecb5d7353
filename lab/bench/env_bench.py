"""Env-steps/s of G1 Walk Flat per num_envs and layout (thread pool or worker processes), each
beside its physics-only ceiling (`scripts/bench_env.py` is the CLI).

One env-step = one control step (3 physics steps) of one env, including observations, rewards,
terminations, autoresets and the curriculum. Every configuration is warmed up, then timed
`repeats` times; rows give the median and the best repeat.

The ceiling of a layout is what the same machinery does with no task work: every env's
`mj_step(3)` at the same controls, in the same layout (same worker processes and lockstep
signalling, or the same thread pool), no stage computation for the new state, no observations,
rewards, terminations or row copies. Unlike the task, it never resets on a fall, so every env is
put back to its start pose every CEILING_PERIOD control steps (the G1's mean episode length
under random actions) so that it simulates about as many contacts as the
task does; robots lying on the floor would make the ceiling slower than the task can be.
"""

from __future__ import annotations

import copy
import datetime
import os
import platform
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from flashsac_bench.config.backend import MujocoConfig, available_cores  # noqa: F401
from flashsac_bench.config.task import TaskConfig
from flashsac_bench.envs.g1.cpu.batched import STATE_SPEC, BatchedMujoco
from flashsac_bench.envs.g1.cpu.shard import NUM_JOINTS, build_task_model
from flashsac_bench.envs.g1.cpu.shards import ArraySpec, InlineShards, ProcessShards, straggler_ms
from flashsac_bench.envs.g1.cpu.walk_flat import G1WalkFlat
from flashsac_bench.envs.g1.layout import G1Layout

CEILING_PERIOD = 40


@dataclass(frozen=True)
class Layout:
    """Where the envs run: `workers` processes, or (workers == 0) a pool of `threads`."""

    mode: str
    workers: int = 0
    threads: int = 1

    @property
    def backend(self) -> MujocoConfig:
        if self.mode == "processes":
            return MujocoConfig(mode="processes", workers=self.workers)
        return MujocoConfig(mode="threads", num_threads=self.threads)

    @property
    def label(self) -> str:
        return f"{self.workers} proc" if self.mode == "processes" else f"{self.threads} thr"


@dataclass
class BenchArgs:
    steps: int = 200
    warmup: int = 100
    repeats: int = 3
    actions: str = "random"
    idle_probe: float = 0.0
    idle_timeout: float = 900.0


# ------------------------------------------------------------------------------- machine facts


def git_commit() -> str | None:
    from flashsac_bench.runner.summary import COMMIT_VAR

    if os.environ.get(COMMIT_VAR):
        return os.environ[COMMIT_VAR]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    return {
        "date": datetime.date.today().isoformat(),
        "commit": git_commit(),
        "cpu": cpu,
        "cores": available_cores(),
        "mujoco": mujoco.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "loadavg_start": os.getloadavg()[0],
        "parallel_speedup_start": parallel_speedup(),
    }


def parallel_speedup(threads: int = 2, steps: int = 300) -> float:
    """Speedup of `threads` threads stepping one MjData each over one thread doing it all: about
    `threads` on an idle machine, lower when other processes hold the cores (shared CI boxes)."""
    from flashsac_bench.envs.g1.model import build_g1_model

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


def measured(fn: Callable[[], dict[str, Any]], args: BenchArgs) -> dict[str, Any]:
    """fn() under the idle-probe policy: wait for an idle machine, rerun when load came back
    during the measurement (probe after below the threshold), at most 3 tries."""
    if not args.idle_probe:
        return fn()
    result: dict[str, Any] = {}
    for _ in range(3):
        deadline = time.monotonic() + args.idle_timeout
        before = parallel_speedup()
        while before < args.idle_probe and time.monotonic() < deadline:
            time.sleep(5.0)
            before = parallel_speedup()
        result = fn()
        after = parallel_speedup()
        result.update(probe_before=before, probe_after=after)
        if min(before, after) >= args.idle_probe:
            break
    return result


def actions_for(kind: str, n: int, steps: int, seed: int = 0) -> np.ndarray:
    if kind == "zero":
        return np.zeros((steps, n, NUM_JOINTS), np.float32)
    return np.random.default_rng(seed).uniform(-1, 1, (steps, n, NUM_JOINTS)).astype(np.float32)


def _timed(step: Callable[[np.ndarray], Any], actions: np.ndarray, args: BenchArgs) -> list[float]:
    for a in actions[: args.warmup]:
        step(a)
    per_step = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for a in actions[args.warmup :]:
            step(a)
        per_step.append((time.perf_counter() - t0) / args.steps)
    return per_step


def _median_straggler(values: list[float | None]) -> float | None:
    """The median of the steps' straggler_ms (worker processes only)."""
    timed = [v for v in values if v is not None]
    return statistics.median(timed) if timed else None


def _row(n: int, layout: Layout, per_step: list[float], **extra: Any) -> dict[str, Any]:
    return {
        "mode": layout.mode,
        "num_envs": n,
        "workers": layout.workers,
        "threads": layout.threads,
        "ms_per_step_median": 1e3 * statistics.median(per_step),
        "env_steps_per_s_median": n / statistics.median(per_step),
        "env_steps_per_s_best": n / min(per_step),
        **extra,
    }


# ----------------------------------------------------------------------------- the full task


def bench_env(n: int, layout: Layout, args: BenchArgs) -> dict[str, Any]:
    """The full task's step rate in this layout."""
    actions = actions_for(args.actions, n, args.warmup + args.steps)
    stragglers: list[float | None] = []
    with G1WalkFlat(TaskConfig(), layout.backend, n, seed=0) as env:

        def step(a: np.ndarray) -> None:
            env.step(a)
            stragglers.append(straggler_ms(env.worker_done_times))

        per_step = _timed(step, actions, args)
        m = env.metrics()
    return _row(
        n,
        layout,
        per_step,
        mean_episode_length=m["curriculum/mean_episode_length"],
        straggler_ms_median=_median_straggler(stragglers[args.warmup :]),
    )


# -------------------------------------------------------------------------------- the ceiling


class CeilingShard:
    """Raw physics of envs [lo, hi): `mj_step(decimation)` at the given controls, nothing else."""

    def __init__(
        self, task_cfg: TaskConfig, threads: int, lo: int, hi: int, arrays: dict[str, np.ndarray]
    ) -> None:
        model = build_task_model(task_cfg)
        self.layout = G1Layout.from_model(model)
        self.actions = arrays["actions"]
        self.decimation = task_cfg.decimation
        self.physics = BatchedMujoco(model, hi - lo, threads)
        n = hi - lo
        qpos = np.tile(self.layout.stand_qpos, (n, 1))
        self.physics.reset_envs(range(n), qpos, np.zeros((n, model.nv)))
        self.start = self.physics.get_state()
        self.count = 0

    def reset(self) -> None:
        pass

    def step(self) -> None:
        if self.count % CEILING_PERIOD == 0:
            phys = self.physics
            for m, d, row in zip(phys.models, phys.datas, self.start, strict=True):
                mujoco.mj_setState(m, d, row, STATE_SPEC)
        self.count += 1
        lay = self.layout
        self.physics.ctrl[:, lay.actuators] = lay.default_joint_pos + np.clip(self.actions, -1, 1)
        self.physics.step(self.decimation, raw=True)

    def get_state(self) -> dict[str, Any]:
        return {}

    def set_state(self, state: dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        self.physics.close()


@dataclass(frozen=True)
class CeilingFactory:
    task_cfg: TaskConfig
    threads: int

    def __call__(self, lo: int, hi: int, arrays: dict[str, np.ndarray]) -> CeilingShard:
        return CeilingShard(self.task_cfg, self.threads, lo, hi, arrays)


CEILING_SPEC = ArraySpec((("actions", (NUM_JOINTS,), "float64"),))


def bench_ceiling(n: int, layout: Layout, args: BenchArgs) -> dict[str, Any]:
    """Raw physics in the same layout (see the module docstring)."""
    task = TaskConfig()
    actions = actions_for(args.actions, n, args.warmup + args.steps)
    shards: InlineShards | ProcessShards
    if layout.mode == "processes":
        shards = ProcessShards(CeilingFactory(task, 1), CEILING_SPEC, n, layout.workers)
    else:
        shards = InlineShards(CeilingFactory(task, layout.threads), CEILING_SPEC, n)
    target = shards.arrays["actions"]
    stragglers: list[float | None] = []

    def step(a: np.ndarray) -> None:
        target[:] = a
        shards.call("step")
        stragglers.append(straggler_ms(shards.done_times))

    try:
        per_step = _timed(step, actions, args)
    finally:
        shards.close()
    return _row(
        n, layout, per_step, straggler_ms_median=_median_straggler(stragglers[args.warmup :])
    )


# -------------------------------------------------------------------- in-process diagnostics


def profile(n: int, args: BenchArgs) -> dict[str, float]:
    """CPU time of one vector step on one thread, split into MuJoCo's stepping (mj_step2 +
    mj_step), the stages for the new state (mj_step1, which the observation needs), the per-env
    Python of the pool and the task's numpy math (obs, rewards, resets), by timing wrappers
    around those calls during ordinary env steps."""
    env = G1WalkFlat(TaskConfig(), MujocoConfig(mode="threads", num_threads=1), n, seed=0)
    actions = actions_for(args.actions, n, args.warmup + args.steps)
    for a in actions[: args.warmup]:
        env.step(a)
    acc = {"step": 0.0, "stages": 0.0, "physics": 0.0}

    def timed(fn: Any, key: str) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            result = fn(*a, **k)
            acc[key] += time.perf_counter() - t0
            return result

        return wrapper

    saved = mujoco.mj_step, mujoco.mj_step1, mujoco.mj_step2
    # The pool looks these up on every step.
    mujoco.mj_step, mujoco.mj_step2 = timed(saved[0], "step"), timed(saved[2], "step")
    mujoco.mj_step1 = timed(saved[1], "stages")
    env.physics.step = timed(env.physics.step, "physics")  # type: ignore[method-assign]
    try:
        t0 = time.perf_counter()
        for a in actions[args.warmup :]:
            env.step(a)
        total = time.perf_counter() - t0
    finally:
        mujoco.mj_step, mujoco.mj_step1, mujoco.mj_step2 = saved
        env.close()
    parts = {
        "mj_step": acc["step"],
        "new_state_stages": acc["stages"],
        "pool_python": acc["physics"] - acc["step"] - acc["stages"],
        "task_numpy": total - acc["physics"],
    }
    out: dict[str, float] = {"num_envs": n, "cpu_ms_per_step": 1e3 * total / args.steps}
    out.update({f"{k}_ms": 1e3 * v / args.steps for k, v in parts.items()})
    out.update({f"{k}_share": v / total for k, v in parts.items()})
    return out


def mj_timers(n: int, args: BenchArgs) -> dict[str, float]:
    """MuJoCo's internal timers (microseconds per physics step, averaged over all envs) and the
    mean contact / constraint-row counts during ordinary env steps."""
    env = G1WalkFlat(TaskConfig(), MujocoConfig(mode="threads", num_threads=1), n, seed=0)
    actions = actions_for(args.actions, n, args.warmup + args.steps)
    for a in actions[: args.warmup]:
        env.step(a)
    names = ("STEP", "POSITION", "POS_COLLISION", "POS_MAKE", "CONSTRAINT", "VELOCITY", "ADVANCE")
    timers = [getattr(mujoco.mjtTimer, f"mjTIMER_{k}") for k in names]
    datas = env.physics.datas
    for d in datas:
        for t in timers:
            d.timer[t].duration = d.timer[t].number = 0
    ncon = nefc = 0.0
    for a in actions[args.warmup :]:
        env.step(a)
        ncon += np.mean([d.ncon for d in datas])
        nefc += np.mean([d.nefc for d in datas])
    out: dict[str, float] = {"num_envs": n}
    for name, t in zip(names, timers, strict=True):
        total = sum(d.timer[t].duration for d in datas)
        count = sum(d.timer[t].number for d in datas)
        out[f"{name.lower()}_us"] = 1e6 * total / max(count, 1)
    out["ncon"], out["nefc"] = ncon / args.steps, nefc / args.steps
    env.close()
    return out


def compare_rollout(n: int, threads: int, args: BenchArgs) -> dict[str, float]:
    """Raw physics, 3 substeps per control step: our thread pool vs mujoco.rollout."""
    from mujoco import rollout

    env = G1WalkFlat(TaskConfig(), MujocoConfig(mode="threads", num_threads=threads), n, seed=0)
    actions = actions_for(args.actions, n, args.warmup + args.steps)
    for a in actions[: args.warmup]:
        env.step(a)
    state = env.get_state()
    lay = env.layout
    ctrls = lay.default_joint_pos + np.clip(actions[args.warmup :], -1, 1)
    phys = env.physics

    def pool(raw: bool) -> float:
        env.set_state(state)
        t0 = time.perf_counter()
        for c in ctrls:
            phys.ctrl[:, lay.actuators] = c
            phys.step(3, raw=raw)
        return (time.perf_counter() - t0) / args.steps

    t_pool, t_pool_raw = pool(False), pool(True)
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
            control[:, :, lay.actuators] = c[:, None, :]
            r.rollout(phys.models, datas, x0, control, nstep=3, skip_checks=True,
                      state=out_state, sensordata=out_sens)  # fmt: skip
            x0[:] = out_state[:, -1]
        t_rollout = (time.perf_counter() - t0) / args.steps
    env.close()
    return {
        "num_envs": n,
        "threads": threads,
        "pool_ms": 1e3 * t_pool,
        "pool_physics_only_ms": 1e3 * t_pool_raw,
        "rollout_physics_only_ms": 1e3 * t_rollout,
    }
