"""Write failures that the user can act on, named as such.

torch.save to a *path* reports a full disk as "unexpected pos 704 vs 598" (its own writer
checks positions, not errno); written through a Python file object the real OSError (errno
ENOSPC) comes back, and `write_error` turns it into a DiskFullError that says so and where.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

DISK_FULL_ERRNOS = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
NOT_WRITABLE_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR}


class DiskFullError(OSError):
    """No space left (or quota exceeded) while writing a run's file."""


class NotWritableError(OSError):
    """A run's file or folder cannot be written (permissions, read-only file system, ...)."""


def free_mib(path: Path) -> float | None:
    for p in (path, *path.parents):
        if p.exists():
            try:
                return shutil.disk_usage(p).free / 2**20
            except OSError:
                return None
    return None


def write_error(err: BaseException, path: Path, what: str) -> BaseException:
    """The error to raise for a failed write of `what` (e.g. "checkpoint") to `path`."""
    code = getattr(err, "errno", None)
    if isinstance(err, DiskFullError | NotWritableError):
        return err
    if code in DISK_FULL_ERRNOS:
        free = free_mib(path)
        where = f"{free:.0f} MiB free there" if free is not None else "free space unknown"
        return DiskFullError(
            code, f"no space left on device: could not write the {what} {path} ({where})"
        )
    if code in NOT_WRITABLE_ERRNOS:
        return NotWritableError(code, f"cannot write the {what} {path}: {os.strerror(code or 0)}")
    return err
