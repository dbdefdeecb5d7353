"""The training loop with a device env, timed per lane in one process (bench_device_loop.py).

One run's parts are built by the runner's own setup (env, learner compiled / captured, staging,
act / store steps, the device collector), the ring is filled with random-action ticks, and then
the loop's steps (runner.loop: act, submit the tick, update, wait, store) run for `iterations`
iterations per mode, the modes taking turns for `rounds` rounds (so that a drift of the machine
spreads over all of them):

  env_only:      act, the tick, store (no update): what the env costs the loop alone;
  learner_only:  act and update (no env step, nothing stored);
  serial:        the tick, then the update, on one stream (backend.warp.overlap=false);
  stream:        the tick on its own stream beside the update (runner.env_lane).

Per iteration: iter_ms (host wall, from one act to the next, as the loop's rows), env_step_ms
(device time of the env step, CUDA events) and learner_ms (device time of the update). The
summary gives medians per mode and the ratio of each mode's iteration to env step + learner
(device times of the serial mode): what the overlap's target is stated in.
"""

from __future__ import annotations

import json
import math
import statistics
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from flashsac_bench.config.root import Config
from flashsac_bench.runner.device_collector import DeviceCollector, DeviceStaging
from flashsac_bench.runner.env_lane import make_lane
from flashsac_bench.runner.loop import Parts, Runner

MODES = ("env_only", "learner_only", "serial", "stream")


@dataclass
class ModeTimes:
    lane: str = ""
    iter_ms: list[float] = field(default_factory=list)
    env_step_ms: list[float] = field(default_factory=list)
    learner_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        def med(xs: list[float]) -> float | None:
            return round(statistics.median(xs), 3) if xs else None

        xs = sorted(self.iter_ms)
        return {
            "lane": self.lane,
            "n": len(xs),
            "iter_ms_median": med(xs),
            "iter_ms_p10": round(xs[len(xs) // 10], 3) if xs else None,
            "iter_ms_p90": round(xs[(9 * len(xs)) // 10], 3) if xs else None,
            "env_step_ms_median": med(self.env_step_ms),
            "learner_ms_median": med(self.learner_ms),
        }


def _lane_of(mode: str, device: torch.device):
    return make_lane(device, overlap=mode == "stream")


def _iterations(parts: Parts, mode: str, n: int, k0: int, times: ModeTimes) -> None:
    """`n` iterations of the loop's steps in `mode` (learning: the ring holds enough rows)."""
    steps, collector, ring = parts.steps, parts.collector, parts.learner.ring
    assert isinstance(collector, DeviceCollector) and isinstance(parts.staging, DeviceStaging)
    num_envs = parts.staging.num_envs
    lane = _lane_of(mode, parts.staging.device)
    collector.lane.close()
    collector.lane = lane
    times.lane = lane.mode
    try:
        last: float | None = None
        for k in range(k0, k0 + n):
            steps.act()  # the iteration's one sync: the previous update is done
            now = time.perf_counter()
            if last is not None:
                times.iter_ms.append((now - last) * 1e3)
                late = steps.late_values()[0]  # None where no update ran
                if late is not None:
                    times.learner_ms.append(late)
            last = now
            if mode != "learner_only":
                collector.submit(k, want_metrics=False)
            if mode != "env_only":
                steps.update()
            if mode != "learner_only":
                tick = collector.wait()
                times.env_step_ms.append(tick.env_step_ms)
                ring.advance(num_envs)
                steps.store(parts.staging.slab_t)
        steps.act()
        if last is not None:  # n > 0: the last iteration's row
            times.iter_ms.append((time.perf_counter() - last) * 1e3)
        late = steps.late_values()[0]
        if late is not None:
            times.learner_ms.append(late)
    finally:
        collector.close()  # the lane's tick, if one still runs


def _prefill(parts: Parts, rows: int) -> int:
    """Random-action ticks until the ring holds `rows` rows; returns the ticks run."""
    steps, collector, ring = parts.steps, parts.collector, parts.learner.ring
    k = 0
    while ring.count < rows:
        steps.act_random()
        collector.submit(k, want_metrics=False)
        collector.wait()
        ring.advance(parts.staging.num_envs)
        steps.store(parts.staging.slab_t)
        k += 1
    return k


def run(
    config: Config,
    modes: tuple[str, ...],
    iterations: int,
    rounds: int,
    deadline_s: float = 0.0,
    env_factory: Any = None,
) -> dict[str, Any]:
    """The measure (module docstring); stops starting rounds past `deadline_s` (0: none)."""
    t0 = time.perf_counter()
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown modes {unknown}; choose from {MODES}")
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as closing:
        runner = Runner(config, Path(tmp), env_factory=env_factory)
        runner.run_dir.mkdir(parents=True, exist_ok=True)
        parts = runner._setup(closing)
        if not isinstance(parts.collector, DeviceCollector):
            raise ValueError("the env of this config is not a device env (backend=mjwarp)")
        setup_s = time.perf_counter() - t0
        prefill = _prefill(parts, max(parts.learner.batch_size, runner.threshold))
        times = {m: ModeTimes() for m in modes}
        k, done_rounds, per_round = prefill, 0, None
        for _ in range(rounds):
            if deadline_s and per_round and time.perf_counter() - t0 + per_round > deadline_s:
                break
            start = time.perf_counter()
            for mode in modes:
                _iterations(parts, mode, iterations, k, times[mode])
                k += iterations
            done_rounds += 1
            per_round = time.perf_counter() - start
        info = dict(runner.info.training_config)
        result: dict[str, Any] = {
            "device": runner.info.device,
            "num_envs": config.run.num_envs,
            "updates_per_step": config.update.updates_per_step,
            "batch_size": config.replay.batch_size,
            "path": info.get("executor"),
            "env_step": info.get("env_step"),
            "iterations_per_mode_per_round": iterations,
            "rounds": done_rounds,
            "setup_s": round(setup_s, 2),
            "startup": runner.info.startup,
            "modes": {m: t.summary() for m, t in times.items()},
        }
    result["ratios"] = _ratios(result["modes"])
    return result


def _ratios(modes: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Each mode's iteration / (env step + learner), the device times of the serial mode
    (else of env_only and learner_only)."""
    serial = modes.get("serial", {})
    env = serial.get("env_step_ms_median") or modes.get("env_only", {}).get("env_step_ms_median")
    learner = serial.get("learner_ms_median") or modes.get("learner_only", {}).get(
        "learner_ms_median"
    )
    if not env or not learner:
        return {}
    out = {"env_step_plus_learner_ms": round(env + learner, 3)}
    for mode, m in modes.items():
        it = m.get("iter_ms_median")
        if it is not None and math.isfinite(it):
            out[mode] = round(it / (env + learner), 3)
    return out


def write(result: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1))


def table(result: dict[str, Any]) -> str:
    lines = [
        f"{result['num_envs']} worlds, u{result['updates_per_step']}, batch "
        f"{result['batch_size']}, {result['path']}, env step {result['env_step']}; "
        f"{result['rounds']} rounds x {result['iterations_per_mode_per_round']} iterations "
        f"per mode; {result['device'].get('gpu', result['device'].get('device'))}",
        "| mode | lane | n | iteration ms (median [p10-p90]) | env step ms | learner ms "
        "| iteration / (env step + learner) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for mode, m in result["modes"].items():
        lines.append(
            f"| {mode} | {m['lane']} | {m['n']} | {m['iter_ms_median']} [{m['iter_ms_p10']}-"
            f"{m['iter_ms_p90']}] | {m['env_step_ms_median']} | {m['learner_ms_median']} "
            f"| {result['ratios'].get(mode, '-')} |"
        )
    return "\n".join(lines)
