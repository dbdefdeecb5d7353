"""The walking presets compose into what their comments promise."""

from __future__ import annotations

from hydra import compose, initialize_config_module

from flashsac_bench.config import register_configs, to_config


def _compose(*overrides: str):
    register_configs()
    with initialize_config_module(config_module="flashsac_bench.conf", version_base="1.3"):
        return to_config(compose(config_name="config", overrides=list(overrides)))


def test_g1_walk_h200_is_unilab_g1_owner_scaled_to_1024_envs():
    c = _compose("+experiment=g1_walk_h200")
    # UniLab's G1 FlashSAC owner (unilab-rl 1.4.15): batch 2048, u8 / pf2, replay_buffer_n 256,
    # learning_starts 49, gamma 0.97, tau 0.05; 4096 envs scaled to 1024 for 16 cores.
    assert (c.replay.batch_size, c.replay.replay_buffer_n, c.replay.learning_starts) == (
        2048,
        256,
        49,
    )
    assert (c.update.updates_per_step, c.update.policy_frequency) == (8, 2)
    assert (c.learner.gamma, c.learner.tau) == (0.97, 0.05)
    assert (c.path.name, c.hardware.name, c.hardware.device) == ("cudagraph", "h200", "cuda")
    assert c.run.num_envs == 1024 and c.replay_capacity == 262_144
    assert c.run.iterations * c.update.updates_per_step == 40_000  # the owner's critic updates
    assert c.run.checkpoint_every and c.run.iterations % c.run.checkpoint_every == 0


def test_parity_cpu_is_the_smoke_size_on_the_cpu():
    c = _compose("+experiment=parity_cpu", "path=compile")
    smoke = _compose("+experiment=smoke")
    assert c.hardware.resolved_device() == "cpu" and c.path.name == "compile"
    assert (c.learner, c.replay) == (smoke.learner, smoke.replay)
    assert c.run.num_envs == smoke.run.num_envs
    plan = c.backend.plan(c.run.num_envs, cores=2)  # the 2 CI cores, split
    assert c.hardware.torch_threads + plan.threads == 2 and plan.mode == "threads"


def test_g1_walk_fast_is_g1_walk_h200_with_twice_the_updates_on_half_the_envs():
    fast, base = _compose("+experiment=g1_walk_fast"), _compose("+experiment=g1_walk_h200")
    assert (fast.update.name, fast.update.updates_per_step, fast.update.policy_frequency) == (
        "u16",
        16,
        2,
    )
    assert (base.update.updates_per_step, base.run.num_envs) == (8, 1024)
    assert fast.run.num_envs == 512
    assert fast.run.iterations == 2400 and fast.run.iterations % fast.run.checkpoint_every == 0
    # Everything else is g1_walk_h200's.
    for group in ("learner", "replay", "path", "hardware", "task", "backend"):
        assert getattr(fast, group) == getattr(base, group), group
