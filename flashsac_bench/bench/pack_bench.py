"""Host cost of the collector's packing (runner.collector.pack_tick) without the physics.

The env hands back fixed G1-shaped outputs at once, so what is timed is only the packing around
env.step: copying the current obs / actions and the step's results into the replay slab, the
dones, the tick's reward means and finished episodes -- on the iteration's serial path.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from flashsac_bench.envs.api import EnvStep
from flashsac_bench.learner.replay import RowLayout
from flashsac_bench.runner.collector import Staging, pack_tick
from flashsac_bench.runner.timing import summarize

# The G1 Walk Flat task's dims (obs, critic obs, actions, reward terms).
G1_DIMS = (98, 101, 29, 9)


class _FixedEnv:
    """Returns the same step outputs at once (about 0.3% of envs done per tick)."""

    def __init__(self, num_envs: int, dims: tuple[int, int, int, int], seed: int = 0) -> None:
        obs, critic, _, terms = dims
        rng = np.random.default_rng(seed)

        def f32(*shape: int) -> np.ndarray:
            return rng.normal(size=shape).astype(np.float32)

        self.out = EnvStep(
            obs=f32(num_envs, obs),
            critic_obs=f32(num_envs, critic),
            final_obs=f32(num_envs, obs),
            final_critic_obs=f32(num_envs, critic),
            reward=f32(num_envs),
            terminated=rng.random(num_envs) < 0.002,
            truncated=rng.random(num_envs) < 0.001,
            reward_terms={f"term{i}": f32(num_envs) for i in range(terms)},
            episode_return=f32(num_envs),
            episode_length=f32(num_envs),
        )

    def step(self, actions: np.ndarray) -> EnvStep:
        return self.out

    def metrics(self) -> dict[str, float]:
        return {}


def time_pack(
    num_envs: int = 1024,
    dims: tuple[int, int, int, int] = G1_DIMS,
    ticks: int = 3000,
    warmup: int = 200,
) -> dict[str, Any]:
    """Median / p90 microseconds of one pack_tick (pageable slabs, as on the CPU)."""
    obs, critic, action, _ = dims
    env = _FixedEnv(num_envs, dims)
    staging = Staging(RowLayout(obs, critic, action), num_envs, pin=False)
    for _ in range(warmup):
        pack_tick(env, staging, want_metrics=False)  # type: ignore[arg-type]
    times = []
    for _ in range(ticks):
        t = time.perf_counter()
        pack_tick(env, staging, want_metrics=False)  # type: ignore[arg-type]
        times.append(time.perf_counter() - t)
    stats = summarize(t * 1e6 for t in times)
    return {
        "num_envs": num_envs,
        "dims": list(dims),
        "ticks": ticks,
        "median_us": stats["median"],
        "p90_us": stats["p90"],
    }
