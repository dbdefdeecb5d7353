"""docs/reliability.md lists every guarantee beside the test that checks it: each test it names
(`path::test`, or `::test` continuing the last path named in its cell) exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def test_every_test_the_guarantees_name_exists():
    text = (REPO / "docs" / "reliability.md").read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and ln.count("|") >= 3]
    named = 0
    for row in rows:
        cell = row.rstrip().rstrip("|").rsplit("|", 1)[-1]
        path: Path | None = None
        for ref in re.findall(r"`([^`]+)`", cell):
            file, _, test = ref.partition("::")
            if file:
                path = REPO / file if file.startswith("tests/") else (path or REPO).parent / file
                assert path.exists(), f"{ref}: no such file ({row[:60]})"
            if test:
                assert path is not None, ref
                assert test.split("[")[0] in _test_names(path), f"{path.name}::{test} is missing"
                named += 1
    assert named >= 20
