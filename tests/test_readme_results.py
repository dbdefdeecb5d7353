"""The README's results table (and its copy atop docs/results.md), recomputed from the raw rows
it cites in docs/results/.

Every cell is a median over all selected runs with its range and n (time to walk: a run that
did not walk counts, analysis.walk_utd.walk_median); a cell reads "not measured" exactly where
no row is selected. Which runs a cell takes is written here once, as a rule over the rows' own
fields, and in docs/results.md in words: a new row that fits a rule changes the figure, and
this test then fails until the README says so.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest

from lab.analysis.walk_utd import walk_median

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"

# Learner rows that ran today's defaults: commit -> path -> the path_options that equal them
# in that commit. At cf03d86 the cudagraph path still ran pure steps by default, so there its
# writing-steps variant is today's default; from 76040f8 on the defaults are today's.
TODAY = {
    "cf03d86": {"compile": {}, "cudagraph": {"functional_steps": False}},
    **{c: {"compile": {}, "cudagraph": {}} for c in ("76040f8", "6db6213", "929622c", "ca61beb")},
}


def _learner_rows() -> list[dict[str, Any]]:
    rows = [
        *json.loads((RESULTS / "h200_learner.json").read_text()),
        *json.loads((RESULTS / "h200_learner_scaling.json").read_text()),
    ]
    return [r for r in rows if (r["batch_size"], r["updates_per_step"]) == (256, 8)]


def _default_env(r: dict[str, Any]) -> bool:
    return all(v == "unset" for v in (r.get("environment") or {}).values())


def _today(r: dict[str, Any]) -> bool:
    want = TODAY.get(r.get("commit"), {}).get(r["path"])
    return r["impl"] == "ours" and want == (r.get("path_options") or {}) and _default_env(r)


def cycle_rows(column: str) -> list[dict[str, Any]]:
    """B=256 u8 learner cycle rows of one README column."""
    rows = _learner_rows()
    if column == "unilab-rl 1.4.15":  # the package is fixed: every run of its graph counts
        return [r for r in rows if r["impl"] == "unilab-rl" and r["path"] == "cudagraph"]
    if column == "eager":  # eager never ran at today's defaults: its runs with today's padding
        return [
            r for r in rows if r["impl"] == "ours" and r["path"] == "eager" and r["gemm_align"] == 8
        ]
    return [r for r in rows if r["path"] == column and _today(r)]


def ratio_pairs() -> list[float]:
    """unilab-rl / cudagraph, each from one process (same commit and command)."""
    rows = _learner_rows()
    out = []
    for u in (r for r in rows if r["impl"] == "unilab-rl" and r["path"] == "cudagraph"):
        same = [
            r
            for r in cycle_rows("cudagraph")
            if (r["commit"], r["command"]) == (u.get("commit"), u["command"])
        ]
        out += [u["median_ms"] / r["median_ms"] for r in same]
    return out


# time to walk: (preset's envs, critic updates per iteration) of each README row
PRESETS = {"g1_walk_h200": (1024, 8), "g1_walk_fast": (512, 16)}


def walk_rows(preset: str, path: str) -> list[dict[str, Any]]:
    """Every measured run of the preset's setting on `path`, its envs in the default 15 worker
    processes (the collector as it is now) and no removed lever on. A run that did not walk
    counts as "not within" its limit, whatever that limit was: none is dropped."""
    envs, ups = PRESETS[preset]
    rows = json.loads((RESULTS / "h200_learning.json").read_text())["time_to_threshold"]
    return [
        r
        for r in rows
        if r.get("measured")
        and (r["num_envs"], r["updates_per_step"], r["path"]) == (envs, ups, path)
        and "15 worker processes" in (r.get("env") or "")
        and not r.get("aligned_layout")
        and not r.get("prefill_during_cold_start")
    ]


def _limit(r: dict[str, Any]) -> float | None:
    m = re.search(r"run\.time_limit_s=([\d.]+)", r.get("stopped_by") or "")
    return float(m.group(1)) if m else None


def _num(x: float) -> str:
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def spread(values: list[float], unit: str = "") -> str:
    """ "3.98 [3.92-4.06], n=5"; one run: "828.1, n=1"; none: "not measured"."""
    if not values:
        return "not measured"
    med = _num(statistics.median(values)) + unit
    if len(values) == 1:
        return f"{med}, n=1"
    return f"{med} [{_num(min(values))}-{_num(max(values))}], n={len(values)}"


def expected(label: str, column: str) -> str:
    if label.startswith("learner cycle"):
        return spread([r["median_ms"] for r in cycle_rows(column)])
    if label.startswith("unilab-rl / cudagraph"):
        return spread(ratio_pairs(), "x") if column == "cudagraph" else "–"
    preset = re.search(r"`(\w+)`", label).group(1)
    if column == "unilab-rl 1.4.15":
        return "–"
    rows = walk_rows(preset, column)
    if not rows:
        return "not measured"
    times = [r["since_start_s"] if r["reached"] else None for r in rows]
    return walk_median(times, [None if r["reached"] else _limit(r) for r in rows]).text()


def results_table(doc: str) -> dict[tuple[str, str], str]:
    """The table whose header's first cell starts with "H200": {(row label, column): cell}."""
    lines = (ROOT / doc).read_text().splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith("| H200")), None)
    if start is None:
        return {}
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    cells = {}
    for ln in lines[start + 2 :]:
        if not ln.startswith("|"):
            break
        row = [c.strip() for c in ln.strip("|").split("|")]
        for column, cell in zip(header[1:], row[1:], strict=True):
            cells[(row[0], column)] = cell
    return cells


# The README's table, and the same table at the top of docs/results.md.
DOCS = ("README.md", "docs/results.md")
TABLE = results_table("README.md")
CELLS = [(doc, label, column) for doc in DOCS for label, column in sorted(results_table(doc))]


@pytest.mark.parametrize("doc,label,column", CELLS, ids=lambda x: str(x))
def test_table_cell_is_its_raw_rows(doc, label, column):
    assert results_table(doc)[(label, column)] == expected(label, column)


@pytest.mark.parametrize("doc", DOCS)
def test_the_table_has_every_row_and_column(doc):
    table = results_table(doc)
    labels = {label for label, _ in table}
    assert {lb.split(" (")[0] for lb in labels} >= {
        "learner cycle, B=256 u8",
        "unilab-rl / cudagraph, one process",
        "time to walk, `g1_walk_h200`",
        "time to walk, `g1_walk_fast`",
    }
    assert {c for _, c in table} == {"eager", "compile", "cudagraph", "unilab-rl 1.4.15"}


def test_a_changed_row_changes_the_expected_cell(monkeypatch):
    # the check can fail: one more failed walk moves the g1_walk_fast figure
    label = next(lb for lb, _ in TABLE if "g1_walk_fast" in lb)
    before = expected(label, "cudagraph")
    rows = walk_rows("g1_walk_fast", "cudagraph")
    extra = dict(rows[0], reached=False, stopped_by="run.time_limit_s=80 reached")
    monkeypatch.setattr(sys.modules[__name__], "walk_rows", lambda preset, path: [*rows, extra])
    after = expected(label, "cudagraph")
    assert before != after and "1 of" in after


def test_the_readme_is_a_page() -> None:
    """Pitch, install, test, run, one results table, links: at most 90 lines (history and
    per-run figures live in docs/results.md)."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 90, f"README.md has {len(lines)} lines"
