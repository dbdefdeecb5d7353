"""TensorBoard scalars under UniLab's names (unilab.md §1.5, optimization repo §3.4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flashsac_bench.runner.timing import window_mean

# row key -> TensorBoard tag
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
    """Writes one point per logging window (the mean of the window's finalized rows)."""

    def __init__(self, log_dir: Path | None, num_envs: int) -> None:
        self.num_envs = num_envs
        self.writer: Any = None
        if log_dir is not None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir=str(log_dir), flush_secs=10)

    def write(self, rows: list[dict[str, Any]], extra: dict[str, float]) -> None:
        if self.writer is None or not rows:
            return
        step = int(rows[-1]["iteration"])
        for key, tag in TAGS.items():
            value = window_mean(rows, key)
            if value is not None:
                self.writer.add_scalar(tag, value, step)
        iter_ms = window_mean(rows, "iter_ms")
        if iter_ms:
            self.writer.add_scalar("perf/env_steps_per_s", self.num_envs * 1e3 / iter_ms, step)
        for tag, value in extra.items():
            self.writer.add_scalar(tag, value, step)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
