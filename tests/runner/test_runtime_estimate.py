"""The CPU run-time cost model behind the CLI's up-front warning (no timing: the model's
arithmetic against hand-computed values, and its calibration points)."""

from __future__ import annotations

import math

import pytest

from flashsac_bench.cli.runtime_estimate import (
    OP_OVERHEAD_S,
    S_PER_MAC,
    cpu_warning,
    cycle_row_macs,
    duration_text,
    estimate_cpu_run,
    sweep_cpu_warning,
)
from flashsac_bench.config import to_config

ONE_THREAD = {"hardware": {"name": "cpu", "device": "cpu", "torch_threads": 1}}


def test_row_macs_of_the_default_networks():
    # actor: 98x128 embed + 2 blocks x (128->512->128) + 128x58 head
    actor = 98 * 128 + 2 * 2 * 4 * 128 * 128 + 128 * 58
    # critic: 2 members x (130x256 embed + 2 blocks x (256->1024->256) + 256x101 head)
    critic = 2 * (130 * 256 + 2 * 2 * 4 * 256 * 256 + 256 * 101)
    u2 = 2 * (actor + 6 * critic) + 1 * (6 * actor + 2 * critic)
    assert cycle_row_macs(to_config({})) == u2 == 33_272_832


def test_the_model_reproduces_its_calibration_points():
    """u2 eager, 1 thread, measured 691.6 ms (B=256) and 5429.0 ms (B=2048)."""
    for batch, measured_s in ((256, 0.6916), (2048, 5.429)):
        cfg = to_config({**ONE_THREAD, "replay": {"batch_size": batch}})
        assert estimate_cpu_run(cfg, cores=1).learn_s == pytest.approx(measured_s, rel=0.01)


def test_a_bare_run_with_split_cores():
    cfg = to_config({**ONE_THREAD, "backend": {"num_threads": 1}})
    est = estimate_cpu_run(cfg, cores=2)
    env_s = 1024 / 4700
    learn_s = 3 * OP_OVERHEAD_S + 2048 * 33_272_832 * S_PER_MAC
    assert est.env_s == pytest.approx(env_s) and est.learn_s == pytest.approx(learn_s)
    assert est.iter_s == pytest.approx(max(env_s, learn_s))  # 1 + 1 threads fit: they overlap
    assert est.warmup_iterations == math.ceil(98 * 1024 / 1024)
    assert est.total_s == pytest.approx(98 * env_s + 902 * learn_s)
    assert est.text() == "1.4 h"
    # oversubscribed (2 + 2 threads on 2 cores): the two sides add up
    both = estimate_cpu_run(
        to_config(ONE_THREAD | {"hardware": {"name": "cpu", "device": "cpu"}}), 2
    )
    assert both.iter_s == pytest.approx(both.env_s + both.learn_s)


def test_the_warning_names_the_estimate_and_the_smoke_preset():
    text = cpu_warning(to_config({**ONE_THREAD, "backend": {"num_threads": 1}}), cores=2)
    assert text is not None and "about 1.4 h on the CPU" in text and "+experiment=smoke" in text
    smoke = {
        **ONE_THREAD,
        "learner": {"actor_hidden_dim": 32, "critic_hidden_dim": 64},
        "replay": {"batch_size": 64, "replay_buffer_n": 32, "learning_starts": 4},
        "run": {"num_envs": 16, "iterations": 100},
    }
    assert cpu_warning(to_config(smoke), cores=2) is None
    limited = {**ONE_THREAD, "run": {"time_limit_s": 60.0}}
    assert cpu_warning(to_config(limited), cores=2) is None  # capped by the time limit
    gpu = {"hardware": {"name": "h200", "device": "cuda"}}
    assert cpu_warning(to_config(gpu), cores=2) is None


def _u(ups: int) -> dict:
    return {**ONE_THREAD, "backend": {"num_threads": 1}, "update": {"updates_per_step": ups}}


def test_a_sweep_is_warned_about_in_one_line_with_its_total():
    configs = [to_config(_u(u)) for u in (2, 2, 8, 8)]
    total = sum(estimate_cpu_run(c, cores=2).total_s for c in configs)
    text = sweep_cpu_warning(configs, cores=2)
    assert text is not None and "\n" not in text
    assert f"this sweep's 4 jobs would take about {duration_text(total)} on the CPU in all" in text
    assert "the longest, job 2:" in text and "+experiment=smoke" in text
    # jobs that will not run or that the model does not cover add nothing
    gpu = to_config({"hardware": {"name": "h200", "device": "cuda"}})
    more = sweep_cpu_warning([None, gpu, *configs], cores=2)
    assert more == text.replace("job 2", "job 4").replace("4 jobs", "6 jobs")
    smoke = {
        **ONE_THREAD,
        "learner": {"actor_hidden_dim": 32, "critic_hidden_dim": 64},
        "replay": {"batch_size": 64, "replay_buffer_n": 32, "learning_starts": 4},
        "run": {"num_envs": 16, "iterations": 100},
    }
    assert sweep_cpu_warning([to_config(smoke)] * 4, cores=2) is None


def test_the_command_warns_a_long_sweep_once(tmp_path, monkeypatch):
    """The check of `-m update=u2,u8 path=eager,compile` on a CPU: one line, before any job."""
    from flashsac_bench.cli import preflight, train
    from flashsac_bench.config import register_configs

    monkeypatch.chdir(tmp_path)
    register_configs()
    argv = ["-m", "update=u2,u8", "path=eager,compile", "hardware=cpu"]
    plan = preflight.check_command(argv, train.CONFIG_NAME, train.check_job)
    assert plan is not None
    (line,) = train.cpu_warnings(plan)
    assert line.startswith("warning: this sweep's 4 jobs would take about ")
    assert not list(tmp_path.iterdir())  # the check creates nothing
