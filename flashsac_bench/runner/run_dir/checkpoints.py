"""The run dir's checkpoint writes: a snapshot of the run that owns its data, saved inline or
by the writer thread while training goes on.

Periodic checkpoints are written by a background thread: a walk-sized run's checkpoint holds its
whole replay ring, and serializing and fsyncing it inline would stall the loop for seconds. The
main thread still takes the snapshot between iterations (every device -> host copy, so the file
holds exactly that iteration's state); the thread only serializes, fsyncs and renames it. One
write at a time: the next checkpoint, the run's end and a failure all wait for the write in
flight, so no checkpoint is lost or torn. The final checkpoint is written inline.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from flashsac_bench.envs.contract.api import DeviceVecEnv, VecEnv
from flashsac_bench.learner.learner import FlashSACLearner
from flashsac_bench.runner.checkpoint import checkpoint_path, save_checkpoint
from flashsac_bench.runner.collector import Staging
from flashsac_bench.runner.device_collector import DeviceStaging
from flashsac_bench.runner.records import Records
from flashsac_bench.runner.writes import chained_disk_full, write_error

log = logging.getLogger("flashsac_bench.runner")

THREAD_NAME = "flashsac-checkpoint"


def checkpoint_snapshot(
    learner: FlashSACLearner,
    env: VecEnv | DeviceVecEnv,
    staging: Staging | DeviceStaging,
    records: Records,
    ring_copy: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Everything that continues the run after its done iterations (every tick stored, every
    row built), as host copies that training may go on beside: the payload owns its data (the
    ring's rows: `ring_copy`'s buffer, kept until the write is done), so a background write
    saves exactly this iteration's state."""
    state, rec = records.state, records.state_dict()
    path = checkpoint_path(records.run_dir, state.done_iterations)
    payload = {
        "iteration": state.done_iterations,
        "learner": learner.state_dict(),
        "replay": learner.ring.state_dict(ring_copy),
        "env": _owned(env.get_state()),
        "staging": staging.state_dict(),
        "episodes": copy.deepcopy(rec["episodes"]),
        "rows_all": [dict(row) for row in rec["rows_all"]],
        "training_config": copy.deepcopy(records.info.training_config),
        "config": copy.deepcopy(records.info.composed),
        "model": records.info.model,
        "logger": records.scalars.state(),  # the W&B run a resume continues
    }
    return path, payload


def save_snapshot(path: Path, payload: dict[str, Any]) -> None:
    """Write a checkpoint_snapshot (any thread); a full disk raises DiskFullError naming it."""
    try:
        save_checkpoint(path, payload)
    except Exception as err:
        full = chained_disk_full(err)
        if full is None:
            raise
        raise write_error(full, path, "checkpoint") from err


def _owned(value: Any) -> Any:
    """`value` with every numpy array copied: an env's get_state should return copies, but a
    VecEnv written elsewhere may hand out views of arrays it keeps stepping."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {k: _owned(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_owned(v) for v in value)
    return value


# ---------------------------------------------------------------------------- the writer thread
@dataclass
class _Write:
    info: dict[str, Any]
    thread: threading.Thread
    started: float = field(default_factory=time.perf_counter)
    error: BaseException | None = None
    seconds: float | None = None


class CheckpointWriter:
    """Runs one checkpoint write at a time on its own (non-daemon) thread."""

    def __init__(self) -> None:
        self._write: _Write | None = None
        self._ring_host: torch.Tensor | None = None

    def reserve_ring(self, shape: tuple[int, ...], dtype: torch.dtype) -> None:
        """Allocate and touch the full ring's host buffer on the writer's thread now, while
        training runs, so that even the first checkpoint's copy finds its pages mapped."""

        def reserve() -> None:
            self._ring_host = torch.zeros(shape, dtype=dtype)

        self.start(reserve, {"reserved": tuple(shape)})

    def ring_copy(self, storage: torch.Tensor) -> torch.Tensor:
        """`storage` copied into a host buffer kept from one checkpoint to the next: a copy
        into fresh memory would page-fault its way through the whole ring at every checkpoint.
        Safe because a snapshot is only taken once the previous write is complete; the copy is
        valid until the next snapshot."""
        if self.busy:
            raise RuntimeError("the previous checkpoint is still being written from the buffer")
        kept = self._ring_host
        if kept is not None and kept.shape == storage.shape and kept.dtype == storage.dtype:
            return kept.copy_(storage.detach())
        # Exactly the rows stored (torch.save writes a view's whole storage). A ring that is not
        # full yet gets a buffer of its own; the full ring's (reserved) buffer is kept.
        buf = torch.empty(storage.shape, dtype=storage.dtype)
        if kept is None or storage.shape[0] >= kept.shape[0]:
            self._ring_host = buf
        return buf.copy_(storage.detach())

    @property
    def busy(self) -> bool:
        return self._write is not None

    def start(self, write: Callable[[], object], info: dict[str, Any]) -> None:
        """Run `write()` on a new thread; `info` comes back from `collect` once it is done."""
        if self._write is not None:
            raise RuntimeError("a checkpoint write is still in flight: collect it first")

        def run() -> None:
            try:
                write()
            except BaseException as err:  # noqa: BLE001 - re-raised on the main thread
                job.error = err
            job.seconds = time.perf_counter() - job.started

        job = _Write(info, threading.Thread(target=run, name=THREAD_NAME))
        self._write = job
        job.thread.start()

    def collect(self, *, wait: bool) -> dict[str, Any] | None:
        """The finished write's `info` with its `write_s`, once (its error is raised here);
        None while nothing has finished (or, with `wait`, when nothing was in flight)."""
        job = self._write
        if job is None or (not wait and job.thread.is_alive()):
            return None
        job.thread.join()
        self._write = None
        if job.error is not None:
            raise job.error
        return {**job.info, "write_s": job.seconds}

    @property
    def buffer_bytes(self) -> int:
        """Host memory held for the ring's snapshots (0 once closed)."""
        buf = self._ring_host
        return 0 if buf is None else buf.numel() * buf.element_size()

    def close(self) -> None:
        """Let a write in flight finish (a run that fails keeps its last checkpoint whole; its
        error is logged, never raised over the error that ended the run), then free the
        buffer."""
        try:
            done = self.collect(wait=True)
        except Exception as err:  # noqa: BLE001
            log.error("the checkpoint written in the background failed: %s", err)
            done = None
        finally:
            self._ring_host = None
        if done is not None and "path" in done:
            log.info("checkpoint %s finished writing after the run stopped", done["path"])
