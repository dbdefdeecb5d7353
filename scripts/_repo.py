"""Imported first by every script that uses the lab: puts the repository root on sys.path, so
`import lab` works from a clone (lab/ is not installed; the scripts run from scripts/)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
