"""Kernels per update cycle and where the GPU time goes (scripts/profile_cycle.py): the CUDA
activity of a few cycles under torch.profiler, beside the wall-clock median of the same learner;
and, on any device, the aten ops per eager cycle, ours beside unilab-rl's eager mode."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode

from lab.bench.learner_bench import time_calls
from lab.bench.synthetic import Setup, build_learner


def profile_cycle(
    setup: Setup,
    path: str,
    options: dict,
    cycles: int,
    top: int,
    output: Path | None = None,
    host_top: int = 0,
) -> int:
    """Profile `cycles` update cycles of `path` (Inductor `options`), print the `top` kernels
    by GPU time and write the whole report to `output`; with `host_top`, also the host side
    (cProfile of the same cycles: where a host-bound path spends its launching time)."""
    torch.set_float32_matmul_precision("high")
    learner = build_learner(setup, path, inductor_options=options)
    learner.warmup()
    wall = time_calls(learner.update, learner.device, 50, 5)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(cycles):
            learner.update()
        torch.cuda.synchronize()
    per_name: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    kernels, gpu_us = 0, 0.0
    for evt in prof.events():
        if evt.device_type != torch.autograd.DeviceType.CUDA:
            continue
        dur = evt.device_time_total if hasattr(evt, "device_time_total") else evt.cuda_time_total
        kernels += 1
        gpu_us += dur
        per_name[evt.name][0] += 1
        per_name[evt.name][1] += dur
    n = cycles
    ranked = sorted(per_name.items(), key=lambda kv: -kv[1][1])
    leading = ranked[:top]
    report: dict[str, Any] = {
        "setup": {
            "batch_size": setup.batch_size,
            "updates": setup.updates_per_step,
            "path": path,
            "inductor_options": options,
        },
        "wall_median_ms": statistics.median(wall),
        "kernels_per_cycle": kernels / n,
        "gpu_ms_per_cycle": gpu_us / n / 1e3,
        "us_per_kernel": gpu_us / max(kernels, 1),
        "top": [
            {"name": k[:120], "launches_per_cycle": v[0] / n, "us_per_cycle": v[1] / n}
            for k, v in leading
        ],
        "all_kernels": [
            {"name": k[:200], "launches_per_cycle": v[0] / n, "us_per_cycle": v[1] / n}
            for k, v in ranked
        ],
    }
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"B={setup.batch_size} u{setup.updates_per_step} {path} {options} "
        f"wall {report['wall_median_ms']:.3f} ms, {report['kernels_per_cycle']:.0f} "
        f"kernels/cycle, {report['gpu_ms_per_cycle']:.3f} GPU ms/cycle, "
        f"{report['us_per_kernel']:.2f} us/kernel"
    )
    for row in report["top"]:
        print(f"{row['us_per_cycle']:9.1f} us {row['launches_per_cycle']:6.1f}x  {row['name']}")
    if host_top:
        print_host_profile(learner, cycles, host_top)
    return 0


def print_host_profile(learner, cycles: int, top: int) -> None:
    """cProfile of `cycles` update cycles: the `top` functions by own host time per cycle."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(cycles):
        learner.update()
    torch.cuda.synchronize()
    prof.disable()
    # pstats keeps its table in `stats`, which typeshed does not declare
    table: dict[Any, Any] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    rows = sorted(table.items(), key=lambda kv: -kv[1][2])[:top]  # by own time
    total = sum(v[2] for v in table.values())
    print(f"host: {total / cycles * 1e3:.3f} ms of profiled Python time per cycle; own time:")
    for (file, line, fn), (_, calls, own, cum, _) in rows:
        where = f"{Path(file).name}:{line}({fn})"
        print(
            f"{own / cycles * 1e3:8.3f} ms {calls / cycles:7.1f}x  cum {cum / cycles * 1e3:8.3f}"
            f"  {where[:100]}"
        )


class _OpCounter(TorchDispatchMode):
    """Counts the aten ops that compute (views and detaches aside): on a GPU in eager each is
    at least one kernel launch, so the count is the launch-bound eager cost's proxy."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0
        self.views = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.is_view or func in (torch.ops.aten.detach.default, torch.ops.aten.alias.default):
            self.views += 1
        else:
            self.ops += 1
        return func(*args, **(kwargs or {}))


def count_eager_ops(setup: Setup, cycles: int = 5) -> dict:
    """Aten ops and wall ms per eager cycle, ours and unilab-rl 1.4.15's eager mode (its
    per-update methods) on the same networks and batches, in this process."""
    from lab.bench.learner_bench import unilab_cycle

    learner = build_learner(setup, "eager")
    learner.warmup()
    out: dict[str, Any] = {"ours": _count(learner.update, learner.device, cycles)}
    try:
        theirs = unilab_cycle(setup, learner, eager=True)
    except ImportError as err:  # unilab-rl not installed: ours alone
        print(f"no unilab-rl ({err}): ours only")
    else:
        out["unilab-rl"] = _count(theirs, learner.device, cycles)
    return out


def _count(fn, device: torch.device, cycles: int) -> dict:
    fn()
    wall = time_calls(fn, device, cycles, 1)
    counter = _OpCounter()
    with counter:
        fn()
    return {"ops": counter.ops, "views": counter.views, "wall_median_ms": statistics.median(wall)}
