"""Can a folder a command will create be written? Asked before the command creates anything."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from flashsac_bench.runner.writes import DISK_FULL_ERRNOS

# Below this a run dir cannot even hold its summary and logs.
MIN_FREE_BYTES = 1 << 20


def probe_writable(target: Path, min_free: int = MIN_FREE_BYTES) -> str | None:
    """Can `target` (a run or sweep dir, maybe not created yet) be written? Creates nothing
    but a temp file in its nearest existing folder, removed at once. A symlink on the way that
    leads nowhere (dangling, or a loop) and a file system with no space left are named.
    min_free: the bytes free below which the target counts as full (a run dir's default)."""
    import tempfile

    existing = target
    while not existing.exists():
        if existing.is_symlink():  # exists() follows links: one that leads nowhere
            return f"cannot create the run dir {target}: {_broken_link(existing)}"
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        return f"cannot create the run dir {target}: {existing} is not a directory"
    try:
        fd, tmp = tempfile.mkstemp(prefix=".flashsac_bench_probe.", dir=existing)
    except OSError as err:
        if err.errno in DISK_FULL_ERRNOS:
            return f"no space left on device: cannot create the run dir {target} in {existing}"
        return f"cannot create the run dir {target}: {existing} is not writable ({err.strerror})"
    os.close(fd)
    os.unlink(tmp)
    free = _free_bytes(existing)
    if free is not None and free < min_free:
        return (
            f"no space left on device: {existing} has {free} bytes free, and the run dir "
            f"{target} needs room for its summary, logs and checkpoints"
        )
    return None


def _free_bytes(folder: Path) -> int | None:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def _broken_link(link: Path) -> str:
    try:
        link.resolve(strict=True)
    except RuntimeError:  # a loop (Python < 3.13)
        return f"{link} is a symlink loop"
    except OSError as err:
        if err.errno == errno.ELOOP:
            return f"{link} is a symlink loop"
        return f"{link} is a dangling symlink (to {os.readlink(link)}, which does not exist)"
    return f"{link} is a symlink that cannot be followed"
