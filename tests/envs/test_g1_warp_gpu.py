"""backend=mjwarp on a CUDA device: what a GPU machine must show before its figures count.
Skipped without CUDA (tests/conftest.py) or without the [mjwarp] extra.

- The control step captures (the task's torch parts as torch graphs around Warp's graphs of the
  physics), and its replays compute the eager step: its rows stay within what a second eager env
  of the same seed differs by (MuJoCo Warp's GPU kernels do not repeat their last bits from one
  env to the next, not even in its deterministic mode: docs/results.md, "The GPU suite, sixth
  pass"), and its terminations are the eager step's.
- From the same states, the GPU's rows match the CPU backend's as on Warp's CPU device
  (tolerances ten times looser: GPU float32 kernels may round otherwise than the CPU's).
- A training run on the cudagraph path replays graphs for the env step and the packing, keeps
  the loop free of hidden host synchronizations, and writes its summary; the env's tick runs on
  its stream beside the update (the update starts before the tick ends).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from flashsac_bench.cli.train import train
from flashsac_bench.config.backend import MjwarpConfig, WarpOptions
from flashsac_bench.envs import make_env
from flashsac_bench.learner.learner import FlashSACLearner
from flashsac_bench.runner.device_collector import DeviceCollector
from flashsac_bench.runner.loop import Runner
from tests.envs.test_g1_warp import TASK, _actions, _compare_rows, _cpu, _snapshot
from tests.fakes.runs import read_summary, tiny_config

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("mjwarp_extra")]

DEVICE = "cuda:0"
CUDA = {"name": "cuda", "device": "cuda", "dtype": "bfloat16", "matmul_precision": "high"}


def _gpu_env(n: int = 6, deterministic: bool = False):
    warp = WarpOptions(device=DEVICE, deterministic=deterministic)
    return make_env(TASK, MjwarpConfig(warp=warp), n, 5)


# A captured step may differ from the eager one by at most this many times what a second eager
# env of the same seed differs by, or by ROUNDING where that env happens to agree to the bit. A
# broken capture (a stale action, a skipped stage, another env's work in its graph) moves rows by
# O(1e-2) or more within a step.
TWIN_FACTOR, ROUNDING = 10.0, 1e-4


def test_the_step_captures_as_graphs_that_replay_the_eager_step() -> None:
    actions = torch.as_tensor(_actions(n=6, steps=40, seed=3), device=DEVICE)
    static = torch.zeros_like(actions[0])
    with (
        _gpu_env(deterministic=True) as eager,
        _gpu_env(deterministic=True) as twin,
        _gpu_env(deterministic=True) as graph,
    ):
        for env in (eager, twin, graph):
            env.reset()
        assert graph.capture(static), graph.capture_error
        assert graph.step_mode == "cuda_graph" and twin.step_mode != "cuda_graph"
        ended = 0
        worst: dict[str, list[float]] = {}  # key: [captured vs eager, twin vs eager]
        for x in actions:
            want = _snapshot(eager.step(x))
            same_seed = _snapshot(twin.step(x))
            static.copy_(x)
            got = _snapshot(graph.step(static))
            ended += int(want["terminated"].sum() + want["truncated"].sum())
            for key, value in want.items():
                if not np.issubdtype(value.dtype, np.floating):  # flags and counters: exact
                    np.testing.assert_array_equal(got[key], value, err_msg=key)
                    continue
                pair = worst.setdefault(key, [0.0, 0.0])
                pair[0] = max(pair[0], float(np.max(np.abs(got[key] - value), initial=0.0)))
                pair[1] = max(pair[1], float(np.max(np.abs(same_seed[key] - value), initial=0.0)))
        assert ended > 0
        beyond = {k: v for k, v in worst.items() if v[0] > max(TWIN_FACTOR * v[1], ROUNDING)}
        assert beyond == {}, f"captured vs eager beyond the same-seed twin's floor: {beyond}"


def test_rows_match_the_cpu_backend_from_the_same_states() -> None:
    with _gpu_env() as w, _cpu() as c:
        w.reset()
        c.reset()
        worst = _compare_rows(w, c, _actions(seed=1), sync=True)
    rows = ("obs", "critic_obs", "final_obs", "final_critic_obs")
    assert all(worst[name] < 1e-3 for name in rows), worst
    assert all(v < 5e-5 for k, v in worst.items() if k not in rows), worst


def test_a_cudagraph_run_replays_graphs_without_hidden_syncs(tmp_path, monkeypatch) -> None:
    original = Runner.learn

    def strict(self, *args):
        torch.cuda.set_sync_debug_mode("error")
        try:
            return original(self, *args)
        finally:
            torch.cuda.set_sync_debug_mode("default")

    monkeypatch.setattr(Runner, "learn", strict)
    backend = {"name": "mjwarp", "warp": {"device": "cuda"}}
    cfg = tiny_config(num_envs=64, iterations=20, path="cudagraph", hardware=CUDA, backend=backend)
    train(cfg, run_dir=tmp_path)
    s = read_summary(tmp_path)
    tc = s["training_config"]
    assert s["complete"] and tc["env_mode"] == "device"
    assert tc["env_step"] == "cuda_graph, packing cuda_graphs"
    assert tc["env_overlap"] == "stream"
    assert tc["device_steps"] == "cuda_graphs"
    for row in s["rows_all"]:
        assert row["env_step_ms"] > 0 and row["collector_cycle_ms"] >= row["env_step_ms"]


def test_the_env_tick_runs_beside_the_update(tmp_path, monkeypatch) -> None:
    """Device time of every learning iteration: the update (on the loop's stream) starts
    before the env's tick (on its lane's stream) ends. A serial order fails this."""
    starts: list[torch.cuda.Event] = []
    original_update = FlashSACLearner.update

    def update(self) -> None:
        starts.append(torch.cuda.Event(enable_timing=True))
        starts[-1].record()
        original_update(self)

    gaps: list[float] = []
    original_wait = DeviceCollector.wait

    def wait(self):
        tick_start = self._events[0]
        result = original_wait(self)  # joined: the tick's events have completed
        if starts:
            torch.cuda.synchronize()
            start = starts.pop()
            gaps.append(tick_start.elapsed_time(start) - result.cycle_ms)
        return result

    monkeypatch.setattr(FlashSACLearner, "update", update)
    monkeypatch.setattr(DeviceCollector, "wait", wait)
    backend = {"name": "mjwarp", "warp": {"device": "cuda"}}
    cfg = tiny_config(num_envs=512, iterations=24, path="cudagraph", hardware=CUDA, backend=backend)
    train(cfg, run_dir=tmp_path)
    assert read_summary(tmp_path)["training_config"]["env_overlap"].startswith("stream")
    assert len(gaps) >= 16
    # the update's start minus the tick's end: negative where they overlapped
    assert sum(g < 0 for g in gaps) >= 0.9 * len(gaps), gaps
