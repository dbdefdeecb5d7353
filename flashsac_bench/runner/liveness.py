"""Is a run that says `status: running` still running? Writer identity + a heartbeat.

A run killed with SIGKILL (or stopped by a full disk, where nothing more can be written) never
rewrites its summary.json, which keeps saying "running". So the runner records who writes the
run (`writer` in summary.json: host, pid, the pid's start time and pid namespace, so that a
reused pid or another container does not pass for the writer) and a background thread rewrites
`heartbeat.json` every HEARTBEAT_EVERY_S seconds (both written by runner.run_dir; this module
reads them). `run_state` (used by compare.py, the learning parity analysis and resume) then
calls such a run `stale`:

- same host and pid namespace: stale as soon as the writer's process is gone (pid absent, or
  now a different process);
- elsewhere (e.g. a SLURM node): stale once the newest heartbeat is older than STALE_AFTER_S.

Who may write a run dir is decided by its writer lock (runner.run_dir.lock.RunDirLock), not by
reading these files: an exclusive flock on `<run dir>/.writer.lock`, taken before the run writes
anything there and held until it ends. Taking it is atomic (two runs started together: exactly
one gets it) and the kernel drops it when its process dies, however it dies, so a dead writer
never blocks its resume.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from flashsac_bench.runner.checkpoint import checkpoint_folder, list_checkpoints

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


def lock_holder(run_dir: Path) -> str:
    """Who the run dir's writer lock file names as its holder, as a sentence."""
    holder = _read_json(Path(run_dir) / LOCK_NAME) or {}
    who = f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}"
    return f"{Path(run_dir)} is being written by another live process ({who})"


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
        return lock_holder(run_dir)
    finally:
        os.close(fd)
    return None
