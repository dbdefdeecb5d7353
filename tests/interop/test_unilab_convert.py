"""python -m flashsac_bench.convert: unilab-rl checkpoints written by its own save code convert,
evaluate, export and resume here; ours convert back, load with its own loading code and act
identically. The CLI's errors are one line. Tests that need unilab-rl skip without it."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from flashsac_bench.cli import convert
from flashsac_bench.interop import unilab as ui
from flashsac_bench.runner.checkpoint import LEARNER_ONLY, load_checkpoint
from tests.conftest import needs_unilab

# The fake env's sizes (tests/fakes/fake_env.py) and the runner tests' tiny learner.
FAKE_DIMS = (6, 7, 3)
TINY = {"actor_hidden_dim": 16, "critic_hidden_dim": 16, "num_atoms": 11}
TINY_OVERRIDES = [f"learner.{k}={v}" for k, v in TINY.items()]


@pytest.fixture
def fake_env_factory(monkeypatch):
    """The runner uses the fake env: a converted file need not have the G1 task's dims."""
    from flashsac_bench.runner.env_factory import ENV_FACTORY_VAR

    monkeypatch.setenv(ENV_FACTORY_VAR, "tests.fakes.fake_env:make_env")


def compose(overrides: list[str]):
    """The convert app's config, composed as the CLI does (without a subprocess)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    from flashsac_bench.cli.tool import register

    register(convert.TOOL)  # the tool's schema and the groups' own, as the command line does
    GlobalHydra.instance().clear()
    with initialize_config_module("flashsac_bench.conf", version_base="1.3"):
        return hydra_compose("convert", overrides=overrides)


def run_convert(overrides: list[str]) -> int:
    """One conversion job, its options typed and checked as the command line does."""
    from omegaconf import OmegaConf

    from flashsac_bench.cli.tool import typed_options

    cfg = compose(overrides)
    options = typed_options(convert.TOOL, cfg)
    return convert.TOOL.job(options, OmegaConf.to_container(cfg, resolve=True))


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flashsac_bench.convert", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def unilab_learner(obs: int, critic_obs: int, action: int, **kwargs):
    from uni_rl.algos.flash_sac import FlashSACLearner

    return FlashSACLearner(
        obs_dim=obs,
        action_dim=action,
        critic_obs_dim=critic_obs,
        device="cpu",
        use_amp=False,
        use_compile=False,
        compile_full_objectives=False,
        use_whole_cycle_cuda_graph=False,
        **kwargs,
    )


def train_unilab(learner, updates: int = 3, num_envs: int = 8, seed: int = 0) -> None:
    """A few of its own updates on random data: every piece of its state is non-trivial."""
    g = torch.Generator().manual_seed(seed)
    b, o, c, a = 32, learner.obs_dim, learner.critic_obs_dim, learner.action_dim
    learner.update_reward_stats(torch.randn(5, num_envs, generator=g), torch.zeros(5, num_envs))
    for _ in range(updates):
        batch = {
            "obs": torch.randn(b, o, generator=g),
            "actions": torch.rand(b, a, generator=g) * 2 - 1,
            "rewards": torch.randn(b, generator=g),
            "next_obs": torch.randn(b, o, generator=g),
            "dones": torch.zeros(b),
            "truncated": torch.zeros(b),
            "critic": torch.randn(b, c, generator=g),
            "next_critic": torch.randn(b, c, generator=g),
        }
        learner.update_critic(batch)
        learner.update_actor(batch)
        learner.soft_update_target()
        learner.update_count += 1  # the runner's count of learning iterations


def save_with_unilab(learner, log_dir: Path, iteration: int) -> Path:
    """The checkpoint exactly as unilab-rl's runner writes it (its own _save_checkpoint)."""
    from uni_rl.offpolicy.double_buffer_runner import DoubleBufferOffPolicyRunner

    saved = []
    owner = types.SimpleNamespace(_is_primary_rank=lambda: True, learner=learner)
    logger = types.SimpleNamespace(log_save=saved.append)
    path = DoubleBufferOffPolicyRunner._save_checkpoint(
        owner, log_dir=str(log_dir), iteration=iteration, logger=logger
    )
    assert saved == [path]
    return Path(path)


def load_with_unilab(learner, path: Path) -> int:
    """unilab-rl's runner resume path (its own _restore_resume_checkpoint)."""
    from uni_rl.offpolicy.double_buffer_runner import DoubleBufferOffPolicyRunner

    owner = types.SimpleNamespace(learner=learner, device=torch.device("cpu"))
    return DoubleBufferOffPolicyRunner._restore_resume_checkpoint(owner, str(path))


# ---------------------------------------------------------------------------- UniLab -> ours
@needs_unilab
def test_unilab_checkpoint_converts_evaluates_and_exports(tmp_path, monkeypatch):
    from flashsac_bench.cli.export import export_checkpoint, load_torchscript
    from flashsac_bench.evaluation.config import EvalConfig
    from flashsac_bench.evaluation.evaluate import evaluate

    monkeypatch.chdir(tmp_path)  # MuJoCo writes MUJOCO_LOG.TXT into the cwd on warnings
    theirs = unilab_learner(98, 101, 29, gamma=0.97)  # G1 sizes, as UniLab trains them
    train_unilab(theirs, num_envs=4)
    src = save_with_unilab(theirs, tmp_path, iteration=3)
    assert src.name == "model_3.pt"
    out = tmp_path / "converted.pt"
    assert run_convert([f"source={src}", f"out={out}", "run.num_envs=4"]) == 0
    payload = load_checkpoint(out)
    assert payload["kind"] == LEARNER_ONLY and payload["iteration"] == 3
    assert payload["replay"] is None and payload["training_config"]["num_envs"] == 4

    obs = torch.randn(64, 98, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        expected = theirs.actor.explore(obs, deterministic=True)
        export_module = theirs.actor.as_export_module()(obs)
    assert torch.equal(expected, export_module)
    result = export_checkpoint(out, tmp_path / "export", onnx="false")
    policy, meta = load_torchscript(result["torchscript"])
    assert meta["obs_dim"] == 98 and meta["action_dim"] == 29
    with torch.no_grad():
        assert torch.allclose(policy(obs), expected, rtol=1e-5, atol=1e-6)

    ec = EvalConfig(checkpoint=str(out), episodes=2, num_envs=2, render=False, threads=1)
    ec.out_dir = str(tmp_path / "eval")
    report = evaluate(ec)
    assert len(report["episodes"]) == 2 and report["iteration"] == 3
    assert json.loads((tmp_path / "eval" / "eval.json").read_text())["checkpoint"] == str(out)


@needs_unilab
def test_learner_only_checkpoint_resumes_training(tmp_path, fake_env_factory):
    from flashsac_bench.cli.train import train
    from flashsac_bench.runner.device_steps import DeviceSteps
    from tests.fakes.fake_env import FakeEnv
    from tests.fakes.runs import read_summary, tiny_config

    obs, critic_obs, action = FAKE_DIMS
    theirs = unilab_learner(obs, critic_obs, action, gamma=0.97, **TINY)
    train_unilab(theirs, updates=4)
    src = save_with_unilab(theirs, tmp_path, iteration=4)
    out = tmp_path / "resume_me.pt"
    args = [f"source={src}", f"out={out}", "run.num_envs=8", *TINY_OVERRIDES]
    assert run_convert(args) == 0
    converted = load_checkpoint(out)["learner"]["tensors"]

    def factory(task, backend, num_envs, seed, array_factory=None):
        return FakeEnv(num_envs, seed)

    def no_random_actions(self):
        raise AssertionError("a resumed policy refills the replay itself")

    cfg = tiny_config(iterations=10, resume=str(out))  # learning starts after 4 iterations
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DeviceSteps, "act_random", no_random_actions)
        train(cfg, run_dir=tmp_path / "run", env_factory=factory)
    s = read_summary(tmp_path / "run")
    assert s["complete"] and s["resumed_learner_only"] is True and s["resume_iteration"] == 4
    iters = [r["iteration"] for r in s["rows_all"]]
    assert iters == list(range(4, 10))
    # the replay refills first (4 x 8 rows), then updates continue from the converted state
    learning = [r["learning"] for r in s["rows_all"]]
    assert learning == [False] * 4 + [True] * 2
    final = load_checkpoint(tmp_path / "run" / "checkpoints" / "iter_0000010.pt")
    t = final["learner"]["tensors"]
    assert float(t["critic.adam.step"]) == float(converted["critic.adam.step"]) + 2 * 2
    assert float(t["actor.sched_step"]) == float(converted["actor.sched_step"]) + 2
    assert final["replay"]["count"] == 6 * 8  # a full checkpoint again

    # a run with another num_envs cannot take the per-env learner state
    with pytest.raises(ValueError, match=r"learner only.*run.num_envs \(checkpoint 8, now 4\)"):
        train(
            tiny_config(num_envs=4, iterations=10, resume=str(out)),
            run_dir=tmp_path / "bad",
            env_factory=factory,
        )


@needs_unilab
def test_unprojected_unilab_networks_warn(tmp_path, fake_env_factory, capsys):
    theirs = unilab_learner(*FAKE_DIMS, actor_normalize_parameters=False, **TINY)
    src = save_with_unilab(theirs, tmp_path, iteration=0)
    args = [f"source={src}", f"out={tmp_path}/c.pt", "run.num_envs=8", *TINY_OVERRIDES]
    assert run_convert(args) == 0
    err = capsys.readouterr().err
    assert "warning: the checkpoint's actor is not weight-projected" in err
    assert "critic is not" not in err  # its critic is projected (the default)


# ---------------------------------------------------------------------------- ours -> UniLab
@pytest.fixture(scope="module")
def our_run(tmp_path_factory):
    """A tiny run of ours (fake env, tiny learner) with a final checkpoint."""
    from flashsac_bench.cli.train import train
    from tests.fakes.fake_env import FakeEnv
    from tests.fakes.runs import tiny_config

    run_dir = tmp_path_factory.mktemp("ours") / "run"

    def factory(task, backend, num_envs, seed, array_factory=None):
        return FakeEnv(num_envs, seed)

    train(tiny_config(iterations=8), run_dir=run_dir, env_factory=factory)
    return run_dir


@needs_unilab
def test_our_checkpoint_loads_into_unilab_and_acts_identically(our_run, tmp_path):
    from uni_rl.algos.flash_sac import FlashSACLearner

    from flashsac_bench.evaluation.trained import load_trained_learner

    assert run_convert([f"source={our_run}", "unilab_device=cpu", f"out={tmp_path}/m.pt"]) == 0
    sd = torch.load(tmp_path / "m.pt", weights_only=True)  # plain tensors and containers
    kwargs = sd["flashsac_bench"]["learner_kwargs"]
    theirs = FlashSACLearner(
        **kwargs,
        device="cpu",
        use_amp=False,
        use_compile=False,
        compile_full_objectives=False,
        use_whole_cycle_cuda_graph=False,
    )
    next_iteration = load_with_unilab(theirs, tmp_path / "m.pt")
    ours = load_trained_learner(our_run).learner
    # 8 iterations, learning from iteration 4 on: 4 learning iterations of 2 critic updates
    assert float(ours.state.critic_sched_step) == 8 and next_iteration == 4 + 1
    obs = torch.randn(128, FAKE_DIMS[0], generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        mean, std = theirs.actor.get_mean_and_std(obs, training=False)
        acts = theirs.actor.explore(obs, deterministic=True)
    our_mean, our_log_std = ours._mean_log_std(obs)
    assert torch.allclose(mean, our_mean, rtol=1e-5, atol=1e-6)
    assert torch.allclose(std.log(), our_log_std, rtol=1e-5, atol=1e-5)
    assert torch.allclose(acts, ours.act_deterministic(obs), rtol=1e-5, atol=1e-6)
    assert float(theirs.temperature().detach()) == pytest.approx(
        float(ours.state.log_temp.exp()), rel=1e-6
    )
    # ... and its training continues from that state (optimizers, schedulers, normalizer)
    assert theirs.critic_scheduler.last_epoch == 8 and theirs.actor_scheduler.last_epoch == 4
    train_unilab(theirs, updates=1)


def test_our_checkpoint_round_trips_through_the_unilab_format_without_uni_rl(
    our_run, tmp_path, fake_env_factory
):
    """No unilab-rl needed: ours -> UniLab file -> ours restores every converted tensor."""
    from flashsac_bench.evaluation.trained import load_trained_learner

    assert run_convert([f"source={our_run}", "unilab_device=cuda", f"out={tmp_path}/m.pt"]) == 0
    sd = torch.load(tmp_path / "m.pt", weights_only=True)
    group = sd["critic_optimizer"]["param_groups"][0]
    assert group["fused"] is True and group["capturable"] is True  # what UniLab builds on CUDA
    assert list(sd) == [
        *ui.STATE_KEYS[:10],
        "obs_normalizer",
        *ui.STATE_KEYS[10:],
        "flashsac_bench",
    ]
    back = tmp_path / "back.pt"
    assert (
        run_convert([f"source={tmp_path}/m.pt", f"out={back}", "run.num_envs=8", *TINY_OVERRIDES])
        == 0
    )
    a = load_trained_learner(our_run).learner.state.tensors()
    b = load_checkpoint(back)["learner"]["tensors"]
    for key, value in a.items():
        if key.startswith(("rng.", "explore.", "metrics", "reward.returns")):
            continue  # ours alone, or restarted by a learner-only resume (see load_unilab_state)
        if key in ("reward.mean", "reward.var", "reward.count"):  # float32 in UniLab's file
            assert torch.allclose(value, b[key], rtol=1e-6, atol=0), key
        else:
            assert torch.equal(value, b[key]), key


@pytest.mark.parametrize(
    ("where", "named"),
    [
        (("actor", None), "upstream tensor "),
        (("temperature", "log_temp"), "upstream tensor log_temp is int32"),
        (("reward_normalizer", "g_r_max"), "upstream tensor g_r_max is int32"),
    ],
)
def test_integer_tensors_of_a_unilab_file_are_refused_not_cast(
    our_run, tmp_path, fake_env_factory, capsys, where, named
):
    """A UniLab file whose weights or statistics are integers: one line, nothing written (a
    cast would start a learner from truncated weights)."""
    assert run_convert([f"source={our_run}", "unilab_device=cpu", f"out={tmp_path}/m.pt"]) == 0
    sd = torch.load(tmp_path / "m.pt", weights_only=True)
    group, key = where
    key = key or next(k for k, v in sd[group].items() if v.is_floating_point() and v.dim() == 2)
    sd[group][key] = sd[group][key].to(torch.int32)
    torch.save(sd, tmp_path / "int.pt")
    capsys.readouterr()
    out = tmp_path / "back.pt"
    args = [f"source={tmp_path}/int.pt", f"out={out}", "run.num_envs=8", *TINY_OVERRIDES]
    assert run_convert(args) == 2
    err = capsys.readouterr().err
    assert named in err and "int32, a learner stores it as float" in err, err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


# ---------------------------------------------------------------------------- CLI
@pytest.mark.slow
def test_cli_help_and_cfg_job():
    proc = cli("--help")
    assert proc.returncode == 0 and "unilab-rl" in proc.stdout and "source: ???" in proc.stdout
    proc = cli("source=x.pt", "learner.tau=0.05", "--cfg", "job")
    assert proc.returncode == 0, proc.stderr
    assert "source: x.pt" in proc.stdout and "tau: 0.05" in proc.stdout


def test_cli_errors_are_one_line(tmp_path):
    missing = cli(f"source={tmp_path}/nope.pt")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    other = cli(f"source={tmp_path}/other.pt")
    for proc, text in ((missing, "does not exist"), (other, "neither a unilab-rl")):
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert text in proc.stderr


def test_conversion_errors_name_the_problem(tmp_path, our_run, capsys):
    (tmp_path / "text.pt").write_text("not a checkpoint")
    cases = [
        ([f"source={tmp_path}/text.pt"], "not a torch checkpoint"),
        ([f"source={tmp_path}/empty_dir"], "does not exist"),
        ([f"source={our_run}", "to=flashsac_bench"], "already a flashsac_bench checkpoint"),
        ([f"source={our_run}", "to=elsewhere"], "to must be auto"),
        ([f"source={our_run}", "unilab_device=tpu"], "unilab device must be cpu or cuda"),
    ]
    for overrides, text in cases:
        assert run_convert(overrides) == 2, overrides
        err = capsys.readouterr().err
        assert text in err and len(err.strip().splitlines()) == 1, err
    # an existing output is kept unless overwrite=true
    out = tmp_path / "m.pt"
    assert run_convert([f"source={our_run}", f"out={out}"]) == 0
    assert run_convert([f"source={our_run}", f"out={out}"]) == 2
    assert "overwrite=true" in capsys.readouterr().err
    assert run_convert([f"source={our_run}", f"out={out}", "overwrite=true"]) == 0


def test_architecture_mismatch_names_the_override(
    tmp_path, our_run, capsys, fake_env_factory, monkeypatch
):
    """A UniLab file of tiny networks against the default (G1-sized) learner config."""
    from flashsac_bench.runner.env_factory import ENV_FACTORY_VAR

    unilab_file = tmp_path / "m.pt"
    assert run_convert([f"source={our_run}", f"out={unilab_file}"]) == 0
    capsys.readouterr()
    assert run_convert([f"source={unilab_file}", "run.num_envs=8"]) == 2
    err = capsys.readouterr().err
    assert "learner.actor_hidden_dim=16" in err, err
    assert (
        run_convert(
            [f"source={unilab_file}", "run.num_envs=8", *TINY_OVERRIDES, "learner.lr_peak=1e-3"]
        )
        == 2
    )
    assert "learner.lr_peak=0.0003" in capsys.readouterr().err
    # without the fake env factory the G1 task's dims are required
    monkeypatch.delenv(ENV_FACTORY_VAR)
    assert run_convert([f"source={unilab_file}", "run.num_envs=8", *TINY_OVERRIDES]) == 2
    assert "are not task g1_walk_flat's (98, 101, 29)" in capsys.readouterr().err
