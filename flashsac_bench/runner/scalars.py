"""The logged scalars under UniLab's names (unilab-rl 1.4.15's logger), the same
for every logger (TensorBoard, W&B)."""

from __future__ import annotations

from typing import Any

from flashsac_bench.runner.loggers import Sink
from flashsac_bench.runner.timing import window_mean

# row key -> logged tag
TAGS = {
    "learner_train_ms": "timing/learner_train_ms",
    "collector_cycle_ms": "perf/collector_cycle_ms",
    "iter_ms": "perf/iter_ms",
    "env_step_ms": "perf/env_step_ms",
    "action_ms": "perf/action_handoff_ms",
    "learner_host_ms": "perf/learner_host_ms",
    "collector_wait_ms": "perf/collector_wait_ms",
    "collector_start_ms": "perf/collector_start_ms",
    "release_ms": "perf/release_ms",
    "join_ms": "perf/join_ms",
    "insert_ms": "perf/replay_insert_ms",
    "bookkeeping_ms": "perf/bookkeeping_ms",
    "straggler_ms": "perf/straggler_ms",
    "replay_rows": "perf/replay_rows",
    "reward_mean": "reward/mean",
    "critic_loss": "Loss/critic",
    "actor_loss": "Loss/actor",
    "entropy": "Loss/entropy",
    "temperature_loss": "Loss/temperature",
    "temperature": "Policy/temperature",
    "reward_scale": "Train/reward_scale_std",
    "q_mean": "Train/q_mean",
    "critic_lr": "Train/critic_lr",
    "actor_lr": "Train/actor_lr",
    "episode_return_mean": "Train/mean_episode_return",
    "episode_length_mean": "Train/mean_episode_length",
}


class Scalars:
    """One point per logging window (the means of the window's finalized rows) into the run's
    logger (runner.loggers: TensorBoard, W&B, or none), under the names above."""

    def __init__(self, sink: Sink | None, num_envs: int) -> None:
        self.num_envs = num_envs
        self.sink = sink

    def points(self, rows: list[dict[str, Any]], extra: dict[str, float]) -> dict[str, float]:
        """The window's point: every tag that has a value, then the window's extra tags."""
        out: dict[str, float] = {}
        for key, tag in TAGS.items():
            value = window_mean(rows, key)
            if value is not None:
                out[tag] = value
        iter_ms = window_mean(rows, "iter_ms")
        if iter_ms:
            out["perf/env_steps_per_s"] = self.num_envs * 1e3 / iter_ms
        out.update(extra)
        return out

    def write(self, rows: list[dict[str, Any]], extra: dict[str, float]) -> None:
        if self.sink is None or not rows:
            return
        self.sink.write(int(rows[-1]["iteration"]), self.points(rows, extra))

    def state(self) -> dict[str, Any]:
        return self.sink.state() if self.sink is not None else {"name": "none"}

    def describe(self) -> dict[str, Any]:
        return self.sink.describe() if self.sink is not None else {"name": "none"}

    def close(self) -> None:
        if self.sink is not None:
            self.sink.close()
            self.sink = None
