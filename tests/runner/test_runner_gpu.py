"""The runner on a CUDA device: every path, CUDA-event timing, no hidden host syncs in the loop,
resume equivalence. Skipped without CUDA (see tests/conftest.py)."""

from __future__ import annotations

import math

import pytest
import torch
from runner_fakes import FakeEnv
from runner_helpers import read_summary, tiny_config

from flashsac_bench.runner import train
from flashsac_bench.runner.checkpoint import load_checkpoint, resolve_resume_path
from flashsac_bench.runner.loop import Runner

pytestmark = pytest.mark.gpu

CUDA = {"name": "cuda", "device": "cuda", "dtype": "bfloat16", "matmul_precision": "high"}


def _factory(task, backend, num_envs, seed, array_factory=None):
    return FakeEnv(num_envs, seed)


@pytest.mark.parametrize("path", ["eager", "compile", "cudagraph"])
def test_every_path_trains_on_cuda(tmp_path, path):
    cfg = tiny_config(num_envs=16, iterations=20, path=path, hardware=CUDA)
    train(cfg, run_dir=tmp_path, env_factory=_factory)
    s = read_summary(tmp_path)
    assert s["complete"] and s["training_config"]["executor"] == path
    assert s["device"]["gpu"] and s["training_config"]["dtype"] == "bfloat16"
    learning = [r for r in s["rows_all"] if r["learning"]]
    assert len(learning) == 16
    for r in learning:
        assert r["learner_train_ms"] > 0 and math.isfinite(r["critic_loss"])


def test_cuda_loop_has_no_hidden_host_sync(tmp_path, monkeypatch):
    """Inside the loop the only synchronization is the explicit action hand-off: any implicit
    one (.item(), a pageable copy, ...) raises under sync debug mode "error"."""
    original = Runner._train

    def strict(self, *args):
        torch.cuda.set_sync_debug_mode("error")
        try:
            return original(self, *args)
        finally:
            torch.cuda.set_sync_debug_mode("default")

    monkeypatch.setattr(Runner, "_train", strict)
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
