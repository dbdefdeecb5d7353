"""End-to-end: the real CLI, a tiny run, and everything summary.json promises."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from tests.fakes.runs import cli_overrides, fake_env_environ, read_summary, run_cli

TOP_KEYS = {
    "format",
    "complete",
    "status",
    "incomplete_reason",
    "command",
    "run_dir",
    "config",
    "device",
    "git",
    "cold_start_s",
    "startup",
    "setup_s",
    "training_config",
    "iterations_planned",
    "iterations_done",
    "warmup_iterations",
    "first_learning_iteration",
    "num_samples",
    "num_samples_all",
    "summary_last",
    "summary_first_iteration",
    "summary_last_iteration",
    "learner_train_ms",
    "collector_cycle_ms",
    "iter_ms",
    "extra_timings",
    "overlap_efficiency",
    "env_steps_per_s",
    "rows",
    "rows_all",
}
STATS = {"count", "mean", "median", "p90", "p95", "min", "max"}
ROW_KEYS = {
    "iteration",
    "env_steps",
    "learning",
    "iter_ms",
    "learner_train_ms",
    "collector_cycle_ms",
    "env_step_ms",
    "reward_mean",
    "critic_loss",
    "actor_loss",
    "entropy",
    "temperature",
    "temperature_loss",
    "reward_scale",
    "episode_return_mean",
    "episode_length_mean",
}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("e2e")
    run_dir = tmp / "run"
    marker = tmp / "env_built.txt"
    args = [
        *cli_overrides(num_envs=16, iterations=30),
        "run.summary_last=20",
        "run.log_every=5",
        f"hydra.run.dir={run_dir}",
    ]
    proc = run_cli(args, env=fake_env_environ(FAKE_ENV_MARKER=str(marker)), cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run_dir, read_summary(run_dir), marker, proc


def test_summary_has_every_key_and_consistent_counts(tiny_run):
    run_dir, s, marker, _ = tiny_run
    assert marker.read_text() == "built 16\n"  # exactly one env, built once
    assert TOP_KEYS <= set(s)
    assert s["complete"] is True and s["status"] == "complete" and s["incomplete_reason"] is None
    rows_all = s["rows_all"]
    assert [r["iteration"] for r in rows_all] == list(range(30))
    assert [r["env_steps"] for r in rows_all] == [16 * (k + 1) for k in range(30)]
    assert all(ROW_KEYS <= set(r) for r in rows_all)
    # threshold = max(learning_starts 4 * 16 envs, batch 32) = 64 rows = 4 iterations of random
    # actions without updates, then learning at iteration 4.
    assert s["warmup_iterations"] == 4 and s["first_learning_iteration"] == 4
    assert [r["learning"] for r in rows_all] == [False] * 4 + [True] * 26
    for r in rows_all[:4]:
        assert r["learner_train_ms"] is None and r["critic_loss"] is None
    for r in rows_all[4:]:
        assert r["learner_train_ms"] > 0 and math.isfinite(r["critic_loss"])
        assert r["temperature"] > 0 and r["reward_scale"] > 0
    # rows = the last summary_last 20 learning rows = iterations 10..29
    assert [r["iteration"] for r in s["rows"]] == list(range(10, 30))
    assert s["num_samples"] == 20 and s["num_samples_all"] == 30
    assert (s["summary_first_iteration"], s["summary_last_iteration"]) == (10, 29)
    for key in ("learner_train_ms", "collector_cycle_ms", "iter_ms"):
        stats = s[key]
        assert set(stats) == STATS and stats["count"] == 20
        vals = np.array([r[key] for r in s["rows"]])
        assert stats["median"] == pytest.approx(np.median(vals))
        assert stats["min"] <= stats["median"] <= stats["p90"] <= stats["p95"] <= stats["max"]
    med = {k: s[k]["median"] for k in ("learner_train_ms", "collector_cycle_ms", "iter_ms")}
    expected = max(med["learner_train_ms"], med["collector_cycle_ms"]) / med["iter_ms"]
    assert s["overlap_efficiency"] == pytest.approx(expected)
    assert s["env_steps_per_s"] == pytest.approx(16 * 1e3 / med["iter_ms"])


def test_timings_nest_per_iteration(tiny_run):
    _, s, _, _ = tiny_run
    for r in s["rows_all"]:
        # collector busy time contains env.step; an iteration contains the update launch
        assert r["collector_cycle_ms"] >= r["env_step_ms"] > 0
        if r["learning"]:
            assert r["iter_ms"] >= r["learner_host_ms"] >= r["learner_train_ms"] * 0.99
        # the hand-off, the wait for the tick and the store: inside the iteration
        parts = r["action_ms"] + r["collector_wait_ms"] + r["insert_ms"]
        assert parts <= r["iter_ms"]
        # the serial path's pieces: action, release, the tick, the wake-up after it
        assert r["release_ms"] >= 0 and r["join_ms"] >= 0
        serial = r["action_ms"] + r["release_ms"] + r["collector_start_ms"]
        serial += r["collector_cycle_ms"] + r["join_ms"]
        assert serial <= r["iter_ms"]
        # the row was built (off the serial path: not part of iter_ms)
        assert r["bookkeeping_ms"] > 0
        assert r["straggler_ms"] is None  # the envs step in-process
        # the tick starts after its release and ends before the join, inside the iteration
        assert 0 <= r["collector_start_ms"]
        assert r["collector_start_ms"] + r["collector_cycle_ms"] <= r["iter_ms"]
    assert set(s["extra_timings"]) >= {
        "bookkeeping_ms",
        "insert_ms",
        "action_ms",
        "collector_start_ms",
        "release_ms",
        "join_ms",
    }
    assert s["extra_timings"]["bookkeeping_ms"]["count"] == len(s["rows"])


def test_training_config_command_and_environment(tiny_run):
    run_dir, s, _, _ = tiny_run
    tc = s["training_config"]
    assert tc["critic_updates_per_iteration"] == 2
    assert tc["actor_updates_per_iteration"] == 1
    assert tc["temperature_updates_per_iteration"] == 1
    assert (tc["num_envs"], tc["batch_size"], tc["replay_capacity"]) == (16, 32, 256)
    assert (tc["path"], tc["executor"], tc["device"]) == ("eager", "eager", "cpu")
    assert s["config"]["run"]["num_envs"] == 16 and s["config"]["update"]["updates_per_step"] == 2
    assert tc["update"] == "u2"
    assert "run.num_envs=16" in s["command"]["command"]
    assert s["command"]["command"].startswith("python -m flashsac_bench ")
    assert s["device"]["torch"] and s["device"]["device"] == "cpu"
    assert set(s["git"]) == {"commit", "branch", "dirty"}
    assert s["cold_start_s"] is not None and s["cold_start_s"] >= 0
    # setup_s is the measured wall time to the first iteration: it holds every timed part
    # (cold_start_s already holds device_steps_capture_s) and is not their sum by construction
    st = s["startup"]
    parts = ("env_build_s", "learner_build_s", "cold_start_s", "env_ready_s")
    assert all(st[k] >= 0 for k in parts)
    assert st["cold_start_s"] >= st["device_steps_capture_s"]
    assert sum(st[k] for k in parts) <= s["setup_s"] < sum(st[k] for k in parts) + 5.0
    # the disjoint parts (cold_start_s is a total of three of them) account for all of it
    disjoint = [k for k in st if k != "cold_start_s"]
    assert sum(st[k] for k in disjoint) == pytest.approx(s["setup_s"], abs=1e-6)
    captures = st["learner_warmup_s"] + st["device_steps_capture_s"] + st.get("env_capture_s", 0)
    assert st["cold_start_s"] == pytest.approx(captures)
    assert {"before_setup_s", "logger_open_s", "other_s"} <= st.keys()
    compiled = s["compile"]  # the eager path compiles nothing
    assert compiled == {} or (compiled["dynamo_s"] == 0 and compiled["backend_s"] == 0)
    # replay fills up to its capacity (16 x 16 rows) and stays there
    assert [r["replay_rows"] for r in s["rows_all"]][-1] == 256
    assert (run_dir / "checkpoints" / "iter_0000030.pt").is_file()
    assert s["last_checkpoint"].endswith("iter_0000030.pt")


def test_tensorboard_scalars_use_unilab_names(tiny_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir, _, _, _ = tiny_run
    acc = EventAccumulator(str(run_dir / "tb"))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for tag in (
        "timing/learner_train_ms",
        "perf/collector_cycle_ms",
        "perf/iter_ms",
        "perf/env_steps_per_s",
        "reward/mean",
        "Loss/critic",
        "Loss/actor",
        "Loss/entropy",
        "Loss/temperature",
        "Policy/temperature",
        "Train/reward_scale_std",
        "Train/mean_episode_return",
        "Train/mean_episode_length",
        "Reward/alive",
        "Env/mean_abs_x0",
    ):
        assert tag in tags, tag
    # one point per 5-iteration window of finalized rows
    assert len(acc.Scalars("perf/iter_ms")) == 6


def test_plain_progress_lines(tiny_run):
    _, _, _, proc = tiny_run
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "env-steps/s" in ln]
    assert len(lines) == 6  # every log_every=5 iterations of 30
    assert "iter 30/30" in lines[-1]


@pytest.mark.slow
def test_smoke_preset_sweep_with_the_real_g1_env(tmp_path):
    """The README's `python -m flashsac_bench -m +experiment=smoke update=u2,u8`, real MuJoCo."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "FLASHSAC_BENCH_ENV_FACTORY"}
    sweep = tmp_path / "sweep"
    start = time.perf_counter()
    proc = run_cli(
        ["-m", "+experiment=smoke", "update=u2,u8", f"hydra.sweep.dir={sweep}"],
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert elapsed < 240  # each smoke run is meant to take well under 2 minutes here
    for run in ("0_u2_eager", "1_u8_eager"):
        s = read_summary(sweep / run)
        assert s["complete"] and s["iterations_done"] == 100 and s["num_samples"] == 80
        assert s["training_config"]["obs_dim"] == 98 and s["training_config"]["num_envs"] == 16
        assert all(math.isfinite(r["critic_loss"]) for r in s["rows"])
        assert any(r["episodes_done"] for r in s["rows_all"])  # real episodes ended
    for name in ("comparison.csv", "comparison.md", "comparison.png"):
        assert (sweep / name).is_file()
