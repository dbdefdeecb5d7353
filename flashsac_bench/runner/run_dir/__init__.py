"""The run directory's one owner: the only code that writes into a run dir, in the order a run
meets it.

    run_dir = RunDir(records)
    if run_dir.plan(env_factory):             # run.resume's checkpoint, loaded and checked
        return run_dir.existing_summary()     #   (run.resume=auto: this run is complete)
    with run_dir.held() as (signals, closing):  # lock, signals, heartbeat, summary
        ...                                   # setup: run_dir.restore(learner, env, staging)
        run_dir.open_logger(closing)          # TensorBoard / W&B: Records hands it its points
        run_dir.running()                     # the loop starts: status "running"
        run_dir.checkpoint(learner, env, staging, background=True, t0=t0)  # periodic
        run_dir.poll()                        # a background write done: listed, its error raised
        run_dir.settle_status(signals); run_dir.checkpoint(...); run_dir.report_end(signals)

runner.records makes the rows and summary.json's content and hands them here; it writes no
file. Each job of the owner is a room of its own:

- plan.py: plan and resume (run.resume's checkpoint, loaded before the dir is written, and
  restored once the run's parts are built);
- lock.py: lock and liveness (the writer lock, stale temp files, an earlier attempt set aside,
  the heartbeat);
- status.py: status and summary (how the run ends, where it goes on from, summary.json);
- checkpoints.py: the checkpoint writes (snapshots, the background writer thread).

The rules they apply are shared with the commands that read run dirs: which checkpoint a resume
continues (runner.resume), who writes a dir and whether it is alive (runner.liveness), the
checkpoint file (runner.checkpoint), atomic writes and a full disk (runner.writes).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

from flashsac_bench.envs.contract.api import DeviceVecEnv, VecEnv
from flashsac_bench.learner.learner import FlashSACLearner
from flashsac_bench.runner.collector import Staging
from flashsac_bench.runner.device_collector import DeviceStaging
from flashsac_bench.runner.loggers import open_sink
from flashsac_bench.runner.records import Records
from flashsac_bench.runner.resume import ResumePlan
from flashsac_bench.runner.run_dir import status
from flashsac_bench.runner.run_dir.checkpoints import (
    CheckpointWriter,
    checkpoint_snapshot,
    save_snapshot,
)
from flashsac_bench.runner.run_dir.lock import Heartbeat, take_lock
from flashsac_bench.runner.run_dir.plan import existing_summary, make_plan, restore_checkpoint
from flashsac_bench.runner.scalars import Scalars
from flashsac_bench.runner.signals import Signals
from flashsac_bench.runner.summary import git_info

if TYPE_CHECKING:
    from flashsac_bench.runner.env_factory import EnvFactory


class RunDir:
    """Everything a run keeps in its run dir, and how it reads it back (module docstring)."""

    def __init__(self, records: Records) -> None:
        self.records = records
        self.path = records.run_dir
        self.writer = CheckpointWriter()
        self._plan = ResumePlan()
        self._payload: dict[str, Any] | None = None  # run.resume's checkpoint, until restored

    # ------------------------------------------------------------------ before and around
    def plan(self, env_factory: EnvFactory | None = None) -> bool:
        """Load and check run.resume's checkpoint (ResumeError before any work); True when
        run.resume=auto found this run complete (nothing to do). Reads only: the dir is written
        once `held` holds it."""
        made = make_plan(self.records, env_factory)
        if made.skip:
            return True
        self._payload, made.payload = made.payload, None  # `restore` drops it once used
        self._plan = made
        return False

    def existing_summary(self) -> dict[str, Any]:
        """A complete run's summary.json (as this run would write it, if it cannot be read)."""
        return existing_summary(self.records)

    @contextmanager
    def held(self) -> Iterator[tuple[Signals, ExitStack]]:
        """The run dir, created and held for the run: its writer lock (the one live writer,
        released last), the run's signal handling, its heartbeat, and summary.json (status
        "starting" at once). Yields the signals and the stack that undoes the run's setup
        however far it got; a run that fails has its status written before that."""
        records = self.records
        lock = take_lock(self.path, self._plan)
        records.info.git = git_info()
        with lock, status.signal_handling(records) as signals, ExitStack() as closing:
            try:
                heartbeat = Heartbeat(self.path, lambda: records.state.done_iterations)
                closing.callback(heartbeat.start().stop)
                closing.callback(self.writer.close)  # a failed run's last checkpoint completes
                status.write_summary(records)  # status "starting": readers see the run
                yield signals, closing
            except BaseException as err:
                self.record_failure(err)
                raise

    # ------------------------------------------------------------------ setup
    def restore(
        self,
        learner: FlashSACLearner,
        env: VecEnv | DeviceVecEnv,
        staging: Staging | DeviceStaging,
        refill_rows: int,
    ) -> None:
        """Continue from run.resume's checkpoint, if any: everything, or (learner-only) the
        learner alone. Then drop it: the learner, ring and env hold copies."""
        ckpt, self._payload = self._payload, None
        if ckpt is not None:
            restore_checkpoint(ckpt, self.records, learner, env, staging, refill_rows)

    def reserve(self, learner: FlashSACLearner) -> None:
        """Periodic checkpoints (run.checkpoint_every): the host buffer their snapshots of the
        ring are copied into, allocated now on the writer's thread while training starts."""
        if self.records.cfg.run.checkpoint_every:
            storage = learner.ring.storage
            self.writer.reserve_ring(tuple(storage.shape), storage.dtype)

    def open_logger(self, closing: ExitStack) -> None:
        """The run's logger (config group `logger`: TensorBoard event files in the run dir, or
        a W&B run, a resumed run's continued), closed by `closing`; Records writes its points
        to it."""
        records = self.records
        sink = open_sink(
            records.cfg.logger.name,
            self.path,
            records.info.composed,
            records.logger_saved,
            lambda: records.state.status,
        )
        records.scalars = Scalars(sink, records.num_envs)
        closing.callback(records.scalars.close)

    def running(self) -> None:
        """The loop starts: status "running", in summary.json."""
        self.records.state.status = "running"
        status.write_summary(self.records)

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(
        self,
        learner: FlashSACLearner,
        env: VecEnv | DeviceVecEnv,
        staging: Staging | DeviceStaging,
        *,
        background: bool,
        t0: float,
    ) -> None:
        """Snapshot the run (every tick stored, every row built: the caller's part, after
        `wait_for_write`) and write it inline, or on the writer's thread while training goes
        on; t0: when the loop stopped for it."""
        records = self.records
        path, payload = checkpoint_snapshot(learner, env, staging, records, self.writer.ring_copy)
        info = {"iteration": payload["iteration"], "path": str(path), "background": background}
        if background:
            info["blocking_s"] = time.perf_counter() - t0
            self.writer.start(lambda: save_snapshot(path, payload), info)
            return
        save_snapshot(path, payload)
        s = time.perf_counter() - t0
        self._listed({**info, "s": s, "blocking_s": s})

    def wait_for_write(self) -> None:
        """Wait for the background write in flight, if any (one write at a time), and list it;
        a failed one raises here."""
        self._collect(wait=True)

    def poll(self) -> None:
        """List a background write that is done (its error raised); returns at once."""
        if self.writer.busy:
            self._collect(wait=False)

    def _collect(self, *, wait: bool) -> None:
        done = self.writer.collect(wait=wait)
        if done is not None and "path" in done:  # not the buffer's reservation
            done["s"] = done["blocking_s"] + done.pop("write_s")
            self._listed(done)

    def _listed(self, written: dict[str, Any]) -> None:
        """A written checkpoint in the summary: its path, iteration, the seconds the loop was
        held (`blocking_s`) and from snapshot to renamed file (`s`)."""
        self.records.state.checkpoints.append(written)
        status.write_summary(self.records)

    # ------------------------------------------------------------------ the end
    def settle_status(self, signals: Signals) -> None:
        """The status of a loop that ended without an error (its checkpoint follows)."""
        status.settle(self.records, signals)

    def report_end(self, signals: Signals) -> None:
        """The closing log line; after a signal, the resume command and the signal's exit
        code."""
        status.report_end(self.records, signals)

    def record_failure(self, err: BaseException) -> None:
        """The status of a run that `err` ended, written to its summary (never masking
        `err`)."""
        status.record_failure(self.records, err)

    def continue_hint(self) -> str:
        """Where a run that ended goes on from: its last checkpoint, else the checkpoint it
        resumed from, else the start."""
        return status.continue_hint(self.records)
