"""Unit tests: statistics, row packing, progress output, atomic summary writes."""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pytest

from flashsac_bench.learner.replay import RowLayout
from flashsac_bench.runner.collector import Staging, pack_tick
from flashsac_bench.runner.progress import Progress, status_text
from flashsac_bench.runner.summary import select_rows, write_json
from flashsac_bench.runner.timing import overlap_efficiency, summarize
from tests.fakes.fake_env import FakeEnv


def test_summarize_known_values():
    s = summarize([float(v) for v in range(1, 11)] + [None, math.nan])
    # linear-interpolated percentiles of 1..10: p50 = 5.5, p90 = 9.1, p95 = 9.55
    assert s == {
        "count": 10,
        "mean": 5.5,
        "median": 5.5,
        "p90": pytest.approx(9.1),
        "p95": pytest.approx(9.55),
        "min": 1.0,
        "max": 10.0,
    }
    assert summarize([None]) == {
        "count": 0,
        "mean": None,
        "median": None,
        "p90": None,
        "p95": None,
        "min": None,
        "max": None,
    }


def test_overlap_efficiency():
    def med(m):
        return {"median": m}

    # learner 8 ms hidden behind a 10 ms collector, iteration 10.5 ms
    assert overlap_efficiency(med(8.0), med(10.0), med(10.5)) == pytest.approx(10 / 10.5)
    assert overlap_efficiency(med(None), med(10.0), med(10.5)) is None


def test_select_rows_skips_warmup_then_keeps_last():
    rows = [{"iteration": k, "learning": k >= 3} for k in range(20)]
    picked = select_rows(rows, summary_last=10)
    assert [r["iteration"] for r in picked] == list(range(10, 20))
    assert [r["iteration"] for r in select_rows(rows, 100)] == list(range(3, 20))


def test_pack_tick_stores_true_final_obs_and_previous_obs():
    env = FakeEnv(num_envs=6, seed=3, max_episode_steps=2)
    layout = RowLayout(env.obs_dim, env.critic_obs_dim, env.action_dim)
    s = Staging(layout, env.num_envs, pin=False)
    obs, critic = env.reset()
    s.set_current(obs, critic, np.zeros(6, np.float32))
    s.actions[:] = 0.5
    pack_tick(env, s, want_metrics=False)
    first_next = s.cols["next_obs"].copy()
    # step 2 ends every episode (max_episode_steps=2): next_obs is the final obs, the current
    # obs for acting is the first obs of the new episode, and they differ.
    s.actions[:] = -0.25
    result = pack_tick(env, s, want_metrics=True)
    assert np.array_equal(s.cols["obs"], first_next)  # row obs = obs the action was taken on
    assert np.array_equal(s.cols["next_obs"], env.out.final_obs)
    assert not np.allclose(s.cols["next_obs"], s.obs)
    assert np.array_equal(s.obs, env.out.obs)
    assert np.all(s.cols["actions"] == -0.25)
    assert np.array_equal(s.cols["rewards"][:, 0], env.out.reward)
    done = env.out.terminated | env.out.truncated
    assert done.all() and np.array_equal(s.dones, done.astype(np.float32))
    assert np.array_equal(
        s.cols["terminated"][:, 0] + s.cols["truncated"][:, 0], np.ones(6, np.float32)
    )
    assert len(result.episode_returns) == 6 and np.all(result.episode_lengths <= 2)
    assert result.env_metrics is not None and result.cycle_ms >= result.env_step_ms > 0


def test_status_text_and_plain_progress(caplog):
    status = {
        "iteration": 9,
        "iterations": 100,
        "learning": True,
        "reward_mean": 0.5,
        "episode_return_mean": 12.0,
        "learner_train_ms": 4.25,
        "collector_cycle_ms": 3.0,
        "iter_ms": 5.0,
        "env_steps_per_s": 51200.0,
    }
    text = status_text(status)
    assert "iter 10/100" in text and "51,200 env-steps/s" in text and "learner 4.25 ms" in text
    with caplog.at_level(logging.INFO, logger="flashsac_bench.runner"):
        with Progress("plain", log_every=5) as p:
            for k in range(10):
                p.update({**status, "iteration": k})
    assert [r.getMessage().split()[1] for r in caplog.records] == ["5/100", "10/100"]


def test_rich_progress_renders(capsys):
    with Progress("rich", log_every=5) as p:
        assert p.mode == "rich"
        p.update(
            {"iteration": 0, "iterations": 3, "learning": False, "reward_mean": None, "iter_ms": 1}
        )
    out = capsys.readouterr().out
    assert "iter 1/3" in out and "warmup" in out


def test_write_json_is_strict_and_atomic(tmp_path):
    path = tmp_path / "summary.json"
    write_json(path, {"a": math.nan, "b": np.float32(1.5), "c": [math.inf, 2]})
    assert json.loads(path.read_text()) == {"a": None, "b": 1.5, "c": [None, 2]}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temp file left


def test_a_factory_that_returns_no_vec_env_fails_clearly(tmp_path):
    from flashsac_bench.cli.train import train
    from tests.fakes.runs import tiny_config

    with pytest.raises(TypeError, match="returned dict, not a VecEnv"):
        train(tiny_config(), run_dir=tmp_path, env_factory=lambda *a: {})


def test_the_tick_means_are_np_mean_bit_for_bit():
    """The faster mean of the collector (reward/mean, Reward/<term>, run.stop_at_walk's
    tracking) and the env's metrics."""
    from flashsac_bench.envs.contract.host_stats import array_mean

    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        for n in (1, 7, 1024, 4099):
            for scale in (1e-3, 1.0, 1e4):
                v = (rng.normal(size=n) * scale + scale).astype(dtype)
                assert array_mean(v) == float(np.mean(v)) == float(v.mean()), (dtype, n, scale)


def test_the_steps_prepare_the_random_action_draw_before_the_loop():
    """The loop's random-action step is not captured: its draw's first-use work (which may
    compile on CUDA) happens when the steps are prepared, outside the loop's no-sync zone."""
    from flashsac_bench.runner.device_steps import DeviceSteps
    from lab.bench.synthetic import Setup, build_learner

    setup = Setup(batch_size=8, updates_per_step=2, num_envs=4, tiny=True)
    learner = build_learner(setup, "eager")
    rng = learner.state.rng
    counter = rng.counter.item()
    steps = DeviceSteps(learner, Staging(learner.ring.layout, setup.num_envs, pin=False))
    steps.capture()
    made = set(rng._constants)
    assert rng.counter.item() == counter
    steps.act_random()
    assert set(rng._constants) == made and rng.counter.item() == counter + 1
