#!/usr/bin/env python
"""Learner-only cycle time: batch sizes x update ratios x paths (+ upstream unilab-rl).

  python scripts/bench_learner.py --device cuda --dtype bfloat16 --batch-sizes 256,2048 \
      --updates 2,8 --paths eager,compile,cudagraph --reference unilab-rl \
      --output docs/results/h200_learner.json

Rows are appended to --output (a JSON list) as they finish, so a cut-off run keeps its rows.
Ratios are printed only between rows measured in this process.

Batch-size scaling: u8 at B = 256 ... 8192, ours compile + cudagraph and unilab-rl,
one process, rows + a log-log plot (the plot needs matplotlib; without it, make the plot later
from the rows with --plot-from):

  python scripts/bench_learner.py --scaling --cycles 30 --deadline-s 300 \
      --output docs/results/h200_learner_scaling.json --plot docs/results/h200_learner_scaling.png
  python scripts/bench_learner.py --plot-from docs/results/h200_learner_scaling.json \
      --plot docs/results/h200_learner_scaling.png
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import _repo  # noqa: F401  (the repository root on sys.path: lab/ is not installed)
import torch

from lab.bench.learner_grid import run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"])
    ap.add_argument("--matmul-precision", default="high", choices=["highest", "high"])
    ap.add_argument("--batch-sizes", default="256,2048")
    ap.add_argument("--updates", default="2,8")
    ap.add_argument("--policy-frequency", type=int, default=2)
    ap.add_argument("--paths", default="eager,compile,cudagraph")
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--eager-cycles", type=int, default=30, help="fewer for the slow eager path")
    ap.add_argument("--reference", choices=["none", "unilab-rl"], default="none")
    ap.add_argument("--reference-configs", default="all", help='"all" or e.g. "2048x8,256x8"')
    ap.add_argument(
        "--gemm-align",
        default="0",
        help="matmul dim padding; a list times each side by side (1,8); 0: 8 on CUDA, 1 on CPU",
    )
    ap.add_argument(
        "--path-variants",
        default="",
        help="';'-separated PathConfig option sets timed side by side, e.g. "
        "'base;inductor_options.max_autotune=true' ('base' or '' = defaults)",
    )
    ap.add_argument("--tiny", action="store_true", help="small networks (CPU smoke test)")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument(
        "--scaling",
        action="store_true",
        help="preset: --batch-sizes 256,1024,2048,4096,8192 --updates 8 --paths compile,cudagraph "
        "--reference unilab-rl --reference-configs all",
    )
    ap.add_argument(
        "--deadline-s",
        type=float,
        default=0.0,
        help="start no new configuration of ours after this many seconds (0: no limit); the "
        "reference of a (B, u) still runs once its first variant has",
    )
    ap.add_argument("--plot", type=Path, default=None, help="PNG: median ms vs batch size")
    ap.add_argument("--plot-from", type=Path, default=None, help="rows JSON: only make --plot")
    args = ap.parse_args(argv)
    if args.plot_from and not args.plot:
        ap.error("--plot-from needs --plot")
    if args.scaling:
        args.batch_sizes, args.updates = "256,1024,2048,4096,8192", "8"
        args.paths = "compile,cudagraph"
        args.reference, args.reference_configs = "unilab-rl", "all"
    if args.reference == "unilab-rl" and importlib.util.find_spec("uni_rl") is None:
        ap.error("--reference unilab-rl: not installed; pip install --no-deps unilab-rl==1.4.15")
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
