"""evaluate, export and convert follow training's discipline: bad input is one line, a non-zero
exit and nothing written, checked before any work (also what only the checkpoint can tell: its
control rate, whether its tensors fit its config); unknown keys get "did you mean"; long steps
say what they do; outputs are readable by the group; an earlier evaluation is kept. The traced
policy is the same function at every batch size, which is why its TracerWarnings are silenced.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from flashsac_bench.cli import convert, evaluate, export
from flashsac_bench.cli.errors import UsageError
from flashsac_bench.cli.tool import compose_options
from flashsac_bench.config.learner import LearnerConfig
from flashsac_bench.config.update import UpdateConfig
from flashsac_bench.evaluation.config import EvalConfig
from flashsac_bench.evaluation.policy import DeterministicActor
from flashsac_bench.learner.learner import Dims, FlashSACLearner
from flashsac_bench.runner.checkpoint import load_checkpoint, save_checkpoint
from flashsac_bench.runner.writes import atomic_write_text
from tests.fakes.runs import with_repo_on_path

FAST = ["episodes=1", "num_envs=1", "render=false", "threads=1"]


def _cli(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", f"flashsac_bench.{module}", *args],
        cwd=cwd,
        env=with_repo_on_path(dict(os.environ)),
        capture_output=True,
        text=True,
        timeout=300,
    )


# ---------------------------------------------------------------------------- the trace
@pytest.mark.parametrize("align", [1, 8], ids=["unaligned", "padded"])
def test_the_traced_policy_acts_like_the_module_at_every_batch_size(align, tmp_path):
    learner = FlashSACLearner(
        LearnerConfig(actor_hidden_dim=12, critic_hidden_dim=20, num_atoms=11),
        UpdateConfig(updates_per_step=2, policy_frequency=2),
        Dims(obs=9, critic_obs=11, action=5),
        num_envs=4,
        batch_size=8,
        replay_capacity=64,
        gemm_align=align,
    )
    module = DeterministicActor.from_learner(learner)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = export.export_torchscript(module, tmp_path / "p.pt", {"x": 1})
    assert not [w for w in caught if issubclass(w.category, torch.jit.TracerWarning)]
    traced, meta = export.load_torchscript(path)
    g = torch.Generator().manual_seed(align)
    for batch in (1, 3, 7):  # the trace was taken at batch 2
        obs = torch.randn(batch, 9, generator=g) * 3
        assert torch.equal(traced(obs), module(obs)), batch
    assert meta == {"x": 1}


# ---------------------------------------------------------------------------- up front
def _mismatched(trained_run, tmp_path: Path) -> Path:
    """A checkpoint whose config says other network widths than its tensors have."""
    payload = load_checkpoint(trained_run.checkpoint)
    payload["config"]["learner"]["actor_hidden_dim"] = 32
    path = tmp_path / "run" / "checkpoints" / "iter_0000012.pt"
    save_checkpoint(path, {k: v for k, v in payload.items() if k != "format"})
    return path


@pytest.mark.parametrize(
    ("tool", "args", "texts"),
    [
        (evaluate, ["render=true", "render_fps=7"], ["render_fps=7 must divide the control rate"]),
        (evaluate, ["width=0"], ["width=0: must be in [8, 4096]"]),
        (evaluate, ["render_env=3"], ["render_env must be an env of this evaluation"]),
        (evaluate, ["episods=3"], ["unknown key episods (did you mean episodes?)"]),
        (evaluate, ["out_dir={file}"], ["cannot create out_dir", "is not a directory"]),
        (export, ["onnxx=false"], ["unknown key onnxx (did you mean onnx?)"]),
        (export, ["out_dir={file}"], ["cannot create out_dir", "is not a directory"]),
        (evaluate, ["checkpoint={mismatched}"], ["does not match its learner tensors"]),
        (export, ["checkpoint={mismatched}"], ["does not match its learner tensors"]),
    ],
)
def test_bad_options_are_refused_before_any_work(tool, args, texts, trained_run, tmp_path):
    file = tmp_path / "a_file"
    file.write_text("x")
    fill = {"file": file, "mismatched": None}
    if any("{mismatched}" in a for a in args):
        fill["mismatched"] = _mismatched(trained_run, tmp_path)
    overrides = [f"checkpoint={trained_run.checkpoint}", *FAST] if tool is evaluate else []
    if tool is export:
        overrides = [f"checkpoint={trained_run.checkpoint}", f"out_dir={tmp_path / 'out'}"]
    overrides += [a.format(**fill) for a in args]
    with pytest.raises(UsageError) as info:
        compose_options(tool.TOOL, overrides)
    for text in texts:
        assert text in str(info.value), str(info.value)


def test_device_cuda_without_cuda_is_one_line(trained_run):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(UsageError, match="device=cuda needs a CUDA device"):
        compose_options(evaluate.TOOL, [f"checkpoint={trained_run.checkpoint}", "device=cuda"])


def test_convert_names_its_unknown_keys_too():
    with pytest.raises(UsageError, match=r"did you mean"):
        compose_options(convert.TOOL, ["source=x.pt", "overwrit=true"])


@pytest.mark.slow
def test_through_the_cli_one_line_and_nothing_written(trained_run, tmp_path):
    out = tmp_path / "out"
    proc = _cli("evaluate", f"checkpoint={trained_run.checkpoint}", f"out_dir={out}",
                *FAST, "render=true", "render_fps=7", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(proc.stderr.strip().splitlines()) == 1
    (tmp_path / "text.txt").write_text("not a checkpoint\n")
    proc = _cli("convert", f"source={tmp_path / 'text.txt'}", f"out={out / 'x.pt'}", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "not a torch checkpoint" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


# ---------------------------------------------------------------------------- while working
def _only_own_lines(proc: subprocess.CompletedProcess[str], tool: str) -> None:
    """Progress on stderr, each line the tool's own (no library's warning or log line)."""
    assert proc.returncode == 0, proc.stderr[-2000:]
    for line in proc.stderr.splitlines():
        assert line.startswith(f"flashsac_bench.{tool}: "), proc.stderr


@pytest.mark.slow
def test_evaluate_and_export_say_what_they_do(trained_run, tmp_path):
    proc = _cli("evaluate", f"checkpoint={trained_run.checkpoint}", f"out_dir={tmp_path}", *FAST,
                cwd=tmp_path)  # fmt: skip
    _only_own_lines(proc, "evaluate")
    assert f"flashsac_bench.evaluate: {trained_run.checkpoint} (iteration 12)" in proc.stderr
    assert "flashsac_bench.evaluate: rollouts on 1 envs: 1 episodes ..." in proc.stderr
    proc = _cli("export", f"checkpoint={trained_run.checkpoint}", f"out_dir={tmp_path / 'x'}",
                "onnx=false", cwd=tmp_path)  # fmt: skip
    _only_own_lines(proc, "export")
    assert "flashsac_bench.export: tracing the policy to TorchScript ..." in proc.stderr
    out = proc.stdout.splitlines()
    assert [ln.split(":")[0] for ln in out] == ["TorchScript policy", "ONNX policy", "metadata"]
    assert out[1] == "ONNX policy: skipped (off)"


@pytest.mark.skipif(
    not export.onnx_available(), reason='needs the [onnx] extra: pip install -e ".[onnx]"'
)
def test_the_onnx_export_prints_only_its_own_lines(trained_run, tmp_path):
    # torch's exporter reports its steps, a warning per torchvision op and its dependencies'
    # deprecations, unless the export quiets them
    proc = _cli("export", f"checkpoint={trained_run.checkpoint}", f"out_dir={tmp_path}",
                "onnx=true", cwd=tmp_path)  # fmt: skip
    _only_own_lines(proc, "export")
    assert (tmp_path / "policy.onnx").is_file()
    assert [ln.split(":")[0] for ln in proc.stdout.splitlines()] == [
        "TorchScript policy", "ONNX policy", "metadata",
    ]  # fmt: skip


def test_an_earlier_evaluation_is_kept(trained_run, tmp_path):
    ec = EvalConfig(
        checkpoint=str(trained_run.checkpoint), episodes=1, num_envs=1, render=False,
        threads=1, out_dir=str(tmp_path), seed=1,
    )  # fmt: skip
    first = evaluate.evaluate(ec)
    ec.seed = 2
    second = evaluate.evaluate(ec)
    kept = json.loads((tmp_path / "eval_earlier_1" / "eval.json").read_text())
    assert kept["eval_config"]["seed"] == 1 and kept["episodes"] == first["episodes"]
    now = json.loads((tmp_path / "eval.json").read_text())
    assert now["eval_config"]["seed"] == 2 and now["episodes"] == second["episodes"]


# ---------------------------------------------------------------------------- permissions
def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_files_written_atomically_get_the_mode_the_umask_gives(umask, mode, tmp_path):
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "summary.json", "{}\n")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "summary.json") == mode


def test_a_runs_and_an_evaluations_files_are_readable_by_the_group(trained_run, tmp_path):
    from flashsac_bench.cli.train import train
    from tests.fakes.fake_env import make_env
    from tests.fakes.runs import tiny_config

    old = os.umask(0o022)
    try:
        run_dir = tmp_path / "run"
        train(tiny_config(iterations=4), run_dir=run_dir, env_factory=make_env)
        ec = EvalConfig(
            checkpoint=str(trained_run.checkpoint), episodes=1, num_envs=1, render=False,
            threads=1, out_dir=str(tmp_path / "eval"),
        )  # fmt: skip
        evaluate.evaluate(ec)
    finally:
        os.umask(old)
    ckpts = run_dir / "checkpoints"
    for path in (run_dir / "summary.json", ckpts / "iter_0000004.pt", ckpts / "latest.txt",
                 tmp_path / "eval" / "eval.json"):  # fmt: skip
        assert _mode(path) == 0o644, path
    for path in (run_dir, ckpts, tmp_path / "eval"):
        assert _mode(path) == 0o755, path
