"""FlashSACLearner.from_config: the one way a run's config becomes a learner (the runner's
setup, evaluation's and convert's checkpoints)."""

from __future__ import annotations

from flashsac_bench.config.hardware import HardwareConfig
from flashsac_bench.learner.learner import Dims, FlashSACLearner
from tests.fakes.runs import tiny_config

DIMS = Dims(obs=5, critic_obs=7, action=3)


def test_a_training_learner_is_the_configs():
    c = tiny_config(batch_size=16, replay_buffer_n=8, update="u8")
    learner = FlashSACLearner.from_config(c, DIMS)
    assert learner.ring.capacity == c.replay_capacity > c.replay.batch_size
    assert (learner.batch_size, learner.num_envs) == (16, c.run.num_envs)
    assert learner.path_cfg is c.path
    assert learner.update_cfg.updates_per_step == 8
    assert (str(learner.device), learner.dtype) == ("cpu", "float32")


def test_a_learner_to_act_is_eager_with_one_batch_of_ring_on_the_hardware_asked_for():
    c = tiny_config(batch_size=16, path="compile")
    learner = FlashSACLearner.from_config(
        c, DIMS, hardware=HardwareConfig(name="cpu", device="cpu", gemm_align=4), to_act=True
    )
    assert learner.ring.capacity == 16
    assert learner.path_cfg.name == "eager"
    assert learner.gemm_align == 4
