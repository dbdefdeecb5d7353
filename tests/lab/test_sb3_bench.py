"""The SB3 side by side (lab/sb3_bench.py, scripts/bench_sb3.py): its returns at fixed env-step
counts and its time to SB3's final return, computed alike for both learners from their own
files; its table and plot from a benchmark's out dir; the benchmark end to end on the CPU."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from lab.sb3_bench import (
    RL_ZOO,
    Curve,
    cell,
    flashsac_curve,
    report,
    return_at,
    sb3_curve,
    sb3_hyperparameters,
    seconds_to,
)

ROOT = Path(__file__).resolve().parents[2]


def test_a_return_is_the_last_point_at_or_before_the_step_of_a_run_that_got_there():
    c = Curve(steps=[10, 20, 30], returns=[1.0, 5.0, 3.0], seconds=[1.0, 2.0, 3.0], reached=36)
    assert [return_at(c, s) for s in (5, 10, 25, 30, 36)] == [None, 1.0, 5.0, 3.0, 3.0]
    assert return_at(c, 40) is None  # it got to 36 steps, not 40
    assert seconds_to(c, 4.0) == 2.0 and seconds_to(c, 9.0) is None
    assert cell([3.0, None, 1.0, 2.0], 4) == "2 [1-3], n=3 of 4"
    assert cell([None], 1) == "-, 0 of 1" and cell([7.0], 1) == "7, n=1"


def test_the_curves_of_both_learners_are_the_mean_of_their_last_100_episodes(tmp_path):
    launch = 1000.0
    rows = [
        {"env_steps": 16 * (i + 1), "episode_return_mean": float(i), "time_s": 0.5 * i}
        for i in range(4)
    ]
    rows.insert(0, {"env_steps": 0, "episode_return_mean": None, "time_s": 0.0})
    summary = {"writer": {"started_unix": 1002.0}, "setup_s": 3.0, "rows_all": rows}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    c = flashsac_curve(tmp_path, launch)
    assert c == Curve([16, 32, 48, 64], [0.0, 1.0, 2.0, 3.0], [5.0, 5.5, 6.0, 6.5], reached=64)
    lines = [{"steps": 10 * (i + 1), "return": float(i), "unix": 1001.0 + i} for i in range(150)]
    text = "\n".join(json.dumps(x) for x in lines) + '\n{"steps": 15'  # cut by a kill
    (tmp_path / "episodes.jsonl").write_text(text)
    c = sb3_curve(tmp_path, launch)
    assert len(c.steps) == 150 and c.steps[-1] == 1500 and c.seconds[0] == 1.0
    assert c.reached == 1500  # no meta.json (cut): its last episode's end
    (tmp_path / "meta.json").write_text(json.dumps({"num_timesteps": 1504}))
    assert sb3_curve(tmp_path, launch).reached == 1504
    assert c.returns[1] == 0.5 and c.returns[-1] == sum(range(50, 150)) / 100


def _fake_benchmark(out: Path) -> None:
    """Two seeds of each learner on one env, 100 env steps, as the runs would leave them."""
    plan = {"envs": ["HalfCheetah-v5"], "steps": 100, "at_steps": [50, 100]}
    plan["learners"] = ["flashsac", "sb3"]
    (out / "runs").mkdir(parents=True)
    (out / "plan.json").write_text(json.dumps(plan))
    runs = []
    for seed, scale in ((1, 1.0), (2, 2.0)):
        name = f"flashsac_HalfCheetah-v5_s{seed}"
        rows = [
            {"env_steps": s, "episode_return_mean": scale * s, "time_s": s / 100}
            for s in range(10, 101, 10)
        ]
        (out / "runs" / name).mkdir()
        summary = {"writer": {"started_unix": 0.0}, "setup_s": 1.0, "rows_all": rows}
        (out / "runs" / name / "summary.json").write_text(json.dumps(summary))
        if seed == 1:  # its evaluation (seed 2's was cut)
            episodes = [{"return": 900.0}, {"return": 1100.0}]
            (out / "runs" / name / "eval.json").write_text(json.dumps({"episodes": episodes}))
        runs.append({"learner": "flashsac", "seed": seed, "name": name, "status": "ok"})
        name = f"sb3_HalfCheetah-v5_s{seed}"
        (out / "runs" / name).mkdir()
        eps = [{"steps": s, "return": scale * s / 2, "unix": s / 10} for s in range(10, 101, 10)]
        (out / "runs" / name / "episodes.jsonl").write_text("\n".join(json.dumps(e) for e in eps))
        if seed == 1:
            meta = {"num_timesteps": 100, "eval": {"returns": [300.0, 500.0]}}
            (out / "runs" / name / "meta.json").write_text(json.dumps(meta))
        runs.append({"learner": "sb3", "seed": seed, "name": name, "status": "ok"})
    runs.append({"learner": "sb3", "seed": 3, "name": "sb3_HalfCheetah-v5_s3", "status": "skipped"})
    with open(out / "runs.jsonl", "w") as f:
        for run in runs:
            f.write(json.dumps({**run, "env_id": "HalfCheetah-v5", "launch_unix": 0.0}) + "\n")


def test_the_table_and_plot_of_a_benchmark(tmp_path):
    _fake_benchmark(tmp_path)
    table = report(tmp_path)
    entry = table["envs"]["HalfCheetah-v5"]
    # SB3's final return: the median of its seeds' returns at 100 steps (last-100 means)
    finals = [sum(s * k / 2 for s in range(10, 101, 10)) / 10 for k in (1.0, 2.0)]
    assert entry["sb3_final_return"] == pytest.approx(sum(finals) / 2)
    flash = entry["rows"]["flashsac"]
    assert flash["returns"]["50"] == [50.0, 100.0] and flash["ok"] == 2
    # the first FlashSAC row at or above the target: seed 1 at 50 steps, seed 2 at 30
    assert flash["seconds_to_sb3_final"] == [1.0 + 0.5, 1.0 + 0.3]
    sb3 = entry["rows"]["sb3"]
    assert sb3["runs"] == 3 and sb3["ok"] == 2 and sb3["statuses"][-1] == "skipped"
    sb3_seconds = [v for v in sb3["seconds_to_sb3_final"] if v is not None]
    assert entry["ratio"] == pytest.approx(statistics.median(sb3_seconds) / 1.4)
    md = (tmp_path / "sb3_comparison.md").read_text()
    assert "| HalfCheetah-v5 | sb3 | 2 of 3 |" in md and "x (medians)" in md
    assert flash["eval_return"] == [1000.0, None] and sb3["eval_return"] == [400.0, None, None]
    assert (tmp_path / "sb3_comparison.png").stat().st_size > 10_000


def test_an_env_without_a_zoo_entry_is_refused():
    assert sb3_hyperparameters("HalfCheetah-v5") == {"learning_starts": 10_000}
    assert "Humanoid-v5" in RL_ZOO
    with pytest.raises(ValueError, match="no rl-baselines3-zoo SAC entry"):
        sb3_hyperparameters("NoSuchEnv-v0")
    proc = subprocess.run(
        [sys.executable, "scripts/bench_sb3.py", "--envs", "NoSuchEnv-v0", "--out", "/tmp/x"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "no rl-baselines3-zoo entry for NoSuchEnv-v0" in proc.stderr


def test_every_training_is_recorded_also_when_the_benchmark_is_stopped(tmp_path, monkeypatch):
    """One training ends, the next is stopped by a SIGTERM to the benchmark (its training
    ended, recorded), the rest are recorded as skipped; the report is written all the same."""
    import signal

    from lab import sb3_bench

    calls = []

    def training(cmd, limit_s, log, grace_s):
        calls.append(cmd)
        log.write_text("a line\nits last line\n")
        if len(calls) == 2:
            signal.raise_signal(signal.SIGTERM)  # arrives while the training runs
        return 0, "ok"

    monkeypatch.setattr(sb3_bench, "run_training", training)
    monkeypatch.setattr(sb3_bench, "flashsac_num_envs", lambda plan: 16)
    plan = sb3_bench.Plan(
        envs=["HalfCheetah-v5"],
        seeds=[1, 2],
        steps=1000,
        out=tmp_path,
        deadline_s=3600,
        run_limit_s=600,
        at_steps=[500, 1000],
    )
    before = signal.getsignal(signal.SIGTERM)
    sb3_bench.run_all(plan, say=lambda text: None)
    assert signal.getsignal(signal.SIGTERM) is before  # its handler undone
    runs = sb3_bench.load_runs(tmp_path)
    assert [(r["name"], r["status"]) for r in runs] == [
        ("flashsac_HalfCheetah-v5_s1", "ok"),
        ("sb3_HalfCheetah-v5_s1", "stopped"),
        ("flashsac_HalfCheetah-v5_s2", "skipped"),
        ("sb3_HalfCheetah-v5_s2", "skipped"),
    ]
    assert runs[1]["reason"] == "its last line" and runs[2]["reason"] == "the benchmark got SIGTERM"
    assert "run.iterations=63" in calls[0] and "+experiment=gym_mujoco" in calls[0]
    assert (tmp_path / "sb3_comparison.md").exists()


@pytest.mark.slow
def test_the_benchmark_end_to_end_on_the_cpu(tmp_path, gymnasium_extra):
    """Both learners on InvertedPendulum-v5 for 1200 env steps (FlashSAC: +experiment=gym_cpu),
    each in its own process: both recorded, both in the table at every step count asked."""
    pytest.importorskip(
        "stable_baselines3", reason='needs the [sb3] extra: pip install -e ".[sb3]"'
    )
    out = tmp_path / "bench"
    args = ["--envs", "InvertedPendulum-v5", "--seeds", "1", "--steps", "1200"]
    args += ["--at", "600", "1200", "--out", str(out), "--deadline-s", "400"]
    args += ["--experiment", "gym_cpu", "--sb3-device", "cpu", "--sb3-threads", "1"]
    args += ["--eval-episodes", "2"]
    proc = subprocess.run(
        [sys.executable, "scripts/bench_sb3.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = {r["learner"]: r for r in json.loads((out / "sb3_comparison.json").read_text())["runs"]}
    assert {k: r["status"] for k, r in runs.items()} == {"flashsac": "ok", "sb3": "ok"}
    table = json.loads((out / "sb3_comparison.json").read_text())["table"]
    rows = table["envs"]["InvertedPendulum-v5"]["rows"]
    for learner in ("flashsac", "sb3"):
        assert all(v[0] is not None for v in rows[learner]["returns"].values()), learner
    meta = json.loads((out / "runs" / "sb3_InvertedPendulum-v5_s1" / "meta.json").read_text())
    assert meta["resolved"]["learning_starts"] == 1000 and meta["num_timesteps"] >= 1200
    assert len(meta["eval"]["returns"]) == 2  # --eval-episodes 2, deterministic
    assert all(v is not None for r in rows.values() for v in r["eval_return"])
    assert "| InvertedPendulum-v5 | sb3 | 1 of 1 |" in proc.stdout
    assert (out / "sb3_comparison.png").stat().st_size > 10_000
