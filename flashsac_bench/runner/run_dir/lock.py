"""Lock and liveness: the run dir's one live writer, and the signs that it is alive.

`take_lock` creates the run dir and takes its writer lock before anything is written in it
(RunDirInUseError naming the live writer), checks the resume plan again under it, removes what
a killed writer left half-written and sets an earlier attempt aside; `Heartbeat` rewrites
heartbeat.json while the run lives.

How the lock and the heartbeat are read (who writes a run dir, is it stale): runner.liveness.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from flashsac_bench.runner.checkpoint import CHECKPOINT_DIR
from flashsac_bench.runner.liveness import (
    HEARTBEAT_EVERY_S,
    HEARTBEAT_NAME,
    LOCK_NAME,
    PROBE_GRACE_S,
    lock_holder,
    writer_identity,
)
from flashsac_bench.runner.resume import (
    ResumePlan,
    RunDirInUseError,
    recheck_locked,
    set_aside_earlier_attempt,
)
from flashsac_bench.runner.summary import write_json
from flashsac_bench.runner.writes import write_error

log = logging.getLogger("flashsac_bench.runner")


def take_lock(path: Path, plan: ResumePlan) -> RunDirLock:
    """Create the run dir and take its writer lock (RunDirInUseError naming the live writer),
    check the plan again under it, remove what a killed writer left half-written, and set an
    earlier attempt aside; the lock, held until the caller releases it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise write_error(err, path, "run dir") from err
    try:
        lock = RunDirLock(path).acquire()
    except RunDirBusyError as err:
        raise RunDirInUseError(
            f"{err}; a second writer would mix its files with that run's: wait for it to end "
            "or stop it (its run dir is freed when it exits, however it exits)"
        ) from None
    try:
        recheck_locked(plan, path)
        for note in plan.notes:
            log.warning(note)
        for stale in remove_stale_temps(path):
            log.warning("removed %s, left half-written by a writer that was killed", stale)
        if aside := set_aside_earlier_attempt(plan, path):
            log.warning(
                "run.resume=auto: the earlier attempt stopped before its first checkpoint; "
                "its summary and TensorBoard files are now in %s",
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


class RunDirBusyError(Exception):
    """Another live process holds the run dir's writer lock (the message names it)."""


class RunDirLock:
    """The exclusive writer lock of a run dir (runner.liveness says why a lock). `acquire` raises
    RunDirBusyError naming the holder; `release` (or the process's end) frees it. The lock file
    stays: removing it would let a later run lock a new file while an older run still holds the
    old one."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> RunDirLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        # A probe (run_dir_writer) holds a shared lock for microseconds; a writer for its run.
        deadline = time.monotonic() + PROBE_GRACE_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise RunDirBusyError(lock_holder(self.path.parent)) from None
                time.sleep(0.02)
        identity = {**writer_identity(), "locked_unix": time.time()}
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(identity) + "\n").encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the flock

    def __enter__(self) -> RunDirLock:
        return self if self._fd is not None else self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class Heartbeat:
    """Rewrites run_dir/heartbeat.json every `every_s` seconds from a daemon thread (so that
    long compiles and slow iterations still beat), and once more when stopped, so that the file
    ends with the run (its last iteration, `ended`). Write errors are ignored: a full disk must
    not add a second failure, and a missing beat only makes the run look stale sooner."""

    def __init__(
        self, run_dir: Path, iteration: Any = None, every_s: float = HEARTBEAT_EVERY_S
    ) -> None:
        self.path = Path(run_dir) / HEARTBEAT_NAME
        self.every_s = every_s
        self._iteration = iteration  # zero-arg callable, read at each beat
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.identity = writer_identity()

    def beat(self, ended: bool = False) -> float:
        now = time.time()
        payload = {**self.identity, "unix": now, "every_s": self.every_s, "ended": ended}
        if self._iteration is not None:
            payload["iteration"] = self._iteration()
        try:
            write_json(self.path, payload, "heartbeat")
        except OSError:
            pass
        return now

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self.beat()

    def start(self) -> Heartbeat:
        self.beat()
        self._thread = threading.Thread(target=self._loop, name="heartbeat", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
            self.beat(ended=True)
