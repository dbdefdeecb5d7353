"""How a run stops and what it keeps: signals (runner.signals: honoured in every phase),
checkpoints (written and restored), and the status its summary ends with (complete,
interrupted, failed)."""

from __future__ import annotations

import copy
import logging
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from flashsac_bench.envs.api import VecEnv
from flashsac_bench.learner.learner import FlashSACLearner
from flashsac_bench.runner.checkpoint import (
    CHECKPOINT_DIR,
    checkpoint_path,
    is_learner_only,
    save_checkpoint,
)
from flashsac_bench.runner.checkpoint_writer import CheckpointWriter
from flashsac_bench.runner.collector import Staging
from flashsac_bench.runner.env_factory import EnvFactory, env_factory_is_default
from flashsac_bench.runner.faults import StartInterrupted
from flashsac_bench.runner.liveness import RunDirBusyError, RunDirLock, last_checkpoint
from flashsac_bench.runner.records import Records, RunState
from flashsac_bench.runner.resume import (
    ResumePlan,
    RunDirInUseError,
    plan_resume,
    recheck_locked,
    restart_command,
    resume_command,
    set_aside_earlier_attempt,
)
from flashsac_bench.runner.signals import Signals
from flashsac_bench.runner.signals import phase as phase  # the loop names its setup phases
from flashsac_bench.runner.summary import SUMMARY_NAME
from flashsac_bench.runner.writes import DISK_FULL_ERRNOS, write_error

log = logging.getLogger("flashsac_bench.runner")


def run_signals(records: Records) -> Signals:
    """The run's signal handling (runner.signals); when the main thread is held in native code
    and cannot hear a signal, the watchdog writes the summary and the line its handler's
    exception would have."""
    signals: Signals

    def on_stuck(signame: str, where: str) -> str:
        if signals.in_loop:  # a second signal, unheard: what KeyboardInterrupt does
            done = records.state.done_iterations
            record_failure(records, KeyboardInterrupt(signame))
            return (
                f"aborted by a second {signame} during iteration {done}; {continue_hint(records)}"
            )
        err = StartInterrupted(signame, int(getattr(signal, signame)), where)
        record_failure(records, err)
        return f"{err}; {err.hint}"

    signals = Signals(on_stuck)
    return signals


def continue_hint(records: Records) -> str:
    """Where a run that ended at once goes on from: its last checkpoint, else the start."""
    ckpt = last_checkpoint(records.run_dir) if records.run_dir.is_dir() else None
    if ckpt is None:
        cmd = restart_command(records.info.command, records.run_dir)
        return f"no checkpoint was written; start it again with: {cmd}"
    cmd = resume_command(records.info.command, records.run_dir)
    return f"last checkpoint {ckpt}; continue with: {cmd}"


def _stopped_before_the_loop(records: Records, err: StartInterrupted) -> None:
    """Complete the message of a run stopped before its first iteration (what was kept) and set
    its hint (the command that starts it again, or continues the run it resumed)."""
    command, run_dir, source = records.info.command, records.run_dir, records.state.resumed_from
    if source is None:
        kept = "before the first checkpoint: nothing was saved"
        err.hint = f"start it again with: {restart_command(command, run_dir)}"
    else:
        kept = f"before its first iteration: {source} is unchanged"
        own = Path(source).parent.parent == run_dir  # run.resume=auto continues from it
        cmd = (
            restart_command(command, run_dir)
            if own
            else resume_command(command, run_dir, Path(source))
        )
        err.hint = f"continue with: {cmd}"
    err.args = (f"{err}, {kept}",)


# ---------------------------------------------------------------------------- checkpoints
def plan_run_resume(records: Records, env_factory: EnvFactory | None = None) -> ResumePlan:
    """run.resume's checkpoint, loaded and checked (ResumeError before any work); its `skip`
    says that run.resume=auto found this run complete. Reads only: the run dir is written once
    `hold_run_dir` holds it."""
    t = time.perf_counter()
    if env_factory_is_default(env_factory):
        from flashsac_bench.envs.g1_model import model_record  # MuJoCo: the built-in env's

        records.info.model = model_record(records.cfg.task.model_file)
    plan = plan_resume(
        records.cfg, records.run_dir, records.info.training_config, model=records.info.model
    )
    if plan.skip:
        for note in plan.notes:
            log.warning(note)
    elif plan.payload is not None:
        records.state.resumed_from = str(plan.path)
        records.info.startup["resume_load_s"] = time.perf_counter() - t
    return plan


def hold_run_dir(records: Records, plan: ResumePlan) -> RunDirLock:
    """Take the run dir's writer lock (RunDirInUseError naming the live writer), check the plan
    again under it, remove what a killed writer left half-written, and set an earlier
    attempt aside; the lock, held until the caller releases it (the run's end)."""
    run_dir = records.run_dir
    try:
        lock = RunDirLock(run_dir).acquire()
    except RunDirBusyError as err:
        raise RunDirInUseError(
            f"{err}; a second writer would mix its files with that run's: wait for it to end "
            "or stop it (its run dir is freed when it exits, however it exits)"
        ) from None
    try:
        recheck_locked(plan, run_dir)
        for note in plan.notes:
            log.warning(note)
        for stale in remove_stale_temps(run_dir):
            log.warning("removed %s, left half-written by a writer that was killed", stale)
        if aside := set_aside_earlier_attempt(plan, run_dir):
            log.warning(
                "run.resume=auto: the earlier attempt stopped before its first checkpoint; its "
                "summary and TensorBoard files are now in %s",
                aside,
            )
    except BaseException:
        lock.release()
        raise
    return lock


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
    env: VecEnv,
    staging: Staging,
    records: Records,
    ring_copy: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Everything that continues the run after its done iterations (every tick stored, every
    row finalized), as host copies that training may go on beside: the payload owns its data
    (the ring's rows: `ring_copy`'s buffer, kept until the write is done), so a background
    write saves exactly this iteration's state."""
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
        full = _disk_full_cause(err)
        if full is None:
            raise
        raise write_error(full, path, "checkpoint") from err


def note_checkpoint(records: Records, written: dict[str, Any]) -> None:
    """List a written checkpoint in the summary (main thread): its path, iteration, the seconds
    the loop was held (`blocking_s`) and from snapshot to renamed file (`s`)."""
    records.state.checkpoints.append(written)
    records.write_summary()


def write_checkpoint(
    records: Records,
    writer: CheckpointWriter,
    learner: FlashSACLearner,
    env: VecEnv,
    staging: Staging,
    *,
    background: bool,
    t0: float,
) -> None:
    """Snapshot the run (every tick stored, every row final: the caller's part) and write it
    inline, or on the writer's thread while training goes on; t0: when the loop stopped for it."""
    path, payload = checkpoint_snapshot(learner, env, staging, records, writer.ring_copy)
    info = {"iteration": payload["iteration"], "path": str(path), "background": background}
    if background:
        info["blocking_s"] = time.perf_counter() - t0
        writer.start(lambda: save_snapshot(path, payload), info)
        return
    save_snapshot(path, payload)
    s = time.perf_counter() - t0
    note_checkpoint(records, {**info, "s": s, "blocking_s": s})


def collect_checkpoint(records: Records, writer: CheckpointWriter, *, wait: bool) -> None:
    """List the background write in the summary once it is done (raise its error)."""
    done = writer.collect(wait=wait)
    if done is not None and "path" in done:  # not the buffer's reservation
        done["s"] = done["blocking_s"] + done.pop("write_s")
        note_checkpoint(records, done)


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


def _disk_full_cause(err: BaseException) -> OSError | None:
    """The ENOSPC behind `err` when torch hid it: a full disk part-way through torch.save ends in
    its zip writer's "unexpected pos" RuntimeError, with the OSError only as its context."""
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and cause.errno in DISK_FULL_ERRNOS:
            return None if cause is err else cause  # err itself: already named as it is
        cause = cause.__cause__ or cause.__context__
    return None


def restore(
    ckpt: dict[str, Any],
    learner: FlashSACLearner,
    env: VecEnv,
    staging: Staging,
    records: Records,
    refill_rows: int,
) -> None:
    """Continue from a checkpoint: everything, or (learner-only) the learner alone."""
    state = records.state
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


# ---------------------------------------------------------------------------- start, end
def report_start(records: Records, threshold: int) -> None:
    c, info, tc = records.cfg, records.info, records.info.training_config
    log.info(
        "flashsac_bench: %s %s on %s (%s), %d envs, batch %d, %d iterations; "
        "learning starts at %d replay rows; cold start %.2f s; run dir %s",
        c.update.name,
        tc["executor"],
        info.device.get("gpu", info.device["device"]),
        tc["dtype"],
        c.run.num_envs,
        c.replay.batch_size,
        c.run.iterations,
        threshold,
        info.startup["cold_start_s"],
        records.run_dir,
    )


def end_status(state: RunState, iterations: int, signals: Signals) -> None:
    """The status of a loop that ended without an error (a checkpoint follows)."""
    signals.finishing_started()  # decided here: a signal from now on does not change it
    if state.done_iterations >= iterations or (state.stopped_by and not signals.requested):
        state.status, state.reason = "complete", None
    else:
        state.status = "interrupted"
        state.reason = (
            f"interrupted by {signals.requested} after {state.done_iterations} of "
            f"{iterations} iterations (checkpoint written)"
        )


def report_end(records: Records, signals: Signals) -> None:
    """The closing log line; after a signal, the resume command and the signal's exit code."""
    s, state = records.summary(), records.state
    log.info(
        "%s: learner %s ms, collector %s ms, iter %s ms (medians of %d), overlap %s; %s",
        state.status,
        _r(s["learner_train_ms"]["median"]),
        _r(s["collector_cycle_ms"]["median"]),
        _r(s["iter_ms"]["median"]),
        s["num_samples"],
        _r(s["overlap_efficiency"], 3),
        records.run_dir / SUMMARY_NAME,
    )
    if signals.requested:
        cmd = resume_command(records.info.command, records.run_dir)
        log.warning("%s; continue with: %s", state.reason, cmd)
        raise SystemExit(128 + int(getattr(signal, signals.requested)))


def record_failure(records: Records, err: BaseException) -> None:
    """The status of a run that `err` ended, written to its summary (never masking `err`)."""
    state = records.state
    if isinstance(err, SystemExit) and state.status == "interrupted":
        return  # report_end already wrote everything
    if isinstance(err, StartInterrupted):
        _stopped_before_the_loop(records, err)
        state.status, state.reason = "interrupted", str(err)
    elif isinstance(err, KeyboardInterrupt):
        state.status = "interrupted"
        state.reason = (
            f"KeyboardInterrupt ({err or 'SIGINT'}) during iteration {state.done_iterations}; "
            "no checkpoint (state was mid-iteration)"
        )
    else:
        state.status = "failed"
        state.reason = f"{type(err).__name__}: {err}"
    try:
        # The last finished iteration's row, without the learner values a sync would read.
        records.record_deferred(None, None)
        records.write_summary()
    except Exception as write_err:  # noqa: BLE001 - never mask the original error
        log.error("could not write the partial summary: %s", write_err)
        log.debug("the partial summary's write failed", exc_info=write_err)


def release_quietly(release: Callable[[], None], what: str) -> None:
    """Release a run's CUDA graphs at its end; a failed device must not hide the run's error."""
    try:
        release()
    except Exception as err:  # noqa: BLE001
        log.warning("could not release %s: %s", what, err)


def close_env(env: VecEnv) -> None:
    try:
        env.close()
    except Exception:  # noqa: BLE001
        log.exception("env.close() failed")


def _r(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
