#!/usr/bin/env python
"""Check that the fast paths compute the same numbers as eager (exit 1 if not).

CPU (CI):  python scripts/validate_numerics.py --device cpu --paths eager,compile --tiny
GPU:       python scripts/validate_numerics.py --device cuda --dtype bfloat16 \
               --paths eager,compile,cudagraph --batch-size 2048
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from flashsac_bench.bench.numerics import compare_paths
from flashsac_bench.bench.synthetic import Setup, parse_options


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--matmul-precision", default="highest", choices=["highest", "high"])
    ap.add_argument("--paths", default="eager,compile")
    ap.add_argument("--updates", default="2,8", help="updates_per_step values (pf 2)")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--num-envs", type=int, default=256)
    ap.add_argument("--tiny", action="store_true", help="small networks (fast CPU compile)")
    ap.add_argument("--output", type=Path, default=None, help="JSON report path")
    ap.add_argument(
        "--path-options", default="", help="PathConfig fields for every path, e.g. compile_rng=true"
    )
    ap.add_argument(
        "--gemm-align", type=int, default=0, help="matmul dim padding (0: 8 on CUDA, 1 on CPU)"
    )
    args = ap.parse_args(argv)
    paths = args.paths.split(",")
    if paths[0] != "eager":
        ap.error("--paths must start with eager (the reference)")
    reports = []
    for u in (int(x) for x in args.updates.split(",")):
        setup = Setup(
            batch_size=args.batch_size,
            updates_per_step=u,
            num_envs=args.num_envs,
            tiny=args.tiny,
            dtype=args.dtype,
            device=args.device,
            gemm_align=args.gemm_align,
            path_options=parse_options(args.path_options),
        )
        reports.append(compare_paths(setup, paths, args.iterations, args.matmul_precision))
    ok = all(r["ok"] for r in reports)
    summary = {"ok": ok, "argv": sys.argv, "reports": reports}
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(summary, indent=2))
    print(
        f"{'updates':>7} {'pair':>20} {'params':>9} {'buffers':>9} {'adam':>9} {'metrics':>9} "
        f"{'tol':>7}  ok   (lockstep, worst ||diff|| / ||movement|| per cycle)"
    )
    for r in reports:
        u = r["setup"]["updates_per_step"]
        for pair in r["pairs"]:
            w = pair["lockstep_worst_rel"]
            print(
                f"{u:>7} {' vs '.join(pair['pair']):>20} {w['parameters']:9.2e} "
                f"{w['bn_buffers']:9.2e} {w['optimizer_state']:9.2e} {w['metrics']:9.2e} "
                f"{pair['tolerance']['state_rel']:7.0e}  {pair['ok']}"
            )
            acc = pair["accuracy_vs_fp32_oracle"]
            if acc:
                print(
                    f"{'':>7} {'error vs fp32 oracle':>20} "
                    + " ".join(
                        f"{acc[k]['fast_err']:9.2e}"
                        for k in ("parameters", "bn_buffers", "optimizer_state", "metrics")
                    )
                    + f"  (eager: {max(v['eager_err'] for v in acc.values()):.2e}, worst ratio "
                    f"{max(v['ratio'] for v in acc.values()):.2f}, bound 1.5)"
                )
        failed = [c["check"] for c in r["checks"] if not c["ok"]]
        print(f"{u:>7} checks: {'all passed' if not failed else 'FAILED: ' + '; '.join(failed)}")
    print("NUMERICS", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
