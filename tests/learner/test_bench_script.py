"""scripts/bench_learner.py on the CPU: every (align, variant) row, labelled, in the JSON."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_learner_times_every_variant_side_by_side(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts/bench_learner.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "rows.json"
    argv = ["--device", "cpu", "--dtype", "float32", "--tiny", "--batch-sizes", "64"]
    argv += ["--updates", "2", "--paths", "eager", "--eager-cycles", "2", "--warmup", "1"]
    argv += ["--gemm-align", "1,8", "--path-variants", "base;projection_gather=true"]
    assert bench.main([*argv, "--output", str(out)]) == 0
    rows = json.loads(out.read_text())
    got = {(r["gemm_align"], json.dumps(r["path_options"])) for r in rows}
    assert got == {(a, json.dumps(o)) for a in (1, 8) for o in ({}, {"projection_gather": True})}
    assert all(r["impl"] == "ours" and r["cycles"] == 2 and r["median_ms"] > 0 for r in rows)
    table = capsys.readouterr().out.split("ratios within this run")[1]
    assert table.count("projection_gather=True") == 2 and table.count("base") == 2
