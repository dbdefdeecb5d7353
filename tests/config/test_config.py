"""Config composition: every preset composes and validates; bad overrides fail clearly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from flashsac_bench.config import ConfigError, register_configs, to_config

ROOT = Path(__file__).resolve().parents[2]
PRESETS = sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml"))

register_configs()


def composed(overrides: list[str]):
    with initialize_config_module("flashsac_bench.conf", version_base="1.3"):
        return compose("config", overrides=overrides)


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_composes(preset):
    cfg = composed([f"+experiment={preset}"])
    if cfg.path.name == "cudagraph" and cfg.hardware.device in ("auto", "cpu"):
        cfg = composed([f"+experiment={preset}", "hardware=h200"])
    to_config(cfg)


@pytest.mark.parametrize("update", ["u2", "u8"])
@pytest.mark.parametrize("path", ["eager", "compile", "cudagraph"])
def test_every_update_and_path_choose_by_group(update, path):
    config = to_config(composed([f"update={update}", f"path={path}", "hardware=h200"]))
    assert (config.update.name, config.path.name) == (update, path)


@pytest.mark.parametrize("update", ["u2", "u8"])
@pytest.mark.parametrize("path", ["eager", "compile", "cudagraph"])
def test_the_design_cards_presets_compose_what_their_groups_compose(update, path):
    """`+experiment=u8_compile` (the design card's front door) and its five siblings are the
    job `update=u8 path=compile` composes, key for key, on any other override too."""
    for extra in ([], ["hardware=h200", "run.iterations=7"]):
        preset = composed([f"+experiment={update}_{path}", *extra])
        groups = composed([f"update={update}", f"path={path}", *extra])
        assert OmegaConf.to_container(preset) == OmegaConf.to_container(groups)
        assert (preset["update"]["updates_per_step"], preset["path"]["name"]) == (
            int(update[1:]),
            path,
        )


def test_update_presets_set_the_ratios():
    u2 = to_config(composed(["update=u2"])).update
    u8 = to_config(composed(["update=u8"])).update
    assert (u2.updates_per_step, u2.policy_frequency, u2.critic_updates, u2.actor_updates) == (
        2,
        2,
        2,
        1,
    )
    assert (u8.updates_per_step, u8.policy_frequency, u8.critic_updates, u8.actor_updates) == (
        8,
        2,
        8,
        4,
    )


def test_learner_defaults_are_unilab_g1_owner_values():
    c = to_config(composed([])).learner
    assert (c.actor_hidden_dim, c.actor_num_blocks, c.critic_hidden_dim, c.critic_num_blocks) == (
        128,
        2,
        256,
        2,
    )
    assert (c.num_atoms, c.v_min, c.v_max, c.gamma, c.tau) == (101, -5.0, 5.0, 0.97, 0.01)
    assert (c.lr_peak, c.lr_end, c.lr_decay_steps, c.temp_init, c.temp_target_sigma) == (
        3e-4,
        1.5e-4,
        500_000,
        0.01,
        0.15,
    )
    assert (c.zeta_mu, c.zeta_max, c.normalize_reward, c.reward_g_max) == (2.0, 16, True, 5.0)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["path=cudagraph", "hardware=cpu"], "path=cudagraph needs a CUDA device"),
        (["update.updates_per_step=0"], "update.updates_per_step=0: must be in"),
        (["update.policy_frequency=-1"], "update.policy_frequency=-1: must be in"),
        (
            ["replay.batch_size=5000", "run.num_envs=4", "replay.replay_buffer_n=10"],
            "larger than the replay capacity 40",
        ),
        (["hardware.dtype=float16"], r"hardware.dtype must be one of \('auto', 'float32', 'bf"),
        (["learner.v_min=5", "learner.v_max=-5"], "must be < v_max"),
        (["path.name=fastest"], "path.name must be one of"),
        (
            ["path=cudagraph", "hardware=h200", "+path.inductor_options.triton.cudagraphs=true"],
            "nest",
        ),
        (["run.time_limit_s=0"], "run.time_limit_s=0.0: must be in"),
    ],
)
def test_impossible_configs_fail_with_one_clear_message(overrides, message):
    with pytest.raises(ConfigError, match=message):
        to_config(composed(overrides))


@pytest.mark.parametrize(
    "override", ["update.updates_per_step=abc", "update.no_such_key=1", "run.iterations=1.5"]
)
def test_wrong_types_and_unknown_keys_fail_at_composition(override):
    with pytest.raises((ConfigCompositionException, ValidationError)):
        composed([override])


def test_cli_prints_config_and_rejects_bad_config_before_work(tmp_path):
    ok = subprocess.run(
        [sys.executable, "-m", "flashsac_bench", "update=u2", "path=eager", "--cfg", "job"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    assert "updates_per_step: 2" in ok.stdout and "name: eager" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "flashsac_bench", "path=cudagraph", "hardware=cpu"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert bad.returncode == 2
    assert "invalid configuration: path=cudagraph needs a CUDA device" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_cli_help_lists_groups(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "flashsac_bench", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0
    for group in ("update: u2, u8", "path: compile, cudagraph, eager", "hardware:"):
        assert group in out.stdout


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("+run.iteratons=5", r"unknown key run\.iteratons \(did you mean run\.iterations\?\)"),
        ("+learner.bogus=1", r"unknown key learner\.bogus: not in"),
        ("+no_such_group=1", r"unknown key no_such_group"),
    ],
)
def test_keys_added_with_plus_are_refused(override, message):
    cfg = composed([override])  # Hydra's `+` adds them even to typed nodes ...
    with pytest.raises(ConfigError, match=message):  # ... so to_config refuses them
        to_config(cfg)


def test_free_dict_fields_still_take_any_key():
    c = to_config(composed(["+path.inductor_options.max_autotune=true"]))
    assert c.path.inductor_options == {"max_autotune": True}


def test_a_cuda_device_is_checked_against_this_machine():
    import torch

    hw = to_config(composed(["hardware=h200"])).hardware  # composes anywhere ...
    if torch.cuda.is_available():
        hw.check_available()
    else:  # ... but cannot run on a CPU-only torch
        with pytest.raises(ConfigError, match="hardware.device=cuda .* sees no CUDA device"):
            hw.check_available()
    to_config(composed(["hardware=cpu"])).hardware.check_available()
    with pytest.raises(ConfigError, match="hardware.device must be"):
        to_config(composed(["hardware.device=cuda:x"]))
