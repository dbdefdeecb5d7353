"""A trained learner from a runner checkpoint (runner/checkpoint.py), rebuilt to act.

What evaluate, export and convert share: `read_checkpoint` (a file, run dir or checkpoints dir,
memory-mapped; read weights-only, CRC-checked, its learner finite: runner.checkpoint),
`acting_config` (config.acting: the training config with an eager path and the acting device
and dtype), `load_trained_learner` (a learner holding the checkpoint's learner state; a
checkpoint whose config does not fit its tensors, or whose policy does not act on a probe batch
(runner.checkpoint_probe), is refused in one line) and `trained_task` (the task config with the
model the checkpoint's envs ran, written back from the checkpoint).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from flashsac_bench.config import Config, ConfigError
from flashsac_bench.config.acting import ACTING_DTYPES, acting_config
from flashsac_bench.config.task import BaseTaskConfig
from flashsac_bench.learner.learner import Dims, FlashSACLearner
from flashsac_bench.runner.checkpoint import CheckpointError, load_checkpoint, resolve_resume_path
from flashsac_bench.runner.checkpoint_probe import probe_learner

log = logging.getLogger("flashsac_bench.evaluation")

# The matmul dtypes a trained policy can act in ('checkpoint': the training dtype).
DTYPES = {name: getattr(torch, name) for name in ACTING_DTYPES}


@dataclass
class TrainedLearner:
    checkpoint: Path
    iteration: int
    config: Config  # the training config, path / hardware replaced for acting (see below)
    training_config: dict[str, Any]
    learner: FlashSACLearner
    payload: dict[str, Any]


def read_checkpoint(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """A runner checkpoint (file, run dir or checkpoints dir), memory-mapped: the replay ring in
    it (GBs for large runs) is not read unless touched."""
    resolved = resolve_resume_path(path)
    return resolved, load_checkpoint(resolved, mmap=True)


def run_dir_of(checkpoint: Path) -> Path:
    """The run dir of `<run>/checkpoints/iter_k.pt` (else the checkpoint's own folder)."""
    parent = checkpoint.parent
    return parent.parent if parent.name == "checkpoints" else parent


def load_trained_learner(
    checkpoint: str | Path, device: str = "cpu", dtype: str = "float32"
) -> TrainedLearner:
    """A learner holding a runner checkpoint's learner state (networks, BN statistics, ...).

    Built with the training num_envs (the per-env normalizer / noise state must match shapes)
    and the smallest replay ring allowed (the checkpoint's replay is not needed to act).
    """
    path, payload = read_checkpoint(checkpoint)
    try:
        cfg = acting_config(payload, device, dtype)
    except ConfigError as err:
        raise CheckpointError(f"{path}: its config is not valid here: {err}") from None
    sd = payload["learner"]
    try:
        obs, critic_obs, action = (int(d) for d in sd["dims"])
        learner = FlashSACLearner.from_config(cfg, Dims(obs, critic_obs, action), to_act=True)
        learner.load_state_dict(sd)
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        # Shapes that do not fit (a checkpoint edited or assembled elsewhere): torch's
        # "size mismatch" / our dims check, in one line.
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(
            f"{path}: its config does not match its learner tensors ({detail[:200]})"
        ) from None
    if problem := probe_learner(learner):
        raise CheckpointError(f"{path}: {problem}")
    return TrainedLearner(
        checkpoint=path,
        iteration=int(payload.get("iteration", -1)),
        config=cfg,
        training_config=dict(payload.get("training_config", {})),
        learner=learner,
        payload=payload,
    )


@contextlib.contextmanager
def trained_task(trained: TrainedLearner) -> Iterator[BaseTaskConfig]:
    """The task config to build envs with: the checkpoint's, its `task.model_file` pointing at
    the model the checkpoint carries (its files written into a temporary folder that lives
    until the block ends), so that an edited or deleted MJCF does not change what is
    evaluated or exported. The built-in model comes from this version's code: a warning says
    when it differs from the checkpoint's. A task without a model file (task=gymnasium: the
    env is Gymnasium's, by its id) as it is."""
    from flashsac_bench.envs.g1.offer import g1_config
    from flashsac_bench.envs.tasks import task_of

    if not task_of(trained.config.task).stores_model:
        yield trained.config.task
        return
    task = g1_config(trained.config.task)  # a stored model is a G1's model_file
    record = trained.payload.get("model")
    if not isinstance(record, dict) or not record.get("files"):
        if isinstance(record, dict) and record.get("model_file") is None:
            from flashsac_bench.envs.g1.model import model_record

            if model_record(None)["sha256"] != record.get("sha256"):
                log.warning(
                    "the built-in G1 model of this version differs from the one %s was trained "
                    "with (another flashsac_bench or MuJoCo version)",
                    trained.checkpoint,
                )
        yield task
        return
    from flashsac_bench.envs.g1.model import materialize

    with tempfile.TemporaryDirectory(prefix="flashsac_bench_model_") as folder:
        try:
            model_file = materialize(record, folder)
        except (ValueError, OSError, KeyError, TypeError) as err:
            raise CheckpointError(f"{trained.checkpoint}: its stored model: {err}") from None
        yield dataclasses.replace(task, model_file=model_file)
