"""Is a run that says `status: running` still running? Writer identity + a heartbeat.

A run killed with SIGKILL (or stopped by a full disk, where nothing more can be written) never
rewrites its summary.json, which keeps saying "running". So the runner records who writes the
run (`writer` in summary.json: host, pid, the pid's start time and pid namespace, so that a
reused pid or another container does not pass for the writer) and a background thread rewrites
`heartbeat.json` every HEARTBEAT_EVERY_S seconds. `run_state` (used by compare.py, the learning
parity analysis and resume) then calls such a run `stale`:

- same host and pid namespace: stale as soon as the writer's process is gone (pid absent, or
  now a different process);
- elsewhere (e.g. a SLURM node): stale once the newest heartbeat is older than STALE_AFTER_S.

Who may write a run dir is decided by `RunDirLock`, not by reading these files: an exclusive
flock on `<run dir>/.writer.lock`, taken before the run writes anything there and held until it
ends. Taking it is atomic (two runs started together: exactly one gets it) and the kernel drops
it when its process dies, however it dies, so a dead writer never blocks its resume.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from flashsac_bench.runner.checkpoint import checkpoint_folder, list_checkpoints

log = logging.getLogger("flashsac_bench.runner")

HEARTBEAT_NAME = "heartbeat.json"
LOCK_NAME = ".writer.lock"
PROBE_GRACE_S = 0.5
HEARTBEAT_EVERY_S = 10.0
# A remote writer counts as dead when its last heartbeat is older than this.
STALE_AFTER_S = 120.0
LIVE_STATUSES = ("starting", "running")


def _pid_start(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux /proc), else None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # Field 22; the command name (field 2) may hold spaces, so split after its ')'.
    return int(stat.rsplit(")", 1)[1].split()[19])


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def writer_identity() -> dict[str, Any]:
    pid = os.getpid()
    return {
        "host": socket.gethostname(),
        "pid": pid,
        "pid_start": _pid_start(pid),
        "pid_namespace": _pid_namespace(),
    }


def _process_alive(writer: dict[str, Any]) -> bool | None:
    """True / False when this machine can tell, None when it cannot (another host or pid
    namespace, or no /proc)."""
    me = writer_identity()
    pid = writer.get("pid")
    if (
        not isinstance(pid, int)
        or writer.get("host") != me["host"]
        or writer.get("pid_namespace") != me["pid_namespace"]
        or me["pid_namespace"] is None
    ):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    start = writer.get("pid_start")
    if start is not None and _pid_start(pid) != start:
        return False  # the pid was reused by another process
    return True


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
        from flashsac_bench.runner.summary import write_json

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


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def last_checkpoint(run_dir: Path) -> str | None:
    files = list_checkpoints(checkpoint_folder(run_dir))
    return str(files[-1]) if files else None


def run_state(run_dir: str | os.PathLike[str], summary: dict[str, Any] | None = None) -> dict:
    """{"status", "last_checkpoint", "detail"} of a run dir. status: the summary's (complete,
    interrupted, failed, running, starting), "stale" for a live status whose writer is dead,
    or "unknown" without a readable summary.json."""
    run_dir = Path(run_dir)
    if summary is None:
        summary = _read_json(run_dir / "summary.json")
    ckpt = last_checkpoint(run_dir)
    if summary is None:
        return {"status": "unknown", "last_checkpoint": ckpt, "detail": "no readable summary"}
    status = str(summary.get("status"))
    if status not in LIVE_STATUSES:
        return {"status": status, "last_checkpoint": ckpt, "detail": None}
    writer = summary.get("writer") or {}
    beats = [writer.get("heartbeat_unix")]
    hb = _read_json(run_dir / HEARTBEAT_NAME)
    if hb and hb.get("pid") == writer.get("pid") and hb.get("host") == writer.get("host"):
        beats.append(hb.get("unix"))
    last = max((b for b in beats if isinstance(b, int | float)), default=None)
    age = time.time() - last if last is not None else None
    alive = _process_alive(writer)
    who = f"pid {writer.get('pid')} on {writer.get('host')}"
    beat = f"last heartbeat {age:.0f} s ago" if age is not None else "no heartbeat recorded"
    if alive is False:
        detail = f"its writer ({who}) is gone; {beat}"
    elif alive is None and (age is None or age > STALE_AFTER_S):
        detail = f"{beat} (> {STALE_AFTER_S:.0f} s) from its writer ({who})"
    else:
        return {"status": status, "last_checkpoint": ckpt, "detail": f"{who}, {beat}"}
    return {"status": "stale", "last_checkpoint": ckpt, "detail": detail}


class RunDirBusyError(Exception):
    """Another live process holds the run dir's writer lock (the message names it)."""


class RunDirLock:
    """The exclusive writer lock of a run dir (module docstring). `acquire` raises RunDirBusyError
    naming the holder; `release` (or the process's end) frees it. The lock file stays: removing
    it would let a later run lock a new file while an older run still holds the old one."""

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
                    raise RunDirBusyError(self._busy_text()) from None
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

    def _busy_text(self) -> str:
        holder = _read_json(self.path) or {}
        who = f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}"
        return f"{self.path.parent} is being written by another live process ({who})"


def run_dir_writer(run_dir: Path) -> str | None:
    """Who holds the run dir's writer lock now (a description), or None. Creates nothing."""
    path = Path(run_dir) / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return RunDirLock(run_dir)._busy_text()
    finally:
        os.close(fd)
    return None
