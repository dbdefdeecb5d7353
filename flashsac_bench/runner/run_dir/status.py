"""Status and summary: how a run ends (complete, interrupted, failed), the line that says where
it goes on from, and summary.json, written here only (runner.records makes its content)."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

from flashsac_bench.runner.faults import StartInterrupted
from flashsac_bench.runner.liveness import last_checkpoint
from flashsac_bench.runner.records import Records
from flashsac_bench.runner.resume_commands import restart_command, resume_command
from flashsac_bench.runner.signals import Signals
from flashsac_bench.runner.summary import SUMMARY_NAME, write_json

log = logging.getLogger("flashsac_bench.runner")


def write_summary(records: Records) -> None:
    """summary.json as the records stand (atomically: a reader never sees a torn file)."""
    write_json(records.run_dir / SUMMARY_NAME, records.summary(), "summary")


def signal_handling(records: Records) -> Signals:
    """The run's signal handling (runner.signals); when the main thread is held in native code
    and cannot hear a signal, the watchdog writes the summary and the line its handler's
    exception would have."""
    signals: Signals

    def on_stuck(signame: str, where: str) -> str:
        if signals.in_loop:  # a second signal, unheard: what KeyboardInterrupt does
            done = records.state.done_iterations
            record_failure(records, KeyboardInterrupt(signame))
            hint = continue_hint(records)
            return f"aborted by a second {signame} during iteration {done}; {hint}"
        err = StartInterrupted(signame, int(getattr(signal, signame)), where)
        record_failure(records, err)
        return f"{err}; {err.hint}"

    signals = Signals(on_stuck)
    return signals


def settle(records: Records, signals: Signals) -> None:
    """The status of a loop that ended without an error (its checkpoint follows)."""
    state, iterations = records.state, records.cfg.run.iterations
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
            f"KeyboardInterrupt ({err or 'SIGINT'}) during iteration "
            f"{state.done_iterations}; no checkpoint (state was mid-iteration)"
        )
    else:
        state.status = "failed"
        state.reason = f"{type(err).__name__}: {err}"
    try:
        # The last finished iteration's row, without the learner values a sync would read.
        records.build_row(None, None)
        write_summary(records)
    except Exception as write_err:  # noqa: BLE001 - never mask the original error
        log.error("could not write the partial summary: %s", write_err)
        log.debug("the partial summary's write failed", exc_info=write_err)


def continue_hint(records: Records) -> str:
    """Where a run that ended goes on from: its last checkpoint, else the checkpoint it resumed
    from, else the start."""
    command, path = records.info.command, records.run_dir
    ckpt = last_checkpoint(path) if path.is_dir() else None
    if ckpt is not None:
        return f"last checkpoint {ckpt}; continue with: {resume_command(command, path)}"
    source = records.state.resumed_from
    if source is not None:
        cmd = resume_command(command, path, Path(source))
        return f"last checkpoint {source}; continue with: {cmd}"
    cmd = restart_command(command, path)
    return f"no checkpoint was written; start it again with: {cmd}"


def _stopped_before_the_loop(records: Records, err: StartInterrupted) -> None:
    """Complete the message of a run stopped before its first iteration (what was kept) and set
    its hint (the command that starts it again, or continues the run it resumed)."""
    command, source, path = records.info.command, records.state.resumed_from, records.run_dir
    if source is None:
        kept = "before the first checkpoint: nothing was saved"
        err.hint = f"start it again with: {restart_command(command, path)}"
    else:
        kept = f"before its first iteration: {source} is unchanged"
        own = Path(source).parent.parent == path  # run.resume=auto continues from it
        cmd = restart_command(command, path) if own else resume_command(command, path, Path(source))
        err.hint = f"continue with: {cmd}"
    err.args = (f"{err}, {kept}",)


def _r(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
