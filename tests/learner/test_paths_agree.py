"""eager vs compile on the CPU, through the validation script (its CI variant)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _validate_numerics(argv: list[str]) -> int:
    script = ROOT / "scripts/validate_numerics.py"
    return subprocess.run([sys.executable, str(script), *argv]).returncode


@pytest.mark.slow
def test_eager_and_compile_agree_on_cpu(tmp_path):
    out = tmp_path / "numerics.json"
    argv = ["--device", "cpu", "--paths", "eager,compile", "--tiny", "--batch-size", "64"]
    rc = _validate_numerics([*argv, "--num-envs", "16", "--iterations", "10", "--output", str(out)])
    report = json.loads(out.read_text())
    assert rc == 0 and report["ok"], report
    for r in report["reports"]:
        assert all(c["ok"] for c in r["checks"])  # same batches, exact step counts, ...
        (pair,) = r["pairs"]
        assert pair["pair"] == ["eager", "compile"]
        # fp32: one cycle of compiled arithmetic moves every tensor like eager does, to 5e-3 of
        # the movement (the script's justified tolerance) -- and the comparison itself ran.
        assert 0.0 <= max(pair["lockstep_worst_rel"].values()) <= 5e-3


def _bf16_compare(monkeypatch, sabotage: float) -> dict:
    """eager bf16 vs a second eager bf16 learner named 'compile' whose critic steps are scaled by
    1 + sabotage (a wrong-step-size bug), judged against the fp32 oracle."""
    import torch

    from lab.bench import numerics
    from lab.bench.synthetic import Setup

    real_build = numerics.build_learner

    def build(setup, path):
        learner = real_build(setup, "eager")
        if path == "compile" and sabotage:
            update, s = learner.update, learner.state

            def scaled_update():
                before = s.critic_params.clone()
                update()
                with torch.no_grad():
                    s.critic_params.add_(sabotage * (s.critic_params - before))

            learner.update = scaled_update
        return learner

    monkeypatch.setattr(numerics, "build_learner", build)
    setup = Setup(batch_size=64, updates_per_step=2, num_envs=16, tiny=True, dtype="bfloat16")
    return numerics.compare_paths(setup, ["eager", "compile"], iterations=3, burn_in=2)


def test_bf16_accuracy_check_passes_equal_arithmetic_and_fails_a_wrong_step(monkeypatch):
    same = _bf16_compare(monkeypatch, 0.0)
    (pair,) = same["pairs"]
    assert pair["ok"] and same["ok"]
    acc = pair["accuracy_vs_fp32_oracle"]
    # Identical arithmetic: identical error against the oracle, which is bf16-sized, not zero.
    assert all(v["ratio"] == 1.0 for v in acc.values() if v["eager_err"] > 0)
    assert acc["parameters"]["eager_err"] > 1e-3
    wrong = _bf16_compare(monkeypatch, 0.3)
    (pair,) = wrong["pairs"]
    assert not pair["ok"] and not wrong["ok"]
    assert pair["accuracy_vs_fp32_oracle"]["parameters"]["ratio"] > 1.5
