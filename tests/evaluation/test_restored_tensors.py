"""Every tensor a checkpoint restores is checked before use (runner.checkpoint_tensors).

A checkpoint whose CRCs are valid can hold tensors no run wrote: replay rows of 1e30, reward
statistics of 1e300, actor weights stored as int32, a 2-d critic vector, exploration noise of
another width, an env state for another env count. Each is refused when the checkpoint is read
(runner.checkpoint.load_checkpoint, which resume, evaluate, export and convert share), naming
the file and the tensor (the cases: test_absurd_values.CRAFTED_TENSORS); a resume refuses it
before its run dir exists, and every loader's command line in one line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from flashsac_bench.cli.train import train
from flashsac_bench.config import to_config
from flashsac_bench.learner.learner import Dims, FlashSACLearner
from flashsac_bench.runner.checkpoint import (
    CheckpointError,
    load_checkpoint,
    resolve_resume_path,
    save_checkpoint,
)
from flashsac_bench.runner.checkpoint_tensors import learner_specs
from tests.evaluation.test_absurd_values import _replay, _retype, _tensors
from tests.evaluation.test_file_safety import LOADERS, _loader, _refused
from tests.fakes.fake_env import FakeEnv
from tests.fakes.runs import tiny_config


@pytest.mark.parametrize(
    ("num_envs", "learner"),
    [(4, {}), (3, {"actor_num_blocks": 2, "critic_hidden_dim": 24, "num_atoms": 21})],
)
def test_the_specs_are_a_real_learners_tensors(num_envs, learner):
    """learner_specs (computed from the layouts, no learner built) name every tensor of a
    learner state with its shape and dtype."""
    cfg = to_config(
        {"learner": {"actor_hidden_dim": 16, "critic_hidden_dim": 16, "num_atoms": 11, **learner}}
    )
    dims = Dims(7, 9, 3)
    real = FlashSACLearner(
        cfg.learner, cfg.update, dims, num_envs=num_envs, batch_size=4, replay_capacity=4
    ).state_dict()["tensors"]
    specs = learner_specs(cfg.learner, (7, 9, 3), num_envs)
    assert {k: (tuple(t.shape), t.dtype) for k, t in real.items()} == {
        k: (s.shape, s.dtype) for k, s in specs.items()
    }


# ---------------------------------------------------------------------------- resume
def _fake(task, backend, num_envs, seed, array_factory=None):
    return FakeEnv(num_envs, seed)


@pytest.fixture(scope="module")
def fake_checkpoint(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("restored") / "run"
    train(tiny_config(iterations=6, num_envs=4), run_dir=run, env_factory=_fake)
    return resolve_resume_path(run)


@pytest.mark.parametrize(
    ("craft", "named"),
    [
        (lambda p: _replay(p, 0, 1e30), "replay rows 0..23 holds 1e+30"),
        (lambda p: _tensors(p)["reward.mean"].fill_(1e300), "reward.mean holds 1e+300"),
        (lambda p: _retype(p, "actor.params", torch.int32), "learner.actor.params is int32"),
    ],
    ids=["replay", "reward", "int32"],
)
def test_a_resume_refuses_it_before_its_run_dir_exists(fake_checkpoint, tmp_path, craft, named):
    crafted = load_checkpoint(fake_checkpoint)
    craft(crafted)
    path = tmp_path / "checkpoints" / fake_checkpoint.name
    save_checkpoint(path, {k: v for k, v in crafted.items() if k != "format"})
    out = tmp_path / "resumed"
    with pytest.raises(CheckpointError, match=named.replace("+", r"\+")):
        train(
            tiny_config(iterations=9, num_envs=4, resume=str(path)), run_dir=out, env_factory=_fake
        )
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("loader", LOADERS)
def test_every_loader_refuses_it_in_one_line_and_writes_nothing(loader, trained_run, tmp_path):
    """Read before anything else: the resume's refusal comes before its config is compared."""
    crafted = load_checkpoint(trained_run.checkpoint)
    _retype(crafted, "actor.params", torch.int32)
    path = tmp_path / "run" / "checkpoints" / trained_run.checkpoint.name
    save_checkpoint(path, {k: v for k, v in crafted.items() if k != "format"})
    _refused(_loader(loader, path, tmp_path), str(path), "learner.actor.params is int32")
    assert not (tmp_path / "out").exists() and not (tmp_path / "resumed").exists()
