"""analysis.walk_utd: per-setting medians over every seed (a seed that did not walk counts as the
slowest, never dropped), and the script's errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from lab.analysis.parity_runs import RunData
from lab.analysis.walk_utd import markdown, setting_table, walk_median, walk_record

ROOT = Path(__file__).resolve().parents[2]


def _rec(
    ups: int,
    seed: int,
    iteration: int | None,
    since: float | None = None,
    envs: int = 1024,
    path: str = "cudagraph",
    workers: int = 15,
) -> dict:
    r = {
        "run": f"u{ups}_e{envs}_s{seed}",
        "updates_per_step": ups,
        "num_envs": envs,
        "path": path,
        "env_workers": workers,
        "seed": seed,
        "reached": iteration is not None,
        "setup_s": 17.0,
        "cold_start_s": 9.0,
        "iter_ms_median": 33.0,
        "learner_train_ms_median": ups * 1.1,
        "final_tracking_lin_vel_frac": 0.81,
    }
    if iteration is not None:
        r.update(iteration=iteration, loop_s=iteration * 0.033, since_start_s=since)
    else:
        r["not_within_s"] = 175.0
    return r


def test_a_seed_that_did_not_walk_counts_as_the_slowest():
    records = [
        _rec(8, 1, 2749, 150.0),
        _rec(8, 2, None),
        _rec(24, 1, 1324, 62.6),
        _rec(24, 2, 1313, 75.4),
        _rec(24, 3, None),
    ]
    rows = {r["updates_per_step"]: r for r in setting_table(records)}
    assert list(rows) == [8, 24] and rows[24]["num_envs"] == 1024
    # three seeds, one did not walk: the median is the middle seed (75.4), not the median of
    # the two that walked (69.0)
    assert (rows[24]["seeds"], rows[24]["walked"]) == ([1, 2, 3], 2)
    assert rows[24]["since_start_s_median"] == 75.4 and rows[24]["iterations_median"] == 1324
    assert rows[24]["since_start"] == "75.4 s [62.6-75.4; 1 of 3 not within 175.0], n=3"
    assert rows[24]["since_start_s"] == {1: 62.6, 2: 75.4}
    # two seeds, one did not walk: the median run is one that did not walk
    assert (rows[8]["walked"], rows[8]["since_start_s_median"]) == (1, None)
    assert rows[8]["iterations_median"] == float("inf")
    assert rows[8]["since_start"].startswith("> 175.0 s [150.0-150.0; 1 of 2 not within 175.0]")
    md = markdown(list(rows.values()), records)
    assert "| 24 | 1024 | cudagraph | 15 | 1,2,3 | 2 | 1324 |" in md
    assert "| 8 | 1024 | cudagraph | 15 | 1,2 | 1 | not walked | not walked | > 175.0 s" in md
    assert "| u8_e1024_s2 | - | - |" in md  # a seed that did not walk is listed, not dropped
    assert "| not within 175.0 |" in md


def test_walk_median_over_all_runs():
    # all walked: the plain median and range
    m = walk_median([40.7, 36.4, 72.0, 55.9])
    assert (m.n, m.walked, m.median_s, m.low_s, m.high_s) == (4, 4, 48.3, 36.4, 72.0)
    assert m.text() == "48.3 s [36.4-72.0], n=4"
    # the failures are the two slowest of five: the median is the third fastest
    m = walk_median([100.0, None, 90.0, None, 95.0], [None, 120.0, None, 175.0, None])
    assert (m.median_s, m.walked, m.limits_s) == (100.0, 3, (120.0, 175.0))
    assert m.text() == "100.0 s [90.0-100.0; 2 of 5 not within 120.0/175.0], n=5"
    # an even count whose upper middle did not walk has no median time
    m = walk_median([90.0, None], [None, 120.0])
    assert m.median_s is None and m.text() == "> 120.0 s [90.0-90.0; 1 of 2 not within 120.0], n=2"
    assert walk_median([None], [60.0]).text() == "not within 60.0 s, n=1"
    assert walk_median([828.1]).text() == "828.1 s, n=1"


def test_settings_differing_only_in_num_envs_are_separate_rows():
    records = [
        _rec(16, 1, 1600, 75.0),
        _rec(16, 2, 1700, 80.0),
        _rec(16, 1, 1500, 50.0, envs=512),
        _rec(16, 2, None, envs=512),
    ]
    rows = setting_table(records)
    assert [(r["updates_per_step"], r["num_envs"]) for r in rows] == [(16, 512), (16, 1024)]
    assert [r["walked"] for r in rows] == [1, 2]
    assert [r["since_start_s_median"] for r in rows] == [None, 77.5]


def test_paths_of_one_setting_are_separate_rows():
    records = [
        _rec(8, 1, 2749, 150.0),
        _rec(8, 1, 2769, 140.0, path="compile"),
        _rec(8, 2, 2759, 145.0, path="compile"),
    ]
    rows = setting_table(records)
    assert [(r["path"], r["seeds"], r["since_start_s_median"]) for r in rows] == [
        ("compile", [1, 2], 142.5),
        ("cudagraph", [1], 150.0),
    ]


def test_worker_counts_of_one_setting_are_separate_rows():
    # the same seeds at 15 and 16 env workers: an A/B of the collector on real walks
    records = [
        _rec(8, 1, 2749, 101.0),
        _rec(8, 1, 2759, 97.0, workers=16),
        _rec(8, 2, 2769, 103.0),
        _rec(8, 2, 2739, 95.0, workers=16),
    ]
    rows = setting_table(records)
    assert [(r["env_workers"], r["seeds"], r["since_start_s_median"]) for r in rows] == [
        (15, [1, 2], 102.0),
        (16, [1, 2], 96.0),
    ]
    assert "| 8 | 1024 | cudagraph | 16 | 1,2 | 2 | 2749 |" in markdown(rows, records)


def _run(seed: int, executor: str | None) -> RunData:
    tc = {"path": "cudagraph", "updates_per_step": 8, "num_envs": 1024, "env_workers": 15}
    if executor is not None:
        tc["executor"] = executor
    return RunData(
        run_dir=Path(f"u8_s{seed}"),
        path="cudagraph",
        seed=seed,
        iterations=3,
        num_envs=1024,
        series={
            "episode_length_mean": np.array([100.0, 950.0, 990.0]),
            "tracking_lin_vel_frac": np.array([0.5, np.nan, 0.85]),
        },
        time_s=np.array([1.0, 2.0, 3.0]),
        first_learning=0,
        startup_s=10.0,
        summary={"training_config": tc},
    )


def test_a_run_that_did_not_walk_records_how_long_it_ran():
    run = _run(1, "cudagraph")
    run.series["tracking_lin_vel_frac"] = np.array([0.5, np.nan, 0.7])  # never >= 80%
    run.time_s = np.array([1.0, 2.0, np.nan])  # the last row's time not recorded
    rec = walk_record(run)
    assert not rec["reached"] and "since_start_s" not in rec
    assert rec["not_within_s"] == 12.0  # setup 10 s + the last recorded loop time
    (row,) = setting_table([rec])
    assert row["since_start"] == "not within 12.0 s, n=1" and row["since_start_s"] == {}


def test_a_run_of_the_eager_steps_is_not_a_seed_of_the_compiled_cudagraph_path():
    # a recorded executor that differs from the path (the eager steps under path=cudagraph)
    records = [
        walk_record(_run(1, "cudagraph")),
        walk_record(_run(1, "cudagraph (eager steps)")),
        walk_record(_run(2, None)),  # a summary from before the executor was recorded
    ]
    assert [r["path"] for r in records] == ["cudagraph", "cudagraph (eager steps)", "cudagraph"]
    assert records[0]["iteration"] == 2 and records[0]["since_start_s"] == 13.0
    assert records[0]["learning_since_start_s"] == 11.0  # setup + the first row's time_s
    assert "not_within_s" not in records[0]
    rows = setting_table(records)
    assert [(r["path"], r["seeds"]) for r in rows] == [
        ("cudagraph", [1, 2]),
        ("cudagraph (eager steps)", [1]),
    ]


def test_learning_since_start_counts_from_the_runs_first_row():
    run = _run(1, "cudagraph")
    run.first_learning = 11  # rows 10, 11, 12 (e.g. a segment's rows): the second row
    run.summary["rows_all"] = [
        {"iteration": 10, "learning": False, "iter_ms": 30.0},
        {"iteration": 11, "learning": True, "iter_ms": 40.0},
        {"iteration": 12, "learning": True, "iter_ms": 41.0},
    ]
    run.summary["startup"] = {"cold_start_s": 7.123, "prefill_wait_s": 0.0}
    rec = walk_record(run)
    assert rec["learning_since_start_s"] == 12.0
    assert rec["random_iter_ms_mean"] == 30.0  # the rows before learning only
    assert rec["startup"] == {"cold_start_s": 7.12, "prefill_wait_s": 0.0}
    run.first_learning = None  # never learned
    assert walk_record(run)["learning_since_start_s"] is None
    assert "| u8_s1 | 2 | 3.0 | 10.0 (7.1) | - | 13.0 |" in markdown([], [walk_record(run)])


def test_a_lever_that_was_on_makes_a_setting_of_its_own():
    # a same-seed A/B of a lever (recorded runs with the prefill): the same numbers, but not
    # two seeds
    plain, prefill, both = _run(1, "cudagraph"), _run(1, "cudagraph"), _run(1, "cudagraph")
    prefill.summary["training_config"]["prefill_iterations"] = 49
    both.summary["training_config"].update(prefill_iterations=49, aligned_layout=True)
    records = [walk_record(r) for r in (plain, prefill, both)]
    assert [r["path"] for r in records] == [
        "cudagraph",
        "cudagraph + prefill",
        "cudagraph + prefill + aligned_layout",
    ]
    assert [r["seeds"] for r in setting_table(records)] == [[1], [1], [1]]


def test_script_names_a_dir_without_a_summary(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts/walk_utd.py"),
            str(tmp_path),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"walk_utd.py: {tmp_path} holds no summary.json"
    assert not (tmp_path / "o").exists()


def test_plot_writes_the_named_file_and_nothing_else(tmp_path, monkeypatch):
    # The path loop once shadowed the file argument: the figure went to ./cudagraph.png.
    from lab.analysis.walk_utd import plot

    monkeypatch.chdir(tmp_path)
    records = [_rec(8, 1, 2700, 100.0), _rec(8, 2, 2800, 104.0, path="compile")]
    out = tmp_path / "figs" / "walk_utd.png"
    out.parent.mkdir()
    plot(records, setting_table(records), out)
    assert out.stat().st_size > 0
    assert sorted(p.name for p in tmp_path.rglob("*.png")) == ["walk_utd.png"]


def test_runs_of_another_batch_or_learning_rate_are_settings_of_their_own():
    runs = []
    for seed, batch, lr in ((1, 2048, 3e-4), (2, 2048, 3e-4), (1, 4096, 3e-4), (1, 4096, 4.24e-4)):
        run = _run(seed, "cudagraph")
        run.summary["training_config"]["batch_size"] = batch
        run.summary["config"] = {"learner": {"lr_peak": lr}}
        runs.append(walk_record(run))
    assert runs[0]["path"] == "cudagraph, batch 2048, lr 0.0003"
    rows = setting_table(runs)
    assert [(r["path"], r["seeds"]) for r in rows] == [
        ("cudagraph, batch 2048, lr 0.0003", [1, 2]),
        ("cudagraph, batch 4096, lr 0.0003", [1]),
        ("cudagraph, batch 4096, lr 0.000424", [1]),
    ]
