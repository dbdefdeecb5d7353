"""The runner with a device env (envs.contract.api.DeviceVecEnv): the device collector and
staging store exactly the transitions the collector thread stores, so a run trains bit for bit as
the same env's host run; checkpoints and resume work the same way (CPU, eager)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from flashsac_bench.cli.train import train
from flashsac_bench.runner.checkpoint import checkpoint_path, load_checkpoint, resolve_resume_path
from tests.fakes.fake_device_env import FakeDeviceEnv
from tests.fakes.fake_env import FakeEnv
from tests.fakes.runs import read_summary, timing_free, tiny_config

N = 7  # learning starts at iteration 4, so iterations 4.. update


def _host(task, backend, num_envs, seed):
    return FakeEnv(num_envs, seed)


def _device(task, backend, num_envs, seed):
    return FakeDeviceEnv(num_envs, seed)


def _run(run_dir: Path, factory, **cfg) -> dict:
    train(tiny_config(**cfg), run_dir=run_dir, env_factory=factory)
    return read_summary(run_dir)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("device_env")
    host = _run(tmp / "host", _host, iterations=N + 1)
    device = _run(tmp / "device", _device, iterations=N + 1)
    # checkpoint at N and go on; then resume from that file
    _run(tmp / "b", _device, iterations=N + 3, checkpoint_every=N)
    resumed = _run(tmp / "c", _device, iterations=N + 1, resume=str(checkpoint_path(tmp / "b", N)))
    return tmp, host, device, resumed


def _tensors(run_dir: Path) -> dict:
    return load_checkpoint(resolve_resume_path(run_dir))


def test_a_device_env_run_trains_exactly_as_its_host_run(runs):
    tmp, host, device, _ = runs
    assert device["complete"] and device["training_config"]["env_mode"] == "device"
    assert device["training_config"]["env_step"] == "eager, packing eager"
    assert host["training_config"]["env_step"] == "collector_thread"
    a, b = _tensors(tmp / "host"), _tensors(tmp / "device")
    for key, value in a["learner"]["tensors"].items():
        assert torch.equal(value, b["learner"]["tensors"][key]), key
    assert torch.equal(a["replay"]["storage"], b["replay"]["storage"])
    for key in ("obs", "critic_obs", "dones"):
        assert np.array_equal(a["staging"][key], b["staging"][key]), key
    rows_a = [timing_free(r) for r in host["rows_all"]]
    rows_b = [timing_free(r) for r in device["rows_all"]]
    # The tick's reward mean is summed in float64 on the device, in float32 by the thread's
    # numpy: the one entry that may differ, in its last float32 bits.
    for ra, rb in zip(rows_a, rows_b, strict=True):
        assert rb.pop("reward_mean") == pytest.approx(ra.pop("reward_mean"), rel=1e-6, abs=1e-7)
    assert rows_a == rows_b
    # the rows are a real run's: learning happened, episodes ended (so the comparison can fail)
    assert any(r["critic_loss"] is not None for r in rows_b)
    assert sum(r["episodes_done"] for r in rows_b) > 0


def test_a_build_beside_the_setup_is_recorded_as_the_env_says(runs, tmp_path):
    _, _, device, _ = runs
    assert device["setup_beside"] == {}  # built in the caller's thread

    def built_beside(task, backend, num_envs, seed):
        env = FakeDeviceEnv(num_envs, seed)
        env.background_build_s = 0.25  # what an env that built on a thread says (envs.contract.api)
        return env

    beside = _run(tmp_path / "beside", built_beside, iterations=2)
    assert beside["setup_beside"] == {"env_build_s": 0.25}


def test_a_device_env_run_resumes_bit_for_bit(runs):
    tmp, _, device, resumed = runs
    a, c = _tensors(tmp / "device"), _tensors(tmp / "c")
    for key, value in a["learner"]["tensors"].items():
        assert torch.equal(value, c["learner"]["tensors"][key]), key
    assert torch.equal(a["replay"]["storage"], c["replay"]["storage"])
    keys = ("critic_loss", "actor_loss", "reward_mean", "episode_return_mean")
    assert {k: resumed["rows_all"][N][k] for k in keys} == {
        k: device["rows_all"][N][k] for k in keys
    }
    assert resumed["resume_iteration"] == N


def test_the_device_collectors_timings_fill_the_rows(runs):
    _, _, device, _ = runs
    row = device["rows_all"][-1]
    assert row["env_step_ms"] > 0 and row["collector_cycle_ms"] >= row["env_step_ms"]
    assert row["iter_ms"] > 0 and row["insert_ms"] >= 0
