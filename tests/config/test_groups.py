"""Config groups that other groups' presets are built from."""

from __future__ import annotations

from dataclasses import replace

from flashsac_bench.config import to_config
from tests.config.test_config import composed


def test_the_gpu_presets_are_the_cuda_base_under_their_own_name():
    base = to_config(composed(["hardware=cuda"])).hardware
    for name in ("h200", "rtx4090"):
        hardware = to_config(composed([f"hardware={name}"])).hardware
        assert hardware.name == name
        assert replace(hardware, name=base.name) == base


def test_the_cpu_presets_train_the_tiny_learner():
    tiny = to_config(composed(["learner=tiny"]))
    default = to_config(composed([]))
    assert tiny.learner != default.learner and tiny.replay != default.replay
    for preset in ("smoke", "parity_cpu"):
        config = to_config(composed([f"+experiment={preset}"]))
        assert (config.learner, config.replay) == (tiny.learner, tiny.replay)


def test_the_flashsac_learner_is_the_schema_default():
    assert to_config(composed(["learner=flashsac"])) == to_config(composed([]))
