"""scripts/bench_learner.py on the CPU: every (align, variant) row, labelled, in the JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lab.bench.learner_bench import scaling_series
from tests.conftest import HAS_UNILAB, needs_unilab

ROOT = Path(__file__).resolve().parents[2]


def _bench(argv: list[str]) -> subprocess.CompletedProcess:
    script = ROOT / "scripts/bench_learner.py"
    return subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True)


@pytest.mark.slow
def test_bench_learner_times_every_align_and_skips_variants_that_cannot_change_a_path(tmp_path):
    out = tmp_path / "rows.json"
    argv = ["--device", "cpu", "--dtype", "float32", "--tiny", "--batch-sizes", "32,64"]
    argv += ["--updates", "2", "--paths", "eager", "--eager-cycles", "2", "--warmup", "1"]
    argv += ["--gemm-align", "1,8", "--path-variants", "base;inductor_options.max_autotune=true"]
    proc = _bench([*argv, "--output", str(out)])
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(out.read_text())
    # The eager path compiles and captures nothing: a path option variant would repeat base.
    got = [(r["batch_size"], r["gemm_align"], r["path_options"]) for r in rows]
    assert got == [(b, a, {}) for b in (32, 64) for a in (1, 8)]
    assert all(r["impl"] == "ours" and r["cycles"] == 2 and r["median_ms"] > 0 for r in rows)
    table = proc.stdout.split("ratios within this run")[1]
    assert table.count("base") == 4
    late = tmp_path / "late.json"
    assert _bench([*argv, "--deadline-s", "1e-9", "--output", str(late)]).returncode == 0
    assert not late.exists()  # every configuration started after the deadline: none ran


def test_scaling_plot_from_rows(tmp_path):
    rows = [
        {"impl": i, "path": p, "batch_size": b, "updates_per_step": 8, "median_ms": m,
         "path_options": {} if i == "ours" else None, "device": "NVIDIA H200", "date": "x"}
        for i, p, b, m in [
            ("ours", "cudagraph", 2048, 8.8), ("ours", "cudagraph", 256, 4.5),
            ("ours", "compile", 256, 40.0), ("unilab-rl", "cudagraph", 256, 8.8),
        ]
    ] + [{"impl": "ours", "path": "eager", "batch_size": 256, "updates_per_step": 2,
          "median_ms": 50.0, "path_options": {}}]  # fmt: skip
    u, series = scaling_series(rows)
    assert u == 8 and series == {
        "ours cudagraph": [(256, 4.5), (2048, 8.8)],
        "ours compile": [(256, 40.0)],
        "unilab-rl 1.4.15 cudagraph": [(256, 8.8)],
    }
    src, png = tmp_path / "rows.json", tmp_path / "scaling.png"
    src.write_text(json.dumps(rows))
    assert _bench(["--plot-from", str(src), "--plot", str(png)]).returncode == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@needs_unilab
def test_the_reference_times_upstreams_eager_beside_ours(tmp_path):
    """--reference unilab-rl with eager among the paths: unilab-rl's own eager mode on the same
    networks and batches, one row, and the eager ratio in the table (its graph needs CUDA: on
    the CPU it is reported as failed and the grid goes on)."""
    out = tmp_path / "rows.json"
    argv = ["--device", "cpu", "--dtype", "float32", "--tiny", "--batch-sizes", "32"]
    argv += ["--updates", "2", "--paths", "eager", "--eager-cycles", "2", "--warmup", "1"]
    proc = _bench([*argv, "--reference", "unilab-rl", "--output", str(out)])
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(out.read_text())
    assert [(r["impl"], r["path"]) for r in rows] == [("ours", "eager"), ("unilab-rl", "eager")]
    assert all(r["cycles"] == 2 and r["median_ms"] > 0 for r in rows)
    assert "unilab-rl cudagraph B=32 u2 failed" in proc.stdout
    line = proc.stdout.split("ratios within this run")[1].splitlines()[2].split()
    ours, theirs = rows[0]["median_ms"], rows[1]["median_ms"]
    assert line[:2] == ["32", "2"] and line[8] == f"{ours / theirs:.2f}x"


@pytest.mark.skipif(HAS_UNILAB, reason="unilab-rl is installed: the reference runs")
def test_the_reference_without_unilab_rl_is_refused_in_one_line(tmp_path):
    out = tmp_path / "rows.json"
    argv = ["--device", "cpu", "--tiny", "--reference", "unilab-rl", "--output", str(out)]
    proc = _bench(argv)
    assert proc.returncode == 2 and not out.exists()
    assert proc.stderr.strip().splitlines()[-1].endswith("pip install --no-deps unilab-rl==1.4.15")


def test_a_failing_variant_is_reported_and_the_rest_still_runs(tmp_path):
    out = tmp_path / "rows.json"
    argv = ["--device", "cpu", "--dtype", "float32", "--tiny", "--batch-sizes", "32"]
    argv += ["--updates", "2", "--paths", "eager", "--eager-cycles", "2", "--warmup", "1"]
    argv += ["--path-variants", "inductor_options.triton.cudagraphs=true;base"]
    proc = _bench([*argv, "--output", str(out)])
    assert proc.returncode == 1, proc.stderr  # the sweep says that something failed ...
    assert "1 configuration(s) failed" in proc.stdout and "triton.cudagraphs" in proc.stdout
    rows = json.loads(out.read_text())
    assert [r["path_options"] for r in rows] == [{}]  # ... and still timed the rest


def test_inductor_option_items_gather_into_one_dict():
    from lab.bench.synthetic import parse_options

    got = parse_options(
        'name="compile",inductor_options.max_autotune_gemm=true,'
        'inductor_options.triton.max_tiles=2,inductor_options.max_autotune_gemm_backends="TRITON"'
    )
    assert got == (
        ("name", "compile"),
        (
            "inductor_options",
            {
                "max_autotune_gemm": True,
                "triton.max_tiles": 2,
                "max_autotune_gemm_backends": "TRITON",
            },
        ),
    )
    for bad in ("inductor_options=1,inductor_options.x=2", 'name="a",name="b"', "name"):
        try:
            parse_options(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} was accepted")


@pytest.mark.slow
def test_count_ops_counts_ours_and_upstreams_eager_cycle(tmp_path):
    """profile_cycle.py --count-ops on the CPU: the aten ops of one eager cycle, ours and
    unilab-rl's eager mode on the same networks. Ours stays within its budget (a regression in
    eager's launch count fails here)."""
    out = tmp_path / "ops.json"
    script = ROOT / "scripts/profile_cycle.py"
    argv = ["--count-ops", "--device", "cpu", "--dtype", "float32", "--tiny", "--batch-size", "32"]
    argv += ["--updates", "2", "--cycles", "1", "--output", str(out)]
    proc = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert 0 < report["ours"]["ops"] <= 1600  # the eager launch budget of a tiny u2 cycle
    if HAS_UNILAB:
        assert report["unilab-rl"]["ops"] > 0 and report["unilab-rl"]["wall_median_ms"] > 0
    else:  # ours alone, and the report says why
        assert "unilab-rl" not in report and "no unilab-rl" in proc.stdout


def test_a_failed_capture_fails_the_benchmark_configuration(monkeypatch):
    """A run goes on with the compiled steps when the capture fails; a benchmark of the
    cudagraph path must not time them under its name."""
    from types import SimpleNamespace

    import torch

    from lab.bench import learner_bench
    from lab.bench.synthetic import Setup

    def fake(fallback: bool):
        path = SimpleNamespace(fallback=fallback)
        return SimpleNamespace(path=path, device=torch.device("cpu"), warmup=lambda: None,
                               update=lambda: None)  # fmt: skip

    monkeypatch.setattr(learner_bench, "build_learner", lambda setup, path: fake(True))
    with pytest.raises(RuntimeError, match="capture of the cycle failed"):
        learner_bench.time_ours(Setup(batch_size=8, updates_per_step=2), "cudagraph", 1, 0)
    monkeypatch.setattr(learner_bench, "build_learner", lambda setup, path: fake(False))
    timing, _ = learner_bench.time_ours(Setup(batch_size=8, updates_per_step=2), "cudagraph", 2, 0)
    assert len(timing.samples_ms) == 2
