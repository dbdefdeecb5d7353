#!/usr/bin/env python
"""Rebuild comparison.csv / comparison.md / comparison.png from run dirs or sweep dirs.

python scripts/compare.py outputs/multirun/2026-01-01/12-00-00
python scripts/compare.py RUN_DIR_A RUN_DIR_B --out /tmp/cmp
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from flashsac_bench.analysis.compare import report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/compare.py",
        description="Rebuild comparison.csv/.md/.png from run dirs or sweep dirs.",
    )
    parser.add_argument("dirs", nargs="+", help="run dirs (with summary.json) or sweep dirs")
    parser.add_argument(
        "--out",
        help="output folder (default: the single dir given, else the current directory)",
    )
    args = parser.parse_args(argv)
    return report(args.dirs, args.out)


if __name__ == "__main__":
    sys.exit(main())
