#!/usr/bin/env python
"""Does the update cycle repeat its bits? Replayed from a restored state, in a second learner of
the same process, and (with --compare) in another process. Exit 1 if any differs.

CPU (CI):  python scripts/validate_determinism.py --device cpu --tiny --paths eager,compile
GPU:       python scripts/validate_determinism.py --device cuda --dtype bfloat16 \\
               --batch-size 2048 --updates 16 --paths eager,compile,cudagraph --output a.json
           python scripts/validate_determinism.py ... --compare a.json   # a second process
"""

from __future__ import annotations

import argparse
from pathlib import Path

from flashsac_bench.bench.determinism import validate
from flashsac_bench.bench.synthetic import add_setup_arguments, setup_from_args


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_setup_arguments(ap)
    ap.add_argument("--paths", default="eager")
    ap.add_argument("--updates", type=int, default=2, help="updates_per_step (pf 2)")
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--output", type=Path, default=None, help="JSON fingerprints to write")
    ap.add_argument("--compare", type=Path, default=None, help="fingerprints of another process")
    args = ap.parse_args(argv)
    if args.compare is not None and not args.compare.is_file():
        ap.error(f"--compare {args.compare}: no such file")
    setup = setup_from_args(args, args.updates)
    return validate(setup, args.paths.split(","), args.cycles, args.output, args.compare)


if __name__ == "__main__":
    raise SystemExit(main())
