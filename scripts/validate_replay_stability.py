#!/usr/bin/env python
"""1000 replays of the captured update cycle: memory, step counts, metric slots (CUDA only).

  python scripts/validate_replay_stability.py --replays 1000 --batch-size 2048 --updates 8 \
      --output replay_b2048_u8.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _repo  # noqa: F401  (the repository root on sys.path: lab/ is not installed)
import torch

from lab.bench.stability import validate
from lab.bench.synthetic import Setup, parse_options


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--replays", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=2048)
    ap.add_argument("--updates", type=int, default=8)
    ap.add_argument("--policy-frequency", type=int, default=2)
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"])
    ap.add_argument("--num-envs", type=int, default=256)
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument(
        "--gemm-align", type=int, default=0, help="matmul dim padding (0: 8 on CUDA, 1 on CPU)"
    )
    ap.add_argument(
        "--path-options",
        default="",
        help="PathConfig fields, e.g. inductor_options.deterministic=true",
    )
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("validate_replay_stability: needs a CUDA device", file=sys.stderr)
        return 2
    setup = Setup(
        batch_size=args.batch_size,
        updates_per_step=args.updates,
        policy_frequency=args.policy_frequency,
        num_envs=args.num_envs,
        capacity_batches=4,
        dtype=args.dtype,
        device="cuda",
        gemm_align=args.gemm_align,
        path_options=parse_options(args.path_options),
    )
    return validate(setup, args.replays, args.output)


if __name__ == "__main__":
    raise SystemExit(main())
