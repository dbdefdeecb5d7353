"""The exported actor (module, TorchScript, ONNX) acts exactly like learner.act_deterministic."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from flashsac_bench.cli.export import (
    export_checkpoint,
    export_onnx,
    export_torchscript,
    load_torchscript,
    onnx_available,
)
from flashsac_bench.config.learner import LearnerConfig
from flashsac_bench.config.update import UpdateConfig
from flashsac_bench.evaluation.policy import DeterministicActor
from flashsac_bench.evaluation.trained import load_trained_learner
from flashsac_bench.learner.learner import Dims, FlashSACLearner
from flashsac_bench.runner.checkpoint import CheckpointError, save_checkpoint

DIMS = Dims(obs=9, critic_obs=11, action=4)
NUM_ENVS, BATCH = 4, 8
TOL = 1e-6  # fp32; the same function evaluates both sides


def _learner(seed: int = 0) -> FlashSACLearner:
    return FlashSACLearner(
        LearnerConfig(actor_hidden_dim=12, critic_hidden_dim=20, num_atoms=11),
        UpdateConfig(updates_per_step=2, policy_frequency=2),
        DIMS,
        num_envs=NUM_ENVS,
        batch_size=BATCH,
        replay_capacity=64,
        seed=seed,
    )


def _trained_learner() -> FlashSACLearner:
    """Updated weights and BN running statistics far from their initial values."""
    learner = _learner()
    g = torch.Generator().manual_seed(7)
    n, d = NUM_ENVS, DIMS
    for _ in range(6):
        learner.ring.insert(
            obs=torch.randn(n, d.obs, generator=g) * 3 + 1,
            critic_obs=torch.randn(n, d.critic_obs, generator=g),
            next_obs=torch.randn(n, d.obs, generator=g) * 3 + 1,
            next_critic_obs=torch.randn(n, d.critic_obs, generator=g),
            actions=torch.rand(n, d.action, generator=g) * 2 - 1,
            rewards=torch.randn(n, generator=g),
            terminated=torch.zeros(n),
            truncated=torch.zeros(n),
        )
    for _ in range(4):
        learner.update()
    return learner


def _obs(n: int, seed: int = 3) -> torch.Tensor:
    return torch.randn(n, DIMS.obs, generator=torch.Generator().manual_seed(seed)) * 2 + 0.5


def test_module_matches_act_deterministic_and_depends_on_the_trained_state():
    learner = _trained_learner()
    module = DeterministicActor.from_learner(learner)
    obs = _obs(64)
    expected = learner.act_deterministic(obs)
    assert (module(obs) - expected).abs().max().item() <= TOL
    # The comparison has teeth: the untrained actor acts differently, and so does the trained
    # one with the BN running statistics reset (eval-mode BN uses them).
    untrained = DeterministicActor.from_learner(_learner())
    assert (untrained(obs) - expected).abs().max().item() > 1e-2
    reset = DeterministicActor.from_learner(learner)
    reset.actor_bn_stats.copy_(_learner().state.actor_buffers)
    assert (reset(obs) - expected).abs().max().item() > 1e-2
    # A snapshot: later training does not change the exported policy.
    learner.update()
    assert (module(obs) - expected).abs().max().item() <= TOL
    assert (learner.act_deterministic(obs) - expected).abs().max().item() > 0


def test_torchscript_roundtrip_any_batch_size(tmp_path):
    learner = _trained_learner()
    module = DeterministicActor.from_learner(learner)
    path = export_torchscript(module, tmp_path / "policy.pt", {"obs_dim": DIMS.obs})
    loaded, meta = load_torchscript(path)
    assert meta == {"obs_dim": DIMS.obs}
    for n in (1, 5, 300):  # traced at batch 2: the graph must not have baked the batch size in
        obs = _obs(n, seed=n)
        got = loaded(obs)
        assert got.shape == (n, DIMS.action)
        assert (got - learner.act_deterministic(obs)).abs().max().item() <= TOL


def test_exports_of_a_runner_checkpoint_act_like_the_learner_that_trained(trained_run, tmp_path):
    result = export_checkpoint(trained_run.checkpoint, tmp_path, onnx="false")
    assert result["onnx"] is None
    loaded, meta = load_torchscript(result["torchscript"])
    assert json.loads((tmp_path / "policy.json").read_text()) == meta
    assert meta["iteration"] == trained_run.iterations
    assert (meta["obs_dim"], meta["action_dim"]) == (98, 29)
    assert len(meta["joint_names"]) == len(meta["default_joint_pos"]) == 29
    obs = torch.randn(32, 98, generator=torch.Generator().manual_seed(0))
    # Reference: the runner's own learner at the end of training, not a reloaded one.
    expected = trained_run.learner.act_deterministic(obs)
    assert (loaded(obs) - expected).abs().max().item() <= TOL
    reloaded = load_trained_learner(trained_run.run_dir).learner  # a run dir: latest checkpoint
    assert (reloaded.act_deterministic(obs) - expected).abs().max().item() <= TOL
    fresh = DeterministicActor.from_learner(
        FlashSACLearner(
            reloaded.cfg,
            reloaded.update_cfg,
            reloaded.dims,
            num_envs=4,
            batch_size=32,
            replay_capacity=32,
            seed=1,
        )
    )
    assert (fresh(obs) - expected).abs().max().item() > 1e-3  # the checkpoint mattered


@pytest.mark.parametrize("tensorboard", [True, False])
def test_a_checkpoint_written_with_run_tensorboard_still_loads(trained_run, tmp_path, tensorboard):
    # The config as checkpoints held it before the logger group: run.tensorboard, no logger.
    payload = torch.load(trained_run.checkpoint, map_location="cpu", weights_only=True)
    del payload["config"]["logger"], payload["logger"]
    payload["config"]["run"]["tensorboard"] = tensorboard
    (tmp_path / "checkpoints").mkdir()
    old = save_checkpoint(tmp_path / "checkpoints" / trained_run.checkpoint.name, payload)
    trained = load_trained_learner(old)
    assert trained.config.logger.name == ("tensorboard" if tensorboard else "none")
    obs = torch.randn(8, 98, generator=torch.Generator().manual_seed(0))
    expected = trained_run.learner.act_deterministic(obs)
    assert (trained.learner.act_deterministic(obs) - expected).abs().max().item() <= TOL


@pytest.mark.parametrize("target_entropy", [None, -20.0])
def test_a_checkpoint_written_before_the_config_diet_loads_or_is_refused_in_one_line(
    trained_run, tmp_path, target_entropy
):
    # The config as checkpoints held it before update.name, update.target_frequency,
    # path.fallback_to_compile and learner.target_entropy went and each backend got its schema.
    payload = torch.load(trained_run.checkpoint, map_location="cpu", weights_only=True)
    config = payload["config"]
    config["update"].update(name="u2", target_frequency=1)
    config["path"]["fallback_to_compile"] = True
    config["learner"]["target_entropy"] = target_entropy
    config["backend"]["warp"] = None
    (tmp_path / "checkpoints").mkdir()
    old = save_checkpoint(tmp_path / "checkpoints" / trained_run.checkpoint.name, payload)
    if target_entropy is not None:  # a target this version cannot set: refused, one line
        with pytest.raises(CheckpointError, match=r"learner\.target_entropy=-20\.0, an option"):
            load_trained_learner(old)
        return
    trained = load_trained_learner(old)
    obs = torch.randn(8, 98, generator=torch.Generator().manual_seed(0))
    expected = trained_run.learner.act_deterministic(obs)
    assert (trained.learner.act_deterministic(obs) - expected).abs().max().item() <= TOL


def test_export_cli(trained_run, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flashsac_bench.export",
            f"checkpoint={trained_run.checkpoint}",
            f"out_dir={tmp_path}",
            "onnx=false",
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "policy.torchscript.pt").is_file() and (tmp_path / "policy.json").is_file()
    assert not (tmp_path / "policy.onnx").exists()
    assert "ONNX policy: skipped" in proc.stdout


@pytest.mark.skipif(
    not (onnx_available() and importlib.util.find_spec("onnxruntime")),
    reason="optional: needs onnx, onnxscript and onnxruntime",
)
def test_onnx_export_matches(tmp_path):
    import numpy as np
    import onnxruntime

    learner = _trained_learner()
    path = export_onnx(DeterministicActor.from_learner(learner), tmp_path / "policy.onnx")
    session = onnxruntime.InferenceSession(str(path))
    for n in (1, 17):
        obs = _obs(n, seed=n)
        (got,) = session.run(None, {"obs": obs.numpy()})
        # onnxruntime's kernels sum in their own order: fp32 rounding, not exact equality.
        assert np.abs(got - learner.act_deterministic(obs).numpy()).max() <= 1e-5


def _export(*args: str, cwd: Path | None = None, pre: str = "") -> subprocess.CompletedProcess:
    # `pre` runs first in the child (e.g. hiding a package), then the command line itself.
    code = f"import sys\n{pre}\nfrom flashsac_bench.export import main\nmain()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
    )


def _one_line_error(proc: subprocess.CompletedProcess, *texts: str) -> None:
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith("flashsac_bench.export: ")
    for text in texts:
        assert text in lines[0]


@pytest.mark.slow
def test_export_cli_help_and_cfg_job_touch_nothing(tmp_path):
    proc = _export("--help", cwd=tmp_path)
    assert proc.returncode == 0 and "checkpoint: ???" in proc.stdout and "onnx: auto" in proc.stdout
    missing = tmp_path / "x.pt"
    proc = _export("--cfg", "job", f"checkpoint={missing}", "onnx=false", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"checkpoint: {missing}" in proc.stdout and "onnx: false" in proc.stdout
    assert list(tmp_path.iterdir()) == []  # no Hydra dirs or logs, and x.pt not created


@pytest.mark.slow  # over ~10 s on 2 cores
def test_export_cli_errors_are_one_line_and_write_nothing(trained_run, tmp_path):
    out = tmp_path / "out"
    (tmp_path / "empty").mkdir()
    (tmp_path / "text.pt").write_text("not a checkpoint")
    cut = tmp_path / "cut.pt"
    cut.write_bytes(trained_run.checkpoint.read_bytes()[:4000])  # a write cut short
    cases = [
        (tmp_path / "nope.pt", ("does not exist",)),
        (tmp_path / "empty", ("no checkpoint",)),
        (tmp_path / "text.pt", ("not a flashsac_bench checkpoint",)),
        (cut, ("truncated",)),
    ]
    for path, texts in cases:
        proc = _export(f"checkpoint={path}", f"out_dir={out}")
        _one_line_error(proc, str(path), *texts)
    proc = _export()
    _one_line_error(proc, "checkpoint=", "is required")
    proc = _export(f"checkpoint={trained_run.checkpoint}", "onnx=maybe")
    _one_line_error(proc, "onnx must be auto, true or false")
    # onnx=true without the packages (hidden here whether or not they are installed) fails
    # before the TorchScript file is written, naming the file it cannot write.
    hide = "sys.modules['onnx'] = None; sys.modules['onnxscript'] = None"
    proc = _export(f"checkpoint={trained_run.checkpoint}", f"out_dir={out}", "onnx=true", pre=hide)
    _one_line_error(proc, str(out / "policy.onnx"), "onnxscript")
    assert not out.exists()
