"""tests/interop: cross-checks against unilab-rl 1.4.15 (skipped without it) and conversions."""

from __future__ import annotations

import sys
from pathlib import Path

# The runner tests' fake env (runner_fakes) serves the resume test here too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runner"))
