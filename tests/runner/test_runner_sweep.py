"""Sweeps: comparison math, the Hydra callback (basic and submitit_local launchers), and
scripts/compare.py."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from flashsac_bench.analysis.compare import comparison_frame, find_run_dirs, write_comparison
from flashsac_bench.runner.summary import write_json
from tests.fakes.runs import REPO, cli_overrides, read_summary, run_cli


def _fake_summary(path: str, upd: int, learner: float, iter_ms: float, **tc) -> dict:
    def stats(m: float) -> dict:
        return {"count": 10, "mean": m * 1.1, "median": m, "p90": m * 1.3, "p95": m * 1.4}

    return {
        "complete": True,
        "status": "complete",
        "num_samples": 10,
        "cold_start_s": 1.0,
        "training_config": {
            "update": f"u{upd}",
            "path": path,
            "updates_per_step": upd,
            "policy_frequency": 2,
            "num_envs": 256,
            "batch_size": 256,
            "device": "cuda",
            "dtype": "bfloat16",
            **tc,
        },
        "learner_train_ms": stats(learner),
        "collector_cycle_ms": stats(3.0),
        "iter_ms": stats(iter_ms),
        "overlap_efficiency": 0.9,
        "env_steps_per_s": 1000.0,
    }


def test_reductions_are_against_the_eager_run_of_the_same_update_ratio(tmp_path):
    runs = {
        "0_u2_eager": _fake_summary("eager", 2, 10.0, 12.0),
        "1_u2_compile": _fake_summary("compile", 2, 4.0, 6.0),
        "2_u8_eager": _fake_summary("eager", 8, 40.0, 41.0),
        "3_u8_cudagraph": _fake_summary("cudagraph", 8, 10.0, 20.5),
        # same update ratio but another batch size: no eager baseline of its own
        "4_u2_compile_b512": _fake_summary("compile", 2, 5.0, 7.0, batch_size=512),
    }
    for name, s in runs.items():
        write_json(tmp_path / name / "summary.json", s)
    df = comparison_frame(find_run_dirs([tmp_path])).set_index("run")
    assert df.loc["1_u2_compile", "learner_reduction_median_pct"] == pytest.approx(60.0)
    assert df.loc["1_u2_compile", "iter_reduction_median_pct"] == pytest.approx(50.0)
    assert df.loc["1_u2_compile", "learner_reduction_mean_pct"] == pytest.approx(60.0)
    assert df.loc["3_u8_cudagraph", "learner_reduction_median_pct"] == pytest.approx(75.0)
    assert df.loc["3_u8_cudagraph", "iter_reduction_median_pct"] == pytest.approx(50.0)
    assert df.loc["0_u2_eager", "learner_reduction_median_pct"] == pytest.approx(0.0)
    assert pd.isna(df.loc["4_u2_compile_b512", "learner_reduction_median_pct"])
    assert df.loc["1_u2_compile", "learner_train_ms_p90"] == pytest.approx(5.2)

    files = write_comparison([tmp_path], tmp_path)
    assert files is not None
    md = files["comparison.md"].read_text().splitlines()
    full = md[md.index("## Every statistic") :]
    table = [ln for ln in full if ln.startswith("| ")]
    assert len(table) == 1 + len(runs)  # header + one row per run
    assert any("1_u2_compile" in ln and "60.0" in ln for ln in table)
    csv = pd.read_csv(files["comparison.csv"])
    assert len(csv) == len(runs) and "iter_ms_p95" in csv.columns
    assert files["comparison.png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_comparison_leads_with_a_compact_medians_table(tmp_path):
    runs = {
        "0_u2_eager": _fake_summary("eager", 2, 10.0, 12.0),
        "1_u2_compile": _fake_summary("compile", 2, 4.0, 6.0),
        "2_u2_compile": _fake_summary("compile", 2, 4.0, 8.0),
    }
    runs["1_u2_compile"].update(cold_start_s=92.2, compile={"artifacts_compiled": 2})
    runs["2_u2_compile"].update(cold_start_s=0.4, compile={"artifacts_loaded": 2})
    for name, s in runs.items():
        write_json(tmp_path / name / "summary.json", s)
    files = write_comparison([tmp_path], tmp_path)
    assert files is not None
    md = files["comparison.md"].read_text().splitlines()
    assert md[0] == "# flashsac_bench comparison (3 runs)" and md[2].startswith("| run ")
    lead = [c.strip() for c in md[2].strip("|").split("|")]
    assert len(lead) <= 12 and "cold start s (this job)" in lead and "iter vs eager" in lead
    rows = {r[0]: dict(zip(lead, r, strict=True)) for r in
            ([c.strip() for c in ln.strip("|").split("|")] for ln in md[4:7])}  # fmt: skip
    assert rows["1_u2_compile"]["iter vs eager"] == "2.00x"  # 12 ms / 6 ms
    assert rows["1_u2_compile"]["cold start s (this job)"] == "92.2 compiled"
    assert rows["2_u2_compile"]["cold start s (this job)"] == "0.4 loaded"
    assert rows["0_u2_eager"]["cold start s (this job)"] == "1.0"
    assert rows["1_u2_compile"]["iter ms"] == "6.00" and "task" not in lead  # one task


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_the_comparison_files_get_the_mode_the_umask_gives(tmp_path, umask):
    import os
    import stat

    write_json(tmp_path / "run" / "summary.json", _fake_summary("eager", 2, 10.0, 12.0))
    old = os.umask(umask)
    try:
        files = write_comparison([tmp_path / "run"], tmp_path / "out")
    finally:
        os.umask(old)
    assert files is not None
    for path in files.values():
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path


def test_summary_prints_a_runs_medians_and_refuses_bad_input_in_one_line(tmp_path, capsys):
    from flashsac_bench.cli.summary import main

    sweep = tmp_path / "sweep"
    write_json(sweep / "0_u2_eager" / "summary.json", _fake_summary("eager", 2, 10, 12))
    write_json(sweep / "1_u2_compile" / "summary.json", _fake_summary("compile", 2, 4, 6))
    # the command as the README gives it
    cmd = [sys.executable, "-m", "flashsac_bench.summary", str(sweep / "1_u2_compile")]
    one = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert one.returncode == 0 and one.stderr == "", one.stderr
    lines = one.stdout.splitlines()
    assert lines[0].startswith("| run ") and lines[2].startswith("| 1_u2_compile ")
    assert len(lines) == 4  # the table (one run) and its legend
    assert main([str(sweep)]) == 0
    both = capsys.readouterr().out
    assert "| 0_u2_eager " in both and "2.00x" in both  # beside its eager run

    def refused(*args: str) -> str:
        with pytest.raises(SystemExit) as exit_:
            raise SystemExit(main(list(args)))
        out = capsys.readouterr()
        assert exit_.value.code == 2 and out.out == "" and out.err.count("\n") == 1, out
        return out.err

    assert "does not exist" in refused(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    assert "no readable summary.json" in refused(str(tmp_path / "empty"))
    assert "unrecognized arguments: --nope" in refused("--nope", str(sweep))


def _check_sweep(sweep: object, expect_runs: set[str]) -> pd.DataFrame:
    from matplotlib.image import imread

    for name in ("comparison.csv", "comparison.md", "comparison.png"):
        assert (sweep / name).is_file(), name  # type: ignore[operator]
    df = pd.read_csv(sweep / "comparison.csv")  # type: ignore[operator]
    assert set(df["run"]) == expect_runs
    assert df["complete"].all()
    assert (df["iter_ms_median"] > 0).all() and (df["learner_train_ms_p90"] > 0).all()
    img = imread(sweep / "comparison.png")  # type: ignore[operator]
    assert img.shape[0] > 100 and img.shape[1] > 100
    return df


@pytest.mark.slow  # CLI runs that take 6-10 s on 2 cores
def test_multirun_writes_comparison_at_sweep_root(tmp_path):
    sweep = tmp_path / "sweep"
    args = ["-m", *cli_overrides(8, 10), "update=u2,u8", f"hydra.sweep.dir={sweep}"]
    proc = run_cli(args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    df = _check_sweep(sweep, {"0_u2_eager", "1_u8_eager"})
    assert sorted(df["critic_updates"]) == [2, 8]
    # u8 does 4x the critic updates of u2: its learner time must be larger
    by = df.set_index("update")
    assert by.loc["u8", "learner_train_ms_median"] > by.loc["u2", "learner_train_ms_median"]

    # scripts/compare.py rebuilds the same table from the run dirs, anywhere
    out = tmp_path / "cmp"
    script = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "compare.py"), *map(str, sweep.glob("*_eager"))]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert script.returncode == 0, script.stderr
    rebuilt = pd.read_csv(out / "comparison.csv")
    cols = ["run", "iter_ms_median", "learner_train_ms_p95", "overlap_efficiency"]
    pd.testing.assert_frame_equal(rebuilt[cols], df[cols])
    assert (out / "comparison.png").is_file() and (out / "comparison.md").is_file()


@pytest.mark.slow  # over ~10 s on 2 cores
def test_submitit_local_sweep(tmp_path):
    sweep = tmp_path / "sweep"
    args = [
        "-m",
        "hydra/launcher=submitit_local",
        "hydra.launcher.timeout_min=5",
        *cli_overrides(8, 8),
        "update=u2,u8",
        f"hydra.sweep.dir={sweep}",
    ]
    proc = run_cli(args, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    _check_sweep(sweep, {"0_u2_eager", "1_u8_eager"})
    assert (sweep / ".submitit").is_dir()  # the jobs really went through submitit
    for run in ("0_u2_eager", "1_u8_eager"):
        s = read_summary(sweep / run)
        assert s["command"]["mode"] == "multirun" and s["iterations_done"] == 8


def test_compare_script_without_runs_fails_clearly(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "compare.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "no runs found" in proc.stdout


def test_bench_h200_preset_and_slurm_launcher_compose():
    from hydra import compose, initialize_config_module
    from omegaconf import open_dict

    from flashsac_bench.config import register_configs, to_config

    register_configs()
    overrides = ["+experiment=bench_h200", "path=cudagraph", "hydra/launcher=slurm_h200"]
    with initialize_config_module("flashsac_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=overrides, return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher") and launcher.gpus_per_node == 1
    assert cfg.hydra.callbacks.comparison._target_.endswith("ComparisonCallback")
    with open_dict(cfg):
        del cfg["hydra"]
    c = to_config(cfg)
    # UniLab's real-physics benchmark setting (unilab-rl's own)
    assert (c.run.num_envs, c.replay.batch_size, c.replay.replay_buffer_n) == (256, 256, 32)
    assert (c.replay.learning_starts, c.run.iterations, c.run.summary_last) == (8, 1000, 500)
    assert (c.hardware.name, c.path.name) == ("h200", "cudagraph")
