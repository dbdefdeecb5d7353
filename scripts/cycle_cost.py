#!/usr/bin/env python
"""Floors of one update cycle from its matmul FLOPs and memory traffic (runs on the CPU).

  python scripts/cycle_cost.py --batch-sizes 256,2048 --updates 8 \
      --tflops 788 --bandwidth 4.3 --output docs/results/cycle_cost.json

--tflops / --bandwidth: the device's measured bf16 matmul rate (TFLOP/s) and copy bandwidth
(TB/s, read + write); the defaults are the H200 figures measured on these machines
(/work/.library/device/KINDS.md: 769-798 TFLOP/s on an 8192^3 bf16 product, ~4.3 TB/s).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from flashsac_bench.bench.cost_model import cost_table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--batch-sizes", default="256,2048")
    ap.add_argument("--updates", default="8")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--gemm-align", type=int, default=8)
    ap.add_argument("--tflops", type=float, default=788.0)
    ap.add_argument("--bandwidth", type=float, default=4.3)
    ap.add_argument("--tiny", action="store_true", help="small networks (fast smoke run)")
    ap.add_argument(
        "--aligned-layout",
        action="store_true",
        help="path.aligned_layout: every layout group starts on the --gemm-align boundary",
    )
    ap.add_argument("--output", type=Path, default=None)
    args = ap.parse_args(argv)
    return cost_table(
        [int(x) for x in args.batch_sizes.split(",")],
        [int(x) for x in args.updates.split(",")],
        args.dtype,
        args.gemm_align,
        args.tflops,
        args.bandwidth,
        args.tiny,
        args.output,
        (("aligned_layout", True),) if args.aligned_layout else (),
    )


if __name__ == "__main__":
    raise SystemExit(main())
