"""Env-steps/s of G1 Walk Flat on MuJoCo Warp (backend=mjwarp), beside its physics-only ceiling:
the device rows of `scripts/bench_env.py --backend mjwarp`.

One env-step is one control step of one world, as for the CPU backend (`env_bench`): the full
task (physics substeps, observations, rewards, terminations, autoresets, curriculum) on the
device, its step replayed as one CUDA graph where the env can capture it (`G1WalkWarp.capture`),
else as Warp graphs for the physics and torch ops for the task (Warp's CPU device). Each repeat
is timed from a device synchronize to a device synchronize, so a figure is device throughput,
with nothing overlapped that the runner would not overlap.

The ceiling is the physics alone in the same worlds: `step2`, `step` (decimation - 1 times),
`step1` replayed from a Warp graph at the controls the task would set, no task work; like the
CPU ceiling, every world is put back to its start state every CEILING_PERIOD control steps so
that it simulates about as many contacts as the task does.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np
import torch

from flashsac_bench.config.backend import MjwarpConfig, WarpOptions
from flashsac_bench.config.task import TaskConfig
from flashsac_bench.envs.g1.cpu.shard import build_task_model
from flashsac_bench.envs.g1.layout import G1Layout
from flashsac_bench.envs.g1.warp.physics import WarpPhysics
from flashsac_bench.envs.g1.warp.walk_warp import G1WalkWarp
from lab.bench.env_bench import CEILING_PERIOD, BenchArgs, actions_for


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(step: Any, actions: torch.Tensor, args: BenchArgs, device: torch.device) -> list[float]:
    for a in actions[: args.warmup]:
        step(a)
    per_step = []
    for _ in range(args.repeats):
        _sync(device)
        t0 = time.perf_counter()
        for a in actions[args.warmup :]:
            step(a)
        _sync(device)
        per_step.append((time.perf_counter() - t0) / args.steps)
    return per_step


def _memory(device: torch.device) -> float | None:
    """Device bytes in use (torch's caching allocator and Warp's together), or None on CPU."""
    if device.type != "cuda":
        return None
    free, total = torch.cuda.mem_get_info(device)
    return float(total - free)


def _row(n: int, per_step: list[float], device: torch.device, **extra: Any) -> dict[str, Any]:
    return {
        "backend": "mjwarp",
        "mode": "device",
        "device": str(device),
        "num_envs": n,
        "workers": 0,
        "threads": 0,
        "ms_per_step_median": 1e3 * statistics.median(per_step),
        "env_steps_per_s_median": n / statistics.median(per_step),
        "env_steps_per_s_best": n / min(per_step),
        "straggler_ms_median": None,
        **extra,
    }


def bench_warp_env(n: int, device: str, args: BenchArgs) -> dict[str, Any]:
    """The full task's step rate on `device` ("auto", "cpu", "cuda:N")."""
    before = _memory(torch.device(device)) if device.startswith("cuda") else None
    backend = MjwarpConfig(warp=WarpOptions(device=device))
    with G1WalkWarp(TaskConfig(), backend, n, seed=0) as env:
        dev = env.device
        drawn = actions_for(args.actions, n, args.warmup + args.steps)
        actions = torch.as_tensor(drawn, device=dev)
        static = torch.zeros_like(actions[0])
        env.reset()
        env.capture(static)

        def step(a: torch.Tensor) -> None:
            static.copy_(a)
            env.step(static)

        per_step = _timed(step, actions, args, dev)
        used = _memory(dev)
        m = env.metrics()
        mode = env.step_mode
    per_world = None if used is None or before is None else (used - before) / n
    return _row(
        n,
        per_step,
        dev,
        step_mode=mode,
        mean_episode_length=m["curriculum/mean_episode_length"],
        device_bytes_per_world=per_world,
    )


def bench_warp_ceiling(n: int, device: str, args: BenchArgs) -> dict[str, Any]:
    """The physics alone in the same worlds (see the module docstring)."""
    task = TaskConfig()
    model = build_task_model(task)
    lay = G1Layout.from_model(model)
    opts = WarpOptions(device=device)
    phys = WarpPhysics(model, n, opts.resolved_device(), opts.nconmax, opts.njmax)
    dev = phys.device
    every = torch.ones(n, dtype=torch.bool, device=dev)
    stand = torch.as_tensor(np.tile(lay.stand_qpos, (n, 1)), device=dev)
    phys.reset_worlds(every, stand, torch.zeros(n, model.nv, dtype=torch.float64, device=dev))
    state = (phys.qpos, phys.qvel, phys.qacc_warmstart)
    start = [t.clone() for t in state]
    actuators = torch.as_tensor(lay.actuators, device=dev)
    default = torch.as_tensor(lay.default_joint_pos, dtype=torch.float32, device=dev)
    actions = torch.as_tensor(actions_for(args.actions, n, args.warmup + args.steps), device=dev)
    phys.step(task.decimation)  # the kernels load before the capture
    phys.capture(task.decimation)
    count = 0

    def step(a: torch.Tensor) -> None:
        nonlocal count
        if count % CEILING_PERIOD == 0:
            for target, value in zip(state, start, strict=True):
                target.copy_(value)
            phys.stages()
        count += 1
        phys.ctrl[:, actuators] = default + torch.clamp(a, -1.0, 1.0)
        phys.step(task.decimation)

    try:
        per_step = _timed(step, actions, args, dev)
    finally:
        phys.close()
    return _row(n, per_step, dev)
