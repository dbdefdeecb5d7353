#!/usr/bin/env python
"""Kernels per update cycle and where the GPU time goes (torch.profiler, CUDA activity).

python scripts/profile_cycle.py --batch-size 256 --updates 8 --path cudagraph --top 25

Eager's launch count on any device (the aten ops per cycle, ours and unilab-rl 1.4.15's eager):

python scripts/profile_cycle.py --count-ops --device cpu --dtype float32 --batch-size 32 --updates 2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _repo  # noqa: F401  (the repository root on sys.path: lab/ is not installed)

from lab.bench.kernel_profile import count_eager_ops, profile_cycle
from lab.bench.synthetic import Setup, add_path_arguments, parse_options


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument(
        "--count-ops", action="store_true", help="aten ops per eager cycle (any device)"
    )
    ap.add_argument("--tiny", action="store_true", help="small networks")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--updates", type=int, default=8)
    ap.add_argument("--path", default="cudagraph")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--cycles", type=int, default=10)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--inductor-option", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument("--host-top", type=int, default=0, help="also cProfile the host: top N")
    add_path_arguments(ap)
    args = ap.parse_args(argv)
    options = {}
    for item in args.inductor_option:
        key, value = item.split("=", 1)
        options[key] = json.loads(value)
    setup = Setup(
        batch_size=args.batch_size,
        updates_per_step=args.updates,
        capacity_batches=4,
        dtype=args.dtype,
        device=args.device,
        tiny=args.tiny,
        gemm_align=args.gemm_align,
        path_options=parse_options(args.path_options),
    )
    if args.count_ops:
        report = count_eager_ops(setup, args.cycles)
        print(json.dumps(report, indent=2))
        if args.output:
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(json.dumps(report, indent=2) + "\n")
        return 0
    return profile_cycle(
        setup, args.path, options, args.cycles, args.top, args.output, host_top=args.host_top
    )


if __name__ == "__main__":
    raise SystemExit(main())
