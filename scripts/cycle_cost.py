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
import json
import sys
from pathlib import Path

from flashsac_bench.bench.cost_model import act_cost, cycle_cost
from flashsac_bench.bench.synthetic import Setup, build_learner


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--batch-sizes", default="256,2048")
    ap.add_argument("--updates", default="8")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--gemm-align", type=int, default=8)
    ap.add_argument("--tflops", type=float, default=788.0)
    ap.add_argument("--bandwidth", type=float, default=4.3)
    ap.add_argument("--tiny", action="store_true", help="small networks (fast smoke run)")
    ap.add_argument("--output", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = []
    for b in (int(x) for x in args.batch_sizes.split(",")):
        for u in (int(x) for x in args.updates.split(",")):
            setup = Setup(
                batch_size=b,
                updates_per_step=u,
                capacity_batches=2,
                tiny=args.tiny,
                dtype=args.dtype,
                device="cpu",
                gemm_align=args.gemm_align,
            )
            learner = build_learner(setup, "eager")
            cost = cycle_cost(learner)
            floors = cost.floors_ms(args.tflops, args.bandwidth)
            row = {
                "batch_size": b,
                "updates_per_step": u,
                "dtype": args.dtype,
                "gemm_align": args.gemm_align,
                "aten_ops": cost.ops,
                "matmuls": cost.matmuls,
                "matmul_gflop": round(cost.matmul_flops / 1e9, 3),
                "matmul_mb": round(cost.matmul_bytes / 1e6, 1),
                "other_mb": round(cost.other_bytes / 1e6, 1),
                "matmul_floor_ms": round(floors["matmul_ms"], 4),
                "traffic_floor_ms": round(floors["traffic_ms"], 4),
                "top_ops": dict(cost.by_op.most_common(12)),
            }
            act = act_cost(learner, setup.num_envs)  # the runner's per-iteration act
            row["act_aten_ops"] = act.ops
            row["act_top_ops"] = dict(act.by_op.most_common(10))
            rows.append(row)
            print(
                f"B={b:<5} u{u}: {cost.ops} aten ops ({cost.matmuls} matmuls), "
                f"{row['matmul_gflop']} GFLOP -> {row['matmul_floor_ms']:.3f} ms at "
                f"{args.tflops:g} TFLOP/s; {row['matmul_mb'] + row['other_mb']:.0f} MB moved "
                f"unfused -> {row['traffic_floor_ms']:.3f} ms at {args.bandwidth:g} TB/s",
                flush=True,
            )
            print(f"  act ({setup.num_envs} envs): {act.ops} aten ops {row['act_top_ops']}")
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        report = {"argv": sys.argv, "tflops": args.tflops, "bandwidth_tb_s": args.bandwidth}
        args.output.write_text(json.dumps({**report, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
