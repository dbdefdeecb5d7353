"""eager vs compile on the CPU, through the validation script (its CI variant)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location(
        "validate_numerics", ROOT / "scripts/validate_numerics.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_eager_and_compile_agree_on_cpu(tmp_path):
    out = tmp_path / "numerics.json"
    argv = ["--device", "cpu", "--paths", "eager,compile", "--tiny", "--batch-size", "64"]
    rc = _script().main([*argv, "--num-envs", "16", "--iterations", "10", "--output", str(out)])
    report = json.loads(out.read_text())
    assert rc == 0 and report["ok"], report
    for r in report["reports"]:
        assert all(c["ok"] for c in r["checks"])  # same batches, exact step counts, ...
        (pair,) = r["pairs"]
        assert pair["pair"] == ["eager", "compile"]
        # fp32: one cycle of compiled arithmetic moves every tensor like eager does, to 5e-3 of
        # the movement (the script's justified tolerance) -- and the comparison itself ran.
        assert 0.0 <= max(pair["lockstep_worst_rel"].values()) <= 5e-3
