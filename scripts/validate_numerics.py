#!/usr/bin/env python
"""Check that the fast paths compute the same numbers as eager (exit 1 if not).

CPU (CI):  python scripts/validate_numerics.py --device cpu --paths eager,compile --tiny
GPU:       python scripts/validate_numerics.py --device cuda --dtype bfloat16 \
               --paths eager,compile,cudagraph --batch-size 2048
"""

from __future__ import annotations

import argparse
from pathlib import Path

from flashsac_bench.bench.numerics import validate
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
    setups = [
        Setup(
            batch_size=args.batch_size,
            updates_per_step=u,
            num_envs=args.num_envs,
            tiny=args.tiny,
            dtype=args.dtype,
            device=args.device,
            gemm_align=args.gemm_align,
            path_options=parse_options(args.path_options),
        )
        for u in (int(x) for x in args.updates.split(","))
    ]
    return validate(setups, paths, args.iterations, args.matmul_precision, args.output)


if __name__ == "__main__":
    raise SystemExit(main())
