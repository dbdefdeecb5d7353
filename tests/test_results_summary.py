"""docs/results.md's summary table and the README's H100 line, recomputed from the raw rows in
docs/results/, as tests/test_readme_results.py does for the README's H200 table.

Every H100 / H200 figure is the median over all recorded runs of its configuration, with its
range and n. Which runs a figure takes is written here once, as a rule over the rows (and, for
rows that carry no commit, the commit their folder's section in docs/results.md names).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import pytest

from lab.analysis.walk_utd import walk_median
from tests.test_readme_results import ROOT, cycle_rows, expected, ratio_pairs, spread

RESULTS = ROOT / "docs" / "results"

# The H100 learner rows: file -> the commit it ran (the device copy had no git history, so the
# rows' own commit field is empty; docs/results.md names it).
H100_LEARNER = {
    "product_check/2026-12-06-h100/learner_rep1.json": "c5456d6",
    "product_check/2026-12-06-h100/learner_rep2.json": "c5456d6",
    "product_check/2026-12-06-h100/learner_rep3.json": "c5456d6",
    "warp_loop_and_fused_learner/2026-12-06-h100/learner/learner_b256.json": "b8823f2",
    "warp_loop_and_fused_learner/2026-12-06-h100/learner/learner_b2048_u16.json": "b8823f2",
    "gpu_tests/2026-12-07-h100-d/learner/learner_b256.json": "a320900",
    "gpu_tests/2026-12-07-h100-d/learner/learner_b2048_u16.json": "a320900",
    "gpu_tests/2026-12-07-h100-e/learner/det_b2048_u16.json": "33c3373",
}
# Eager's backward runs through the autograd engine from 894c03e on: eager rows of an earlier
# commit timed another implementation. The compiled paths' math is the same in both commits.
EAGER_TODAY = {"b8823f2", "a320900"}

# preset -> the row files of the walks its summary cell takes (every run of the preset as it is).
H100_WALKS = {
    "g1_walk_fast": ["product_check/2026-12-06-h100/walk_utd.json"],
    "g1_walk_warp": [
        "warp_loop_and_fused_learner/2026-12-06-h100/walk/walk_utd.json",
        "gpu_tests/2026-12-07-h100-d/walk/walk_utd.json",
    ],
}
# The H100 env rows: the call after the capture fix (the rows before it stepped eagerly).
H100_ENV = "mjwarp_check/2026-12-06-h100"


def h100_rows() -> list[dict[str, Any]]:
    rows = []
    for rel, commit in H100_LEARNER.items():
        for r in json.loads((RESULTS / rel).read_text()):
            assert "H100" in r["device"], rel
            rows.append({**r, "commit": commit, "file": rel})
    return rows


def _h100_default(r: dict[str, Any]) -> bool:
    """Today's defaults: no path option, no fused kernels (rows recorded while they existed)."""
    return not r.get("path_options") and not r.get("fused_kernels")


def h100_cycle(path: str, batch: int, ups: int, impl: str = "ours") -> list[float]:
    """Median ms of every H100 run of one learner configuration."""
    return [
        r["median_ms"]
        for r in h100_rows()
        if (r["impl"], r["path"], r["batch_size"], r["updates_per_step"])
        == (impl, path, batch, ups)
        and (impl != "ours" or _h100_default(r))
        and (impl != "ours" or path != "eager" or r["commit"] in EAGER_TODAY)
    ]


def h100_ratios(batch: int, ups: int) -> list[float]:
    """unilab-rl / our cudagraph, each pair from one process (same file and command)."""
    rows = h100_rows()
    out = []
    for u in rows:
        if (u["impl"], u["path"], u["batch_size"], u["updates_per_step"]) != (
            "unilab-rl",
            "cudagraph",
            batch,
            ups,
        ):
            continue
        out += [
            u["median_ms"] / r["median_ms"]
            for r in rows
            if (r["impl"], r["path"], r["batch_size"], r["updates_per_step"])
            == ("ours", "cudagraph", batch, ups)
            and _h100_default(r)
            and (r["file"], r["command"]) == (u["file"], u["command"])
        ]
    return out


def h100_walk(preset: str) -> str:
    runs = [r for f in H100_WALKS[preset] for r in json.loads((RESULTS / f).read_text())["runs"]]
    times = [r["since_start_s"] if r["reached"] else None for r in runs]
    return walk_median(times).text()


def h100_env(backend: str, envs: int) -> list[float]:
    file = {"mjwarp": "env_mjwarp.json", "mujoco": "env_cpu.json"}[backend]
    rows = json.loads((RESULTS / H100_ENV / file).read_text())["rows"]
    return [
        r["env_steps_per_s_median"]
        for r in rows
        if r.get("backend") == backend and r["num_envs"] == envs and r["env_steps_per_s_median"]
    ]


def _k(values: list[float]) -> str:
    """Env-steps/s in thousands: "435.1k, n=1"."""
    return spread([v / 1e3 for v in values], "k")


def summary_cells() -> dict[str, list[str]]:
    """measure (the row's first cell, up to its first comma or bracket) -> the figures its
    row must state."""
    return {
        "learner cycle, B=256 u8, cudagraph": [
            "H200: " + spread(_h200_cycle("cudagraph"), " ms"),
            "H100: " + spread(h100_cycle("cudagraph", 256, 8), " ms"),
            "H200: " + spread(_h200_cycle("unilab-rl 1.4.15"), " ms"),
            "H100: " + spread(h100_cycle("cudagraph", 256, 8, impl="unilab-rl"), " ms"),
            "H200: " + expected("unilab-rl / cudagraph, one process", "cudagraph"),
            "H100: " + spread(h100_ratios(256, 8), "x"),
        ],
        "learner cycle, B=2048 u16, cudagraph": [
            "H100: " + spread(h100_cycle("cudagraph", 2048, 16), " ms"),
        ],
        "learner cycle, B=256 u2 / u8, eager": [
            "H100: u2 " + spread(h100_cycle("eager", 256, 2), " ms"),
            "; u8 " + spread(h100_cycle("eager", 256, 8), " ms"),
        ],
        "time to walk, `g1_walk_fast`": [
            "H200: " + expected("time to walk, `g1_walk_fast` (s)", "cudagraph"),
            "H100: " + h100_walk("g1_walk_fast"),
        ],
        "time to walk, `g1_walk_warp`": ["H100: " + h100_walk("g1_walk_warp")],
        "env-steps/s, full G1 task": [
            "MuJoCo Warp on an H100 at 4096 worlds: " + _k(h100_env("mjwarp", 4096)),
            "15 workers at 1024 envs: " + _k(h100_env("mujoco", 1024)),
        ],
    }


def _h200_cycle(column: str) -> list[float]:
    return [r["median_ms"] for r in cycle_rows(column)]


def summary_rows() -> dict[str, str]:
    """docs/results.md's summary table: {measure: the whole row}."""
    lines = (ROOT / "docs" / "results.md").read_text().splitlines()
    start = lines.index("## Summary: today's figure for each measure")
    rows = {}
    for ln in lines[start:]:
        if ln.startswith("| ") and not ln.startswith("| measure"):
            rows[ln.strip("|").split("|")[0].strip()] = ln
        elif rows and not ln.startswith("|"):
            break
    return rows


SUMMARY = summary_cells()


@pytest.mark.parametrize("measure", sorted(SUMMARY))
def test_summary_row_states_the_median_of_every_run(measure: str) -> None:
    rows = summary_rows()
    row = next((r for label, r in rows.items() if label.startswith(measure)), None)
    assert row is not None, f"no summary row for {measure!r}"
    missing = [want for want in SUMMARY[measure] if want not in row]
    assert not missing, f"{measure}: the row does not state {missing}"


def readme_h100_line() -> str:
    """The README's results bullet that starts "On an H100", joined into one line."""
    text = (ROOT / "README.md").read_text()
    start = text.index("- On an H100")
    end = text.index("\n- ", start + 1)
    return " ".join(text[start:end].split())


def test_the_readme_h100_line_states_the_median_of_every_run() -> None:
    line = readme_h100_line()
    for label, figure in (
        ("cudagraph B=256 u8", spread(h100_cycle("cudagraph", 256, 8), " ms")),
        ("unilab-rl / cudagraph", spread(h100_ratios(256, 8), "x") + " in one process"),
        ("`g1_walk_fast`", h100_walk("g1_walk_fast")),
        ("`g1_walk_warp`", h100_walk("g1_walk_warp")),
    ):
        # the figure within the label's clause (up to the next ";")
        assert re.search(re.escape(label) + "[^;]*" + re.escape(figure), line), (label, figure)


def test_the_h100_rule_takes_every_run() -> None:
    # the cudagraph cell takes the product check's three processes and the two later ones
    assert len(h100_cycle("cudagraph", 256, 8)) == 5
    # eager: only the runs of today's implementation
    assert h100_cycle("eager", 256, 8) == [107.643, 124.6396]
    assert len(h100_ratios(256, 8)) == 4
    assert len(json.loads((RESULTS / H100_WALKS["g1_walk_warp"][1]).read_text())["runs"]) == 3
    assert ratio_pairs()  # the H200 pairs are read by the same rule as the README's


def test_a_new_h100_run_changes_the_expected_figure(monkeypatch) -> None:
    before = spread(h100_cycle("cudagraph", 256, 8), " ms")
    rows = h100_rows()
    one = next(
        r
        for r in rows
        if (r["path"], r["batch_size"], r["updates_per_step"]) == ("cudagraph", 256, 8)
    )
    extra = dict(one, median_ms=9.0)
    monkeypatch.setattr(sys.modules[__name__], "h100_rows", lambda: [*rows, extra])
    assert spread(h100_cycle("cudagraph", 256, 8), " ms") != before
