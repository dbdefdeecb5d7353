"""The run directory: the one object through which a run reads and writes what it keeps there.

    run_dir = RunDir(records)
    if run_dir.plan(env_factory):             # run.resume's checkpoint, loaded and checked
        return run_dir.existing_summary()     #   (run.resume=auto: this run is complete)
    with run_dir.held() as (signals, closing):  # lock, signals, heartbeat, summary
        ...                                   # setup: run_dir.restore(learner, env, staging)
        run_dir.checkpoint(learner, env, staging, background=True, t0=t0)  # periodic
        run_dir.poll()                        # a background write done: listed, its error raised
        run_dir.settle_status(signals); run_dir.checkpoint(...); run_dir.report_end(signals)

Behind it, each rule in its own module: the checkpoint file and its checks (runner.checkpoint,
runner.torch_files), which checkpoint a resume continues and what it may change
(runner.resume), who writes the dir and whether it is alive (runner.liveness: the writer lock
and the heartbeat), atomic writes and the errors a full disk gives (runner.writes), and
summary.json (runner.records, runner.summary).

Periodic checkpoints are written by a background thread while training goes on: a walk-sized
run's checkpoint holds its whole replay ring, and serializing and fsyncing it inline would
stall the loop for seconds. The main thread still takes the snapshot between iterations (every
device -> host copy, so the file holds exactly that iteration's state); the thread only
serializes, fsyncs and renames it. One write at a time: the next checkpoint, the run's end and
a failure all wait for the write in flight, so no checkpoint is lost or torn. The final
checkpoint is written inline.

How a run ends is decided here too: its status (complete, interrupted, failed) and the line
that says where it goes on from. Signals (runner.signals) are honoured in every phase.
"""

from __future__ import annotations

import copy
import logging
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from flashsac_bench.envs.contract.api import DeviceVecEnv, VecEnv
from flashsac_bench.learner.learner import FlashSACLearner
from flashsac_bench.runner.checkpoint import (
    CHECKPOINT_DIR,
    checkpoint_path,
    is_learner_only,
    save_checkpoint,
)
from flashsac_bench.runner.collector import Staging
from flashsac_bench.runner.device_collector import DeviceStaging
from flashsac_bench.runner.env_factory import env_factory_is_default
from flashsac_bench.runner.faults import StartInterrupted
from flashsac_bench.runner.liveness import Heartbeat, RunDirBusyError, RunDirLock, last_checkpoint
from flashsac_bench.runner.records import Records
from flashsac_bench.runner.resume import (
    ResumePlan,
    RunDirInUseError,
    plan_resume,
    recheck_locked,
    set_aside_earlier_attempt,
)
from flashsac_bench.runner.resume_commands import restart_command, resume_command
from flashsac_bench.runner.signals import Signals
from flashsac_bench.runner.summary import SUMMARY_NAME, git_info, load_summary
from flashsac_bench.runner.writes import chained_disk_full, write_error

if TYPE_CHECKING:
    from flashsac_bench.runner.env_factory import EnvFactory

log = logging.getLogger("flashsac_bench.runner")

THREAD_NAME = "flashsac-checkpoint"


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
        records = self.records
        t = time.perf_counter()
        if env_factory_is_default(env_factory):
            from flashsac_bench.envs import task_record  # the built-in env's task

            records.info.model = task_record(records.cfg.task)
        plan = plan_resume(
            records.cfg, self.path, records.info.training_config, model=records.info.model
        )
        if plan.skip:
            for note in plan.notes:
                log.warning(note)
            return True
        if plan.payload is not None:
            records.state.resumed_from = str(plan.path)
            records.info.startup["resume_load_s"] = time.perf_counter() - t
        self._payload, plan.payload = plan.payload, None  # `restore` drops it once used
        self._plan = plan
        return False

    def existing_summary(self) -> dict[str, Any]:
        """A complete run's summary.json (as this run would write it, if it cannot be read)."""
        try:
            return load_summary(self.path)
        except (OSError, ValueError):
            return self.records.summary()

    @contextmanager
    def held(self) -> Iterator[tuple[Signals, ExitStack]]:
        """The run dir, created and held for the run: its writer lock (the one live writer,
        released last), the run's signal handling, its heartbeat, and summary.json (status
        "starting" at once). Yields the signals and the stack that undoes the run's setup
        however far it got; a run that fails has its status written before that."""
        records = self.records
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise write_error(err, self.path, "run dir") from err
        lock = self._lock()
        records.info.git = git_info()
        with lock, self._signals() as signals, ExitStack() as closing:
            try:
                heartbeat = Heartbeat(self.path, lambda: records.state.done_iterations)
                closing.callback(heartbeat.start().stop)
                closing.callback(self.writer.close)  # a failed run's last checkpoint completes
                records.write_summary()  # status "starting": readers see the run
                yield signals, closing
            except BaseException as err:
                self.record_failure(err)
                raise

    def _lock(self) -> RunDirLock:
        """Take the writer lock (RunDirInUseError naming the live writer), check the plan again
        under it, remove what a killed writer left half-written, and set an earlier attempt
        aside; the lock, held until the caller releases it."""
        try:
            lock = RunDirLock(self.path).acquire()
        except RunDirBusyError as err:
            raise RunDirInUseError(
                f"{err}; a second writer would mix its files with that run's: wait for it to end "
                "or stop it (its run dir is freed when it exits, however it exits)"
            ) from None
        try:
            recheck_locked(self._plan, self.path)
            for note in self._plan.notes:
                log.warning(note)
            for stale in remove_stale_temps(self.path):
                log.warning("removed %s, left half-written by a writer that was killed", stale)
            if aside := set_aside_earlier_attempt(self._plan, self.path):
                log.warning(
                    "run.resume=auto: the earlier attempt stopped before its first checkpoint; "
                    "its summary and TensorBoard files are now in %s",
                    aside,
                )
        except BaseException:
            lock.release()
            raise
        return lock

    def _signals(self) -> Signals:
        """The run's signal handling (runner.signals); when the main thread is held in native
        code and cannot hear a signal, the watchdog writes the summary and the line its
        handler's exception would have."""
        records = self.records
        signals: Signals

        def on_stuck(signame: str, where: str) -> str:
            if signals.in_loop:  # a second signal, unheard: what KeyboardInterrupt does
                done = records.state.done_iterations
                self.record_failure(KeyboardInterrupt(signame))
                return (
                    f"aborted by a second {signame} during iteration {done}; {self.continue_hint()}"
                )
            err = StartInterrupted(signame, int(getattr(signal, signame)), where)
            self.record_failure(err)
            return f"{err}; {err.hint}"

        signals = Signals(on_stuck)
        return signals

    # ------------------------------------------------------------------ checkpoints
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
        if ckpt is None:
            return
        records, state = self.records, self.records.state
        learner.load_state_dict(ckpt["learner"])
        state.start_iteration = state.done_iterations = int(ckpt["iteration"])
        if is_learner_only(ckpt):
            # No replay / env state (a checkpoint converted from unilab-rl, which saves none):
            # the envs start fresh episodes and the ring refills to learning_starts rows with
            # the loaded policy acting before updates continue -- as UniLab's own resume does.
            state.policy_refill = True
            log.warning(
                "resumed from the learner-only checkpoint %s at iteration %d: it holds no "
                "replay or env state, so the replay refills to %d rows (loaded policy acting) "
                "before updates continue",
                state.resumed_from,
                state.start_iteration,
                refill_rows,
            )
            return
        learner.ring.load_state_dict(ckpt["replay"])
        env.set_state(ckpt["env"])
        staging.load_state_dict(ckpt["staging"])
        records.load_state_dict(ckpt)
        log.info("resumed from %s at iteration %d", state.resumed_from, state.start_iteration)

    def reserve(self, learner: FlashSACLearner) -> None:
        """Periodic checkpoints (run.checkpoint_every): the host buffer their snapshots of the
        ring are copied into, allocated now on the writer's thread while training starts."""
        if self.records.cfg.run.checkpoint_every:
            storage = learner.ring.storage
            self.writer.reserve_ring(tuple(storage.shape), storage.dtype)

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
        self.records.write_summary()

    # ------------------------------------------------------------------ the end
    def settle_status(self, signals: Signals) -> None:
        """The status of a loop that ended without an error (its checkpoint follows)."""
        state, iterations = self.records.state, self.records.cfg.run.iterations
        signals.finishing_started()  # decided here: a signal from now on does not change it
        if state.done_iterations >= iterations or (state.stopped_by and not signals.requested):
            state.status, state.reason = "complete", None
        else:
            state.status = "interrupted"
            state.reason = (
                f"interrupted by {signals.requested} after {state.done_iterations} of "
                f"{iterations} iterations (checkpoint written)"
            )

    def report_end(self, signals: Signals) -> None:
        """The closing log line; after a signal, the resume command and the signal's exit
        code."""
        records = self.records
        s, state = records.summary(), records.state
        log.info(
            "%s: learner %s ms, collector %s ms, iter %s ms (medians of %d), overlap %s; %s",
            state.status,
            _r(s["learner_train_ms"]["median"]),
            _r(s["collector_cycle_ms"]["median"]),
            _r(s["iter_ms"]["median"]),
            s["num_samples"],
            _r(s["overlap_efficiency"], 3),
            self.path / SUMMARY_NAME,
        )
        if signals.requested:
            cmd = resume_command(records.info.command, self.path)
            log.warning("%s; continue with: %s", state.reason, cmd)
            raise SystemExit(128 + int(getattr(signal, signals.requested)))

    def record_failure(self, err: BaseException) -> None:
        """The status of a run that `err` ended, written to its summary (never masking
        `err`)."""
        records, state = self.records, self.records.state
        if isinstance(err, SystemExit) and state.status == "interrupted":
            return  # report_end already wrote everything
        if isinstance(err, StartInterrupted):
            self._stopped_before_the_loop(err)
            state.status, state.reason = "interrupted", str(err)
        elif isinstance(err, KeyboardInterrupt):
            state.status = "interrupted"
            state.reason = (
                f"KeyboardInterrupt ({err or 'SIGINT'}) during iteration "
                f"{state.done_iterations}; no checkpoint (state was mid-iteration)"
            )
        else:
            state.status = "failed"
            state.reason = f"{type(err).__name__}: {err}"
        try:
            # The last finished iteration's row, without the learner values a sync would read.
            records.build_row(None, None)
            records.write_summary()
        except Exception as write_err:  # noqa: BLE001 - never mask the original error
            log.error("could not write the partial summary: %s", write_err)
            log.debug("the partial summary's write failed", exc_info=write_err)

    def continue_hint(self) -> str:
        """Where a run that ended goes on from: its last checkpoint, else the checkpoint it
        resumed from, else the start."""
        records = self.records
        command = records.info.command
        ckpt = last_checkpoint(self.path) if self.path.is_dir() else None
        if ckpt is not None:
            return f"last checkpoint {ckpt}; continue with: {resume_command(command, self.path)}"
        source = records.state.resumed_from
        if source is not None:
            cmd = resume_command(command, self.path, Path(source))
            return f"last checkpoint {source}; continue with: {cmd}"
        cmd = restart_command(command, self.path)
        return f"no checkpoint was written; start it again with: {cmd}"

    def _stopped_before_the_loop(self, err: StartInterrupted) -> None:
        """Complete the message of a run stopped before its first iteration (what was kept)
        and set its hint (the command that starts it again, or continues the run it
        resumed)."""
        records = self.records
        command, source = records.info.command, records.state.resumed_from
        if source is None:
            kept = "before the first checkpoint: nothing was saved"
            err.hint = f"start it again with: {restart_command(command, self.path)}"
        else:
            kept = f"before its first iteration: {source} is unchanged"
            own = Path(source).parent.parent == self.path  # run.resume=auto continues from it
            cmd = (
                restart_command(command, self.path)
                if own
                else resume_command(command, self.path, Path(source))
            )
            err.hint = f"continue with: {cmd}"
        err.args = (f"{err}, {kept}",)


# ---------------------------------------------------------------------------- run dir files
# The files of a run dir written through a temp file (writes.atomic_write): a writer killed
# mid-write leaves ".<name>.XXXXXXXX" behind.
_ATOMIC_FILES = re.compile(
    r"\.(iter_\d+\.pt|latest\.txt|summary\.json|heartbeat\.json)\.[A-Za-z0-9_]{8}"
)


def remove_stale_temps(run_dir: Path) -> list[Path]:
    """Delete the temp files a killed writer left in run_dir and its checkpoints/ (call only
    while holding the run dir's lock: then no live writer owns them). The paths removed."""
    removed = []
    for folder in (run_dir, run_dir / CHECKPOINT_DIR):
        if not folder.is_dir():
            continue
        for entry in folder.iterdir():
            if _ATOMIC_FILES.fullmatch(entry.name) and entry.is_file():
                entry.unlink(missing_ok=True)
                removed.append(entry)
    return removed


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


def _r(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


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
