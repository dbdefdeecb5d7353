"""Fixtures of the evaluation / export / parity tests: one tiny real G1 training run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from flashsac_bench.config import to_config
from flashsac_bench.learner.learner import FlashSACLearner
from flashsac_bench.runner.loop import Runner

# Small enough that 12 iterations of 4 G1 envs with updates take a few seconds on 2 cores.
TINY_RUN = {
    "hardware": {"name": "cpu", "device": "cpu", "dtype": "float32", "torch_threads": 1},
    "backend": {"num_threads": 1},
    "learner": {"actor_hidden_dim": 16, "critic_hidden_dim": 16, "num_atoms": 11},
    "replay": {"batch_size": 32, "replay_buffer_n": 16, "learning_starts": 2},
    "run": {
        "num_envs": 4,
        "iterations": 12,
        "progress": "plain",
        "log_every": 4,
    },
    "logger": {"name": "none"},
}


@dataclass
class TrainedRun:
    run_dir: Path
    checkpoint: Path
    learner: FlashSACLearner  # the learner that trained (its state is the final checkpoint's)
    iterations: int


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory: pytest.TempPathFactory) -> TrainedRun:
    threads, precision = torch.get_num_threads(), torch.get_float32_matmul_precision()
    run_dir = tmp_path_factory.mktemp("trained") / "run"
    runner = Runner(to_config(TINY_RUN), run_dir)
    try:
        runner.run()
    finally:
        torch.set_num_threads(threads)
        torch.set_float32_matmul_precision(precision)
    assert runner.parts is not None and runner.state.checkpoints
    return TrainedRun(
        run_dir=run_dir,
        checkpoint=Path(runner.state.checkpoints[-1]["path"]),
        learner=runner.parts.learner,
        iterations=TINY_RUN["run"]["iterations"],
    )
