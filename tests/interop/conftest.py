"""tests/interop: cross-checks against unilab-rl 1.4.15 (skipped without it) and conversions."""

from __future__ import annotations
