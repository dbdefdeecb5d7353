"""Where two runs of one seed stop logging the same numbers (timings ignored).

    python scripts/first_divergence.py RUN_DIR_A RUN_DIR_B

Exit 0 when every common iteration's metrics agree bit for bit, 1 at a difference (printed:
the iteration, whether it had updates, each differing metric), 2 on unreadable input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flashsac_bench.analysis.divergence import describe


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("run_a", type=Path)
    ap.add_argument("run_b", type=Path)
    args = ap.parse_args(argv)
    try:
        same, text = describe(args.run_a, args.run_b)
    except ValueError as err:
        print(f"first_divergence.py: {err}", file=sys.stderr)
        return 2
    print(text)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
