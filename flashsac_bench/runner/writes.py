"""Write failures that the user can act on, named as such.

torch.save to a *path* reports a full disk as "unexpected pos 704 vs 598" (its own writer
checks positions, not errno); written through a Python file object the real OSError (errno
ENOSPC) comes back, and `write_error` turns it into a DiskFullError that says so and where.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

DISK_FULL_ERRNOS = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
NOT_WRITABLE_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR}


def chained_disk_full(err: BaseException) -> OSError | None:
    """A full disk behind another error (torch.save's zip writer turns ENOSPC part-way through a
    file into "unexpected pos ..."): the OSError it was raised from or while handling; None
    where there is none, or where `err` itself is the OSError (already named as it is)."""
    seen = {id(err)}
    cause = err.__cause__ or err.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and cause.errno in DISK_FULL_ERRNOS:
            return cause
        cause = cause.__cause__ or cause.__context__
    return None


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


def _umask() -> int:
    # Read without a race where the process can tell (Linux /proc); else set-and-restore.
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def open_tmp(folder: Path, name: str) -> tuple[IO[bytes], str]:
    """A new temp file beside the file `name` in `folder` (same file system: rename is atomic).

    mkstemp creates it 0600; the renamed file gets the mode any new file gets here (0644 under
    the usual umask 022), so a run's outputs are readable by whoever may read its folder."""
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
    except OSError:
        pass  # a file system without modes keeps its own
    return os.fdopen(fd, "wb"), tmp


def is_temp_of(name: str, path_name: str) -> bool:
    """Whether `name` is an open_tmp temp file of the file `path_name` (".<name>.XXXXXXXX")."""
    prefix = f".{path_name}."
    return name.startswith(prefix) and len(name) > len(prefix)


def atomic_write(
    path: Path,
    write: Callable[[IO[bytes]], object],
    what: str = "file",
    opener: Callable[[Path, str], tuple[IO[bytes], str]] = open_tmp,
) -> None:
    """`write(f)` into a temp file, fsync, rename over `path`: readers see the old or the new
    file, never a torn one. A full disk or an unwritable folder raises DiskFullError /
    NotWritableError naming `path`; the temp file never outlives a failure."""
    path = Path(path)
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        f, tmp = opener(path.parent, path.name)
        with f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        mapped = write_error(err, path, what)
        if mapped is err:
            raise
        raise mapped from err


def atomic_write_text(path: Path, text: str, what: str = "file") -> None:
    """atomic_write of a UTF-8 text."""
    atomic_write(path, lambda f: f.write(text.encode()), what)


def move_aside(paths: list[Path], parent: Path, prefix: str) -> Path:
    """Move `paths` into parent/<prefix><k>/ (k: the first free number from 1; nothing is
    deleted); the folder."""
    k = 1
    while (parent / f"{prefix}{k}").exists():
        k += 1
    dest = parent / f"{prefix}{k}"
    dest.mkdir()
    for path in paths:
        path.rename(dest / path.name)
    return dest
