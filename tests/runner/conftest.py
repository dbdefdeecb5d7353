"""Fixtures of the runner tests (helpers live in runner_helpers, importable by name)."""

from __future__ import annotations
