"""A checkpoint carries the model its envs ran (an external MJCF with every file it reads, and
its hash): resume refuses a model file that changed since, in one line; evaluate and export use
the stored model, so editing or deleting the file changes nothing they compute."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from flashsac_bench.cli.export import export_checkpoint
from flashsac_bench.config import to_config
from flashsac_bench.envs.g1.model import g1_spec, model_record
from flashsac_bench.evaluation.config import EvalConfig
from flashsac_bench.evaluation.evaluate import evaluate
from flashsac_bench.runner.checkpoint import load_checkpoint
from flashsac_bench.runner.loop import Runner
from flashsac_bench.runner.resume import ResumeError, plan_resume
from tests.evaluation.conftest import TINY_RUN
from tests.fakes.runs import run_cli, with_repo_on_path


@pytest.fixture(scope="module")
def external_run(tmp_path_factory) -> tuple[Path, Path, str]:
    """(run dir, its model file, the file's original text): a tiny run on an external MJCF."""
    threads, precision = torch.get_num_threads(), torch.get_float32_matmul_precision()
    tmp = tmp_path_factory.mktemp("external_model")
    model_file = tmp / "g1.xml"
    text = g1_spec().to_xml()
    model_file.write_text(text)
    run_dir = tmp / "run"
    cfg = {**TINY_RUN, "task": {"model_file": str(model_file)}}
    try:
        Runner(to_config(cfg), run_dir).run()
    finally:
        torch.set_num_threads(threads)
        torch.set_float32_matmul_precision(precision)
    return run_dir, model_file, text


@pytest.fixture
def restored(external_run):
    """The model file as the run had it, again after the test."""
    run_dir, model_file, text = external_run
    yield external_run
    model_file.write_text(text)


def _heavier_gravity(text: str) -> str:
    return text.replace("<option ", '<option gravity="0 0 -30" ', 1)


def test_the_checkpoint_carries_the_model_file(external_run):
    run_dir, model_file, text = external_run
    payload = load_checkpoint(sorted((run_dir / "checkpoints").glob("iter_*.pt"))[-1])
    record = payload["model"]
    assert record["model_file"] == str(model_file)
    assert record["files"] == {"g1.xml": text.encode()}
    assert record["sha256"] == model_record(str(model_file))["sha256"]


def test_resume_refuses_a_changed_model_file(restored, tmp_path):
    run_dir, model_file, text = restored
    run = {**TINY_RUN["run"], "iterations": 20, "resume": str(run_dir)}
    config = to_config({**TINY_RUN, "task": {"model_file": str(model_file)}, "run": run})
    plan_resume(config, run_dir, model=model_record(str(model_file)))  # unchanged: fine
    model_file.write_text(_heavier_gravity(text))
    with pytest.raises(ResumeError, match=f"task.model_file={model_file} changed since the"):
        plan_resume(config, run_dir, model=model_record(str(model_file)))
    # through the CLI: one line, before any work
    args = [
        "hardware=cpu", "hardware.torch_threads=1", "backend.num_threads=1",
        "learner.actor_hidden_dim=16", "learner.critic_hidden_dim=16", "learner.num_atoms=11",
        "replay.batch_size=32", "replay.replay_buffer_n=16", "replay.learning_starts=2",
        "run.num_envs=4", "run.iterations=20", "run.progress=plain", "logger=none",
        "run.log_every=4", f"task.model_file={model_file}", f"run.resume={run_dir}",
        f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    proc = run_cli(args, env=with_repo_on_path(dict(os.environ)), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "changed since the checkpoint was written" in lines[0], lines


def test_evaluate_and_export_use_the_stored_model(restored, tmp_path):
    run_dir, model_file, text = restored
    stored = load_checkpoint(sorted((run_dir / "checkpoints").glob("iter_*.pt"))[-1])["model"]

    def returns(out: str) -> list[float]:
        ec = EvalConfig(
            checkpoint=str(run_dir), episodes=2, num_envs=2, render=False, threads=1,
            out_dir=str(tmp_path / out),
        )  # fmt: skip
        report = evaluate(ec)
        assert report["model_sha256"] == stored["sha256"]
        assert report["task"]["model_file"] == str(model_file)  # named as trained
        return [e["return"] for e in report["episodes"]]

    before = returns("a")
    model_file.write_text(_heavier_gravity(text))  # another robot, as far as the file goes
    assert model_record(str(model_file))["sha256"] != stored["sha256"]
    assert returns("b") == before
    model_file.unlink()
    assert returns("c") == before
    result = export_checkpoint(run_dir, tmp_path / "export", onnx="false")
    assert Path(result["torchscript"]).is_file()
    assert result["meta"]["model_sha256"] == stored["sha256"]
