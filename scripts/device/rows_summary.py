#!/usr/bin/env python
"""Print the learner rows of bench_learner.py JSON files (missing files are skipped) and, unless
OUT is '-', write them combined to OUT. Used by the learner suites' closing summaries.

    python3 scripts/device/rows_summary.py OUT ROWS.json [ROWS.json ...]
"""

from __future__ import annotations

import json
import pathlib
import sys


def main(argv: list[str]) -> int:
    out, files = argv[0], [pathlib.Path(p) for p in argv[1:]]
    rows = [r for p in files if p.exists() for r in json.loads(p.read_text())]
    if out != "-":
        pathlib.Path(out).write_text(json.dumps(rows, indent=2) + "\n")
    for r in rows:
        opts = ",".join(f"{k}={v}" for k, v in (r["path_options"] or {}).items()) or "defaults"
        print(
            f"{r['impl']:>9} {r['path']:>9} B={r['batch_size']:<5} u{r['updates_per_step']:<2} "
            f"{r['median_ms']:8.3f}  p90 {r['p90_ms']:8.3f}  cold {r['cold_start_s']:6.1f}  {opts}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
