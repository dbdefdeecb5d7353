"""Time to walk per update-to-data setting from g1_walk_h200 run dirs.

    python scripts/walk_utd.py RUN_DIR [RUN_DIR ...] --out docs/results/walk_utd/<date>

Writes walk_utd.json (per run and per setting), walk_utd.md (the tables) and walk_utd.png.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _repo  # noqa: F401  (the repository root on sys.path: lab/ is not installed)

from lab.analysis.walk_utd import report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("run_dirs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    missing = [d for d in args.run_dirs if not (d / "summary.json").is_file()]
    if missing:
        print(f"walk_utd.py: {missing[0]} holds no summary.json", file=sys.stderr)
        return 2
    report(args.run_dirs, args.out)
    print((args.out / "walk_utd.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
