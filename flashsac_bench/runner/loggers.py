"""Where a run's logged points go (config group `logger`): TensorBoard event files or a Weights &
Biases run, the same points under the same names (runner.scalars builds them).

A sink takes one point per logged window: `write(step, {tag: value})`. The W&B run is named
after the run dir, carries the resolved config as its config and lives in <run dir>/wandb (W&B's
offline mode keeps it there); its id goes into every checkpoint (`state`), so that a resumed
run continues the same W&B run, and into summary.json (`describe`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger("flashsac_bench.runner")

TENSORBOARD_DIR = "tb"
# The project of a run when W&B's own WANDB_PROJECT does not name one.
WANDB_PROJECT = "flashsac_bench"


class Sink(Protocol):
    def write(self, step: int, points: dict[str, float]) -> None: ...

    def close(self) -> None: ...

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps so that a resumed run logs into the same record."""
        ...

    def describe(self) -> dict[str, Any]:
        """Where the points are (summary.json's `logger`)."""
        ...


class TensorBoardSink:
    def __init__(self, log_dir: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.log_dir = log_dir
        self.writer: Any = SummaryWriter(log_dir=str(log_dir), flush_secs=10)

    def write(self, step: int, points: dict[str, float]) -> None:
        for tag, value in points.items():
            self.writer.add_scalar(tag, value, step)

    def close(self) -> None:
        self.writer.close()

    def state(self) -> dict[str, Any]:
        return {"name": "tensorboard"}

    def describe(self) -> dict[str, Any]:
        return {"name": "tensorboard", "dir": str(self.log_dir)}


class WandbSink:
    """One W&B run. `status` is the run's status at close: a complete run finishes with exit
    code 0, any other (interrupted, failed) with 1, so that W&B does not show it as finished."""

    def __init__(
        self,
        run_dir: Path,
        config: dict[str, Any] | None,
        saved: dict[str, Any] | None,
        status: Callable[[], str],
    ) -> None:
        self.status = status
        self.run: Any = open_wandb_run(run_dir, saved, config)
        log.info("logging to W&B run %s (%s)", self.run.id, self.run.dir)

    def write(self, step: int, points: dict[str, float]) -> None:
        self.run.log(points, step=step)

    def close(self) -> None:
        self.run.finish(exit_code=0 if self.status() == "complete" else 1)

    def state(self) -> dict[str, Any]:
        return {
            "name": "wandb",
            "wandb_run_id": self.run.id,
            "wandb_project": self.run.project,
            "wandb_entity": self.run.entity or None,
        }

    def describe(self) -> dict[str, Any]:
        return {**self.state(), "wandb_dir": str(Path(self.run.dir).parent)}


def open_wandb_run(
    run_dir: Path, saved: dict[str, Any] | None, config: dict[str, Any] | None
) -> Any:
    """The W&B run of `run_dir`: the one `saved` (a checkpoint's logger state) names, continued
    in its project and entity, or a new one (project: WANDB_PROJECT, else flashsac_bench)."""
    import wandb

    saved = saved if isinstance(saved, dict) and saved.get("name") == "wandb" else {}
    run_id = saved.get("wandb_run_id")
    # The run's files stay in the run dir (W&B's default is ./wandb), unless WANDB_DIR says.
    where = None if os.environ.get("WANDB_DIR") else str(run_dir)
    return wandb.init(
        project=saved.get("wandb_project") or os.environ.get("WANDB_PROJECT") or WANDB_PROJECT,
        entity=saved.get("wandb_entity") or None,  # None: WANDB_ENTITY, else the account's
        name=run_dir.name,
        id=run_id if isinstance(run_id, str) else None,  # None: a new run, its id W&B's
        resume="allow",  # the same id continues the same W&B run
        config=config,
        dir=where,
        # No stdout / stderr capture: the run dir keeps the log, and the trainer's progress
        # line and signal handling stay its own.
        settings=wandb.Settings(console="off"),
    )


def log_to_saved_wandb_run(
    run_dir: Path, saved: dict[str, Any], step: int, points: dict[str, Any], gif: Path | None
) -> None:
    """Add `points` (and `gif` as the media eval/rollout) at `step` to the W&B run `saved`
    names (a checkpoint's logger state). W&B keeps only points at or after a run's
    latest step: a final checkpoint's iteration comes after its training's last point."""
    import wandb

    run = open_wandb_run(run_dir, saved, None)
    try:
        data = dict(points)
        if gif is not None:
            data["eval/rollout"] = wandb.Video(str(gif), format="gif")
        run.log(data, step=step)
    finally:
        run.finish()


def open_sink(
    name: str,
    run_dir: Path,
    config: dict[str, Any],
    saved: dict[str, Any] | None,
    status: Callable[[], str],
) -> Sink | None:
    """The sink of logger `name` (None: "none"). `saved`: the logger state of the checkpoint
    this run continues (its W&B run)."""
    if name == "tensorboard":
        return TensorBoardSink(run_dir / TENSORBOARD_DIR)
    if name == "wandb":
        return WandbSink(run_dir, config, saved, status)
    return None
