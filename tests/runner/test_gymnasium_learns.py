"""FlashSAC learns a Gymnasium task on the CPU: +experiment=gym_cpu (InvertedPendulum-v5, 2 envs,
4000 env steps, seed 1) ends with a deterministic policy that balances the pole, a return of at
least 900 of 1000 over 5 evaluation episodes (the policy that has not learned returns < 300)."""

from __future__ import annotations

import time

import pytest

from flashsac_bench.cli.train import train
from flashsac_bench.config import to_config
from flashsac_bench.evaluation.config import EvalConfig
from flashsac_bench.evaluation.evaluate import evaluate
from tests.config.test_config import composed


@pytest.mark.slow
def test_flashsac_learns_inverted_pendulum_on_the_cpu(tmp_path, gymnasium_extra):
    config = to_config(composed(["+experiment=gym_cpu", "logger=none", "run.progress=plain"]))
    assert config.run.num_envs * config.run.iterations == 4000  # the fixed env-step budget
    t0 = time.perf_counter()
    train(config, run_dir=tmp_path / "run")
    trained_s = time.perf_counter() - t0
    ec = EvalConfig(
        checkpoint=str(tmp_path / "run"), episodes=5, num_envs=5, render=False, wandb=False
    )
    returns = [e["return"] for e in evaluate(ec)["episodes"]]
    assert sum(returns) / len(returns) >= 900, (returns, f"trained in {trained_s:.0f} s")
