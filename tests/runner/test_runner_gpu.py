"""The runner on a CUDA device: every path, CUDA-event timing, no hidden host syncs in the loop,
resume equivalence. Skipped without CUDA (see tests/conftest.py)."""

from __future__ import annotations

import math

import pytest
import torch

from flashsac_bench.cli.train import train
from flashsac_bench.runner.checkpoint import load_checkpoint, resolve_resume_path
from flashsac_bench.runner.collector import Staging
from flashsac_bench.runner.device_steps import DeviceSteps
from flashsac_bench.runner.loop import Runner
from lab.bench.synthetic import Setup, build_learner
from tests.fakes.fake_env import FakeEnv
from tests.fakes.runs import read_summary, tiny_config

pytestmark = pytest.mark.gpu

CUDA = {"name": "cuda", "device": "cuda", "dtype": "bfloat16", "matmul_precision": "high"}


def _factory(task, backend, num_envs, seed):
    return FakeEnv(num_envs, seed)


@pytest.mark.parametrize("path", ["eager", "compile", "cudagraph"])
def test_every_path_trains_on_cuda(tmp_path, path):
    cfg = tiny_config(num_envs=16, iterations=20, path=path, hardware=CUDA)
    train(cfg, run_dir=tmp_path, env_factory=_factory)
    s = read_summary(tmp_path)
    assert s["complete"] and s["training_config"]["executor"] == path
    assert s["training_config"]["device_steps"] == "cuda_graphs"
    assert s["device"]["gpu"] and s["training_config"]["dtype"] == "bfloat16"
    learning = [r for r in s["rows_all"] if r["learning"]]
    assert len(learning) == 16
    for r in learning:
        assert r["learner_train_ms"] > 0 and math.isfinite(r["critic_loss"])


def test_cuda_loop_has_no_hidden_host_sync(tmp_path, monkeypatch):
    """Inside the loop the only synchronization is the explicit action hand-off: any implicit
    one (.item(), a pageable copy, ...) raises under sync debug mode "error"."""
    original = Runner.learn

    def strict(self, *args):
        torch.cuda.set_sync_debug_mode("error")
        try:
            return original(self, *args)
        finally:
            torch.cuda.set_sync_debug_mode("default")

    monkeypatch.setattr(Runner, "learn", strict)
    cfg = tiny_config(num_envs=16, iterations=12, path="cudagraph", hardware=CUDA)
    train(cfg, run_dir=tmp_path, env_factory=_factory)
    assert read_summary(tmp_path)["complete"]


def test_resume_on_cuda_matches_the_uninterrupted_run(tmp_path):
    n = 7
    common = dict(num_envs=8, path="eager", hardware={**CUDA, "dtype": "float32"})
    train(tiny_config(iterations=n + 1, **common), run_dir=tmp_path / "a", env_factory=_factory)
    train(tiny_config(iterations=n, **common), run_dir=tmp_path / "b", env_factory=_factory)
    train(
        tiny_config(iterations=n + 1, resume=str(tmp_path / "b"), **common),
        run_dir=tmp_path / "c",
        env_factory=_factory,
    )
    a = load_checkpoint(resolve_resume_path(tmp_path / "a"))["learner"]["tensors"]
    c = load_checkpoint(resolve_resume_path(tmp_path / "c"))["learner"]["tensors"]
    mismatched = [k for k in a if not torch.equal(a[k], c[k])]
    assert mismatched == []


def _device_state(learner) -> dict[str, torch.Tensor]:
    ring = learner.ring
    out = learner.state.snapshot()
    out.update(storage=ring.storage.clone(), cursor=ring.cursor_t.clone(), size=ring.size.clone())
    return out


def test_captured_act_and_store_equal_the_eager_steps_bit_for_bit():
    setup = Setup(batch_size=64, updates_per_step=2, num_envs=32, tiny=True, device="cuda")
    g = torch.Generator().manual_seed(5)
    results = {}
    for capture in (False, True):
        learner = build_learner(setup, "eager")
        staging = Staging(learner.ring.layout, setup.num_envs, pin=True)
        steps = DeviceSteps(learner, staging, capture=capture)
        steps.capture()
        assert steps.mode == ("cuda_graphs" if capture else "eager")
        g.manual_seed(5)
        actions = []
        for _ in range(4):  # several replays: state (noise, RNG, ring cursor) must advance
            staging.obs_t.copy_(torch.randn(staging.obs_t.shape, generator=g))
            staging.dones_t.copy_((torch.rand(setup.num_envs, generator=g) < 0.3).float())
            steps.act()
            actions.append(staging.actions_t.clone())
            staging.slab_t.copy_(torch.randn(staging.slab_t.shape, generator=g))
            steps.store(staging.slab_t)
            learner.ring.advance(setup.num_envs)
        torch.cuda.synchronize()
        results[capture] = (actions, _device_state(learner), learner.ring.cursor)
    (eager_a, eager_s, eager_c), (graph_a, graph_s, graph_c) = results[False], results[True]
    assert all(torch.equal(a, b) for a, b in zip(eager_a, graph_a, strict=True))
    assert not torch.equal(eager_a[0], eager_a[1])  # the steps did advance
    assert [k for k in eager_s if not torch.equal(eager_s[k], graph_s[k])] == []
    assert eager_c == graph_c


def test_runs_with_and_without_step_graphs_compute_the_same_training(tmp_path, monkeypatch):
    """Eager act / store steps (their capture skipped) vs captured ones (async copies from the
    pinned slab): the same training, bit for bit (final learner state and replay ring)."""
    final = {}
    capture_steps = DeviceSteps.capture
    for capture in (False, True):
        cfg = tiny_config(num_envs=16, iterations=14, path="cudagraph", hardware=CUDA)
        skipped = (lambda self: None) if not capture else capture_steps
        monkeypatch.setattr(DeviceSteps, "capture", skipped)
        train(cfg, run_dir=tmp_path / str(capture), env_factory=_factory)
        s = read_summary(tmp_path / str(capture))
        assert s["training_config"]["device_steps"] == ("cuda_graphs" if capture else "eager")
        final[capture] = load_checkpoint(resolve_resume_path(tmp_path / str(capture)))
    a, b = final[False], final[True]
    ta, tb = a["learner"]["tensors"], b["learner"]["tensors"]
    assert [k for k in ta if not torch.equal(ta[k], tb[k])] == []
    assert torch.equal(a["replay"]["storage"], b["replay"]["storage"])


def test_a_stream_lane_runs_the_tick_beside_the_callers_work():
    """runner.env_lane: the tick (a kernel of known length on the lane's stream) and the
    update queued after it on the caller's stream overlap in device time; the serial lane
    puts them one after the other (so the measure can fail)."""
    from flashsac_bench.runner.env_lane import make_lane

    device = torch.device("cuda")
    cycles = 50_000_000  # tens of ms on any GPU: far longer than the launches between

    def measure(overlap: bool) -> tuple[float, float]:
        lane = make_lane(device, overlap=overlap)
        events = [torch.cuda.Event(enable_timing=True) for _ in range(4)]

        def tick() -> None:
            events[0].record()
            torch.cuda._sleep(cycles)
            events[1].record()

        try:
            origin = torch.cuda.Event(enable_timing=True)
            origin.record()
            lane.run(tick)
            events[2].record()  # the update, on the caller's stream
            torch.cuda._sleep(cycles)
            events[3].record()
            lane.join()
            torch.cuda.synchronize()
        finally:
            lane.close()
        t = [origin.elapsed_time(e) for e in events]
        return t[2] - t[1], (t[1] - t[0]) + (t[3] - t[2])  # update start - tick end, both spans

    gap, spans = measure(overlap=True)
    assert gap < 0, "the update waited for the tick"
    serial_gap, _ = measure(overlap=False)
    assert serial_gap >= 0
