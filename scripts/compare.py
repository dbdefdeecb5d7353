#!/usr/bin/env python
"""Rebuild comparison.csv / comparison.md / comparison.png from run dirs or sweep dirs.

python scripts/compare.py outputs/multirun/2026-01-01/12-00-00
python scripts/compare.py RUN_DIR_A RUN_DIR_B --out /tmp/cmp
"""

from __future__ import annotations

import sys

from flashsac_bench.runner.compare import main

if __name__ == "__main__":
    sys.exit(main())
