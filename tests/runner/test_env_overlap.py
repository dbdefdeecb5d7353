"""A device env's tick beside the update (runner.env_lane) computes exactly what it computes
before it: the same replay rows, learner, staging and env state, and the same rows, bit for
bit, whether the tick runs serially, on its worker thread while the update runs (Warp's CPU
device stands in for a GPU's second stream), or only after the update (the other extreme of
any interleaving). Compared within the test, against a serial run of the same seed."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from flashsac_bench.cli.train import train
from flashsac_bench.config.task import TaskConfig
from flashsac_bench.runner import setup
from flashsac_bench.runner.checkpoint import load_checkpoint, resolve_resume_path
from flashsac_bench.runner.env_lane import Lane, ThreadLane, make_lane
from tests.fakes.fake_device_env import FakeDeviceEnv
from tests.fakes.runs import read_summary, timing_free, tiny_config

ITERATIONS = 11  # learning starts at iteration 4: seven updates beside seven ticks


class AfterTheUpdate(Lane):
    """The tick runs when the loop joins it: after the update has run to its end."""

    mode = "after the update"

    def __init__(self) -> None:
        self._tick = None

    def run(self, fn) -> None:
        self._tick = fn

    def join(self) -> None:
        tick, self._tick = self._tick, None
        assert tick is not None
        tick()


LANES = {"serial": Lane, "thread": ThreadLane, "after the update": AfterTheUpdate}


def _fake(task, backend, num_envs, seed):
    return FakeDeviceEnv(num_envs, seed)


def _run(tmp: Path, lane: str, monkeypatch, factory=_fake, task=None, **cfg) -> tuple[dict, dict]:
    monkeypatch.setattr(setup, "make_lane", lambda device, overlap: LANES[lane]())
    run_dir = tmp / lane.replace(" ", "_")
    config = tiny_config(iterations=ITERATIONS, **cfg)
    if task is not None:
        config = dataclasses.replace(config, task=task)
    train(config, run_dir=run_dir, env_factory=factory)
    return read_summary(run_dir), load_checkpoint(resolve_resume_path(run_dir))


def _assert_same(a: object, b: object, where: str) -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            _assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
    else:
        assert a == b, where


def _assert_same_runs(runs: dict[str, tuple[dict, dict]]) -> None:
    (s0, c0) = runs["serial"]
    for lane, (s, c) in runs.items():
        assert s["complete"] and s["training_config"]["env_overlap"] == LANES[lane].mode
        for part in ("learner", "replay", "staging", "env"):
            _assert_same(c0[part], c[part], f"{lane}: {part}")
        assert [timing_free(r) for r in s["rows_all"]] == [timing_free(r) for r in s0["rows_all"]]
    # a real run: it learned, and episodes ended (so the comparison can fail)
    assert any(r["critic_loss"] is not None for r in s0["rows_all"])
    assert sum(r["episodes_done"] for r in s0["rows_all"]) > 0


def test_every_lane_trains_exactly_as_the_serial_order(tmp_path, monkeypatch) -> None:
    runs = {lane: _run(tmp_path, lane, monkeypatch) for lane in LANES}
    _assert_same_runs(runs)


def test_the_default_lane_of_a_cpu_device_is_the_thread(tmp_path) -> None:
    train(tiny_config(iterations=3), run_dir=tmp_path, env_factory=_fake)
    assert read_summary(tmp_path)["training_config"]["env_overlap"] == "thread"
    assert make_lane(torch.device("cpu"), overlap=False).mode == "serial"


class FailingEnv(FakeDeviceEnv):
    def step(self, actions):
        if self.steps == 5:
            raise RuntimeError("the physics diverged")
        return super().step(actions)


def test_a_tick_that_fails_in_the_thread_fails_the_run_and_ends_the_thread(tmp_path) -> None:
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(RuntimeError, match="the physics diverged"):
        train(
            tiny_config(iterations=ITERATIONS),
            run_dir=tmp_path,
            env_factory=lambda task, backend, n, seed: FailingEnv(n, seed),
        )
    s = read_summary(tmp_path)
    assert s["status"] == "failed" and "the physics diverged" in s["incomplete_reason"]
    left = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    assert not [t for t in left if t.name.startswith("env-tick")], left


@pytest.mark.slow
@pytest.mark.usefixtures("mjwarp")
def test_a_warp_run_trains_exactly_as_the_serial_order(tmp_path, monkeypatch) -> None:
    backend = {"name": "mjwarp", "warp": {"device": "cpu"}}
    # short episodes and a height limit random actions cross: resets within the run
    task = TaskConfig(episode_length_s=0.1, termination_min_height=0.7)
    runs = {
        lane: _run(tmp_path, lane, monkeypatch, factory=None, task=task, backend=backend)
        for lane in LANES
    }
    _assert_same_runs(runs)
    # the Warp env's own state moved (resets and the curriculum included)
    assert runs["serial"][1]["env"]["backend"] == "mjwarp"
