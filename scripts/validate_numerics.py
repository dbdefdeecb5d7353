#!/usr/bin/env python
"""Check that the fast paths compute the same numbers as eager (exit 1 if not).

CPU (CI):  python scripts/validate_numerics.py --device cpu --paths eager,compile --tiny
GPU:       python scripts/validate_numerics.py --device cuda --dtype bfloat16 \
               --paths eager,compile,cudagraph --batch-size 2048
"""

from __future__ import annotations

import argparse
from pathlib import Path

import _repo  # noqa: F401  (the repository root on sys.path: lab/ is not installed)

from lab.bench.numerics import validate
from lab.bench.synthetic import add_setup_arguments, setup_from_args


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_setup_arguments(ap)
    ap.add_argument("--matmul-precision", default="highest", choices=["highest", "high"])
    ap.add_argument("--paths", default="eager,compile")
    ap.add_argument("--updates", default="2,8", help="updates_per_step values (pf 2)")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--output", type=Path, default=None, help="JSON report path")
    args = ap.parse_args(argv)
    paths = args.paths.split(",")
    if paths[0] != "eager":
        ap.error("--paths must start with eager (the reference)")
    setups = [setup_from_args(args, int(u)) for u in args.updates.split(",")]
    return validate(setups, paths, args.iterations, args.matmul_precision, args.output)


if __name__ == "__main__":
    raise SystemExit(main())
