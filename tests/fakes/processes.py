"""Checks that what a test started is gone: its worker processes (by pid) and its shared-memory
segments (by name). They look only at what the test names, never at everything on the machine:
other suites may run beside this one."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SHM_DIR = Path("/dev/shm")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids: list[int], shm: str, timeout: float = 15.0) -> None:
    """Wait until none of `pids` runs and the segment `shm` is unlinked; AssertionError else."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids) and not (SHM_DIR / shm).exists():
            return
        time.sleep(0.1)
    left = [p for p in pids if alive(p)]
    raise AssertionError(f"left behind: processes {left}, shm exists: {(SHM_DIR / shm).exists()}")


@contextlib.contextmanager
def created_segments(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the shared-memory segments that envs.g1.cpu.shards creates inside the block."""
    from flashsac_bench.envs.g1.cpu import shards as shards

    names: list[str] = []
    block = shards.SharedBlock

    class Recording(block):  # type: ignore[misc, valid-type]
        def __init__(self, name: str, create: bool = False, size: int = 0) -> None:
            if create:
                names.append(name)
            super().__init__(name=name, create=create, size=size)

    with monkeypatch.context() as m:
        m.setattr(shards, "SharedBlock", Recording)
        yield names
