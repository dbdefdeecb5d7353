"""analysis.divergence: the first iteration whose metrics differ between two runs of one seed,
timings ignored; scripts/first_divergence.py's exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from flashsac_bench.analysis.divergence import first_divergence

ROOT = Path(__file__).resolve().parents[2]


def _rows(n: int = 6, learning_from: int = 3) -> list[dict]:
    return [
        {
            "iteration": i,
            "learning": i >= learning_from,
            "iter_ms": 10.0 + i,
            "reward_mean": 0.1 * i,
            "critic_loss": 5.0 - i if i >= learning_from else float("nan"),
        }
        for i in range(n)
    ]


def test_timings_and_shared_nans_do_not_count():
    a, b = _rows(), _rows()
    for r in b:
        r["iter_ms"] += 1.0
    assert first_divergence(a, b) is None


def test_names_the_first_differing_iteration_and_only_the_differing_metrics():
    a, b = _rows(), _rows()
    b[4]["critic_loss"] += 1e-6
    b[5]["reward_mean"] += 1.0
    d = first_divergence(a, b)
    assert d is not None and d.iteration == 4 and d.learning
    assert d.values == {"critic_loss": (a[4]["critic_loss"], b[4]["critic_loss"])}


def test_a_difference_before_learning_is_flagged_as_such():
    a, b = _rows(), _rows()
    b[1]["reward_mean"] = 9.0
    d = first_divergence(a, b)
    assert d is not None and d.iteration == 1 and not d.learning


def test_only_common_iterations_are_compared():
    a, b = _rows(6), _rows(4)  # b stopped earlier (e.g. run.stop_at_walk)
    a[5]["critic_loss"] = 123.0
    assert first_divergence(a, b) is None


def _run_dir(tmp_path: Path, name: str, rows: list[dict]) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "summary.json").write_text(json.dumps({"rows_all": rows}))
    return d


def _cli(*args: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(ROOT / "scripts/first_divergence.py"), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True)


def test_script_exit_codes(tmp_path):
    same_a = _run_dir(tmp_path, "a", _rows())
    same_b = _run_dir(tmp_path, "b", _rows())
    other = _rows()
    other[3]["critic_loss"] = 0.5
    diff = _run_dir(tmp_path, "c", other)
    ok = _cli(same_a, same_b)
    assert ok.returncode == 0 and ok.stdout.startswith("identical over 6 common iterations")
    bad = _cli(same_a, diff)
    assert bad.returncode == 1
    assert bad.stdout.startswith("first difference at iteration 3 (a learning row")
    assert "critic_loss: 2.0 vs 0.5" in bad.stdout
    missing = _cli(same_a, tmp_path / "nowhere")
    assert missing.returncode == 2
    assert missing.stderr.startswith("first_divergence.py: ") and "no readable rows_all" in (
        missing.stderr
    )
