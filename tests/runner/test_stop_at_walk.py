"""run.stop_at_walk: the run ends, complete, at the first logged window that meets the walking
thresholds, judged as the learning analysis judges them (the mean episode length at the window's
end, its tracking_lin_vel reward mean over weight * ctrl_dt)."""

from __future__ import annotations

import numpy as np
import pytest

from flashsac_bench.cli.train import train
from flashsac_bench.config import run as run_config
from tests.fakes.fake_env import FakeEnv
from tests.fakes.runs import read_summary, tiny_config


class _LearnsToTrack(FakeEnv):
    """Adds a tracking_lin_vel reward term that rises linearly to its maximum over 60 ticks."""

    def __init__(self, num_envs: int, seed: int, top: float) -> None:
        super().__init__(num_envs, seed)
        self.top = top
        self.out.reward_terms["tracking_lin_vel"] = np.zeros(num_envs, np.float32)

    def step(self, actions):
        out = super().step(actions)
        out.reward_terms["tracking_lin_vel"][:] = self.top * min(1.0, self.ticks / 60)
        return out


def _run(tmp_path, stop: bool, monkeypatch):
    # The fake's episodes last at most 12 steps: a lower length threshold makes it reachable.
    monkeypatch.setattr(run_config, "WALK_EPISODE_LENGTH", 4.0)
    cfg = tiny_config(iterations=120, stop_at_walk=stop, logger="tensorboard")
    top = cfg.task.rewards.tracking_lin_vel * cfg.task.ctrl_dt

    def make(task, backend, num_envs, seed):
        return _LearnsToTrack(num_envs, seed, top)

    train(cfg, run_dir=tmp_path, env_factory=make)
    return read_summary(tmp_path), top


def _tb(run_dir, tag):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir / "tb"), size_guidance={"scalars": 0})
    acc.Reload()
    return {e.step: e.value for e in acc.Scalars(tag)}


@pytest.mark.parametrize("stop", [False, True])
def test_stop_at_walk_ends_at_the_first_window_over_the_thresholds(tmp_path, stop, monkeypatch):
    s, top = _run(tmp_path, stop, monkeypatch)
    assert s["complete"] and s["status"] == "complete"
    if not stop:
        assert s["iterations_done"] == 120 and s["stopped_by"] is None
        return
    lengths = {r["iteration"]: r["episode_length_mean"] for r in s["rows_all"]}
    tracking = _tb(tmp_path, "Reward/tracking_lin_vel")
    hits = [
        k
        for k in sorted(tracking)
        if tracking[k] / top >= run_config.WALK_TRACKING_FRAC and (lengths[k] or 0) >= 4.0
    ]
    assert hits, "the fake should meet the thresholds well before 120 iterations"
    k = hits[0]
    assert s["stopped_by"] == f"run.stop_at_walk: walking thresholds met at iteration {k}"
    # It stops at the start of the next iteration (the window is written while k is logged).
    assert k < s["iterations_done"] <= k + 2 < 120
