"""`python -m flashsac_bench.summary DIR...`: the medians of a run, or of every run under a
folder (a sweep dir, outputs/), printed as the table that leads a sweep's comparison.md
(analysis.compare.medians_table). It reads summary.json files and writes nothing.

Bad input (no such dir, no run under it, a bad option) is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

PROG = "flashsac_bench.summary"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """Bad options in one line (argparse's own prints the usage too)."""
        print(f"{PROG}: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(
        prog=f"python -m {PROG}",
        description="Print the medians of runs: a run dir, or every run under a folder.",
    )
    parser.add_argument("dirs", nargs="+", help="run dirs (with summary.json) or folders of them")
    args = parser.parse_args(argv)
    # Imported after the options are read: --help and bad options answer without pandas.
    from flashsac_bench.analysis.compare import comparison_frame, find_run_dirs, medians_table

    try:
        run_dirs = find_run_dirs(args.dirs)
    except OSError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 2
    frame = comparison_frame(run_dirs)
    if frame.empty:
        where = ", ".join(args.dirs)
        print(f"{PROG}: no readable summary.json under {where}", file=sys.stderr)
        return 2
    print(medians_table(frame), end="")
    print("ms per iteration: medians over each run's summary rows (summary.json)")
    return 0
