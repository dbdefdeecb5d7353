#!/usr/bin/env python
"""Kernels per update cycle and where the GPU time goes (torch.profiler, CUDA activity).

python scripts/profile_cycle.py --batch-size 256 --updates 8 --path cudagraph --top 25
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from flashsac_bench.bench.learner_bench import time_calls
from flashsac_bench.bench.synthetic import Setup, build_learner, parse_options


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--updates", type=int, default=8)
    ap.add_argument("--path", default="cudagraph")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--cycles", type=int, default=10)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--inductor-option", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument(
        "--path-options", default="", help="PathConfig fields for every path, e.g. compile_rng=true"
    )
    ap.add_argument(
        "--gemm-align", type=int, default=0, help="matmul dim padding (0: 8 on CUDA, 1 on CPU)"
    )
    args = ap.parse_args(argv)
    options = {}
    for item in args.inductor_option:
        key, value = item.split("=", 1)
        options[key] = json.loads(value)
    torch.set_float32_matmul_precision("high")
    setup = Setup(
        batch_size=args.batch_size,
        updates_per_step=args.updates,
        capacity_batches=4,
        dtype=args.dtype,
        device="cuda",
        gemm_align=args.gemm_align,
        path_options=parse_options(args.path_options),
    )
    learner = build_learner(setup, args.path, inductor_options=options)
    learner.warmup()
    wall = time_calls(learner.update, learner.device, 50, 5)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.cycles):
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
    n = args.cycles
    ranked = sorted(per_name.items(), key=lambda kv: -kv[1][1])
    top = ranked[: args.top]
    report = {
        "setup": {
            "batch_size": args.batch_size,
            "updates": args.updates,
            "path": args.path,
            "inductor_options": options,
        },
        "wall_median_ms": statistics.median(wall),
        "kernels_per_cycle": kernels / n,
        "gpu_ms_per_cycle": gpu_us / n / 1e3,
        "us_per_kernel": gpu_us / max(kernels, 1),
        "top": [
            {"name": k[:120], "launches_per_cycle": v[0] / n, "us_per_cycle": v[1] / n}
            for k, v in top
        ],
        "all_kernels": [
            {"name": k[:200], "launches_per_cycle": v[0] / n, "us_per_cycle": v[1] / n}
            for k, v in ranked
        ],
    }
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"B={args.batch_size} u{args.updates} {args.path} {options}: "
        f"wall {report['wall_median_ms']:.3f} ms, {report['kernels_per_cycle']:.0f} "
        f"kernels/cycle, {report['gpu_ms_per_cycle']:.3f} GPU ms/cycle, "
        f"{report['us_per_kernel']:.2f} us/kernel"
    )
    for row in report["top"]:
        print(f"{row['us_per_cycle']:9.1f} us {row['launches_per_cycle']:6.1f}x  {row['name']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
