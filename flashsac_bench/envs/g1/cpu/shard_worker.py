"""What `envs.g1.cpu.shards` and its worker processes share: the shard interface, the layout of the
arrays (`ArraySpec`) in the shared-memory block both sides map, and the worker's side.

A worker maps the parent's shared-memory block, builds its shard on its row views, answers
"ok" (or a one-line error), then serves commands from its pipe in order until "close", the
pipe's end or its parent's death; its first failure is reported in one line and ends it.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import multiprocessing.connection as mpc
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.shared_memory import SharedMemory
from typing import Any, Protocol

import numpy as np

_ALIGN = 64
# Signals a worker ignores (see worker_main): the parent ends it, by "close" or SIGKILL.
WORKER_IGNORED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Shard(Protocol):
    """What an executor calls on each shard. Methods other than these may be `call`ed too."""

    def reset(self) -> None: ...

    # step and set_state take a shard's own arguments (the G1's penalty scale, its seed on
    # restore): any signature.
    @property
    def step(self) -> Callable[..., None]: ...

    def get_state(self) -> dict[str, Any]: ...

    @property
    def set_state(self) -> Callable[..., None]: ...

    def close(self) -> None: ...


# (lo, hi, row views of every array) -> the shard of envs [lo, hi). Must be picklable (it is
# sent to the worker processes): a module-level class instance or function.
ShardFactory = Callable[[int, int, dict[str, np.ndarray]], Shard]


@dataclass(frozen=True)
class ArraySpec:
    """Named per-env arrays: name -> (shape of one env's row, dtype)."""

    fields: tuple[tuple[str, tuple[int, ...], str], ...]

    def _layout(
        self, num_envs: int
    ) -> tuple[list[tuple[str, tuple[int, ...], np.dtype, int]], int]:
        entries, offset = [], 0
        for name, row_shape, dtype in self.fields:
            dt = np.dtype(dtype)
            shape = (num_envs, *row_shape)
            entries.append((name, shape, dt, offset))
            size = int(np.prod(shape)) * dt.itemsize
            offset += -(-size // _ALIGN) * _ALIGN
        return entries, max(offset, _ALIGN)

    def nbytes(self, num_envs: int) -> int:
        return self._layout(num_envs)[1]

    def views(self, buffer: Any, num_envs: int) -> dict[str, np.ndarray]:
        # frombuffer holds a buffer export: the mapping cannot be closed under a live view
        # (np.ndarray(buffer=...) holds none, and a view would then dangle).
        entries, _ = self._layout(num_envs)
        return {
            name: np.frombuffer(buffer, dtype=dt, count=math.prod(shape), offset=offset).reshape(
                shape
            )
            for name, shape, dt, offset in entries
        }


class SharedBlock(SharedMemory):
    """A POSIX shared-memory block whose mapping lives as long as any numpy view of it.

    `close()` unmaps only when no view is left (else the views keep the mapping until they go);
    the name is what `unlink()` removes, and that is what must never be left behind.
    """

    def __init__(self, name: str, create: bool = False, size: int = 0) -> None:
        super().__init__(name=name, create=create, size=size)
        # The mapping holds its own reference to the memory: the descriptor is not needed.
        fd = getattr(self, "_fd", -1)
        if fd >= 0:
            os.close(fd)
            self._fd = -1

    def close(self) -> None:
        with contextlib.suppress(BufferError):
            super().close()

    def __del__(self) -> None:
        with contextlib.suppress(OSError, BufferError):
            self.close()


def rows(arrays: dict[str, np.ndarray], lo: int, hi: int) -> dict[str, np.ndarray]:
    return {name: arr[lo:hi] for name, arr in arrays.items()}


def one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".rstrip(": ")


def die_with_parent(main_thread: bool) -> None:
    if not main_thread or not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def worker_main(
    conn: mpc.Connection,
    shm_name: str,
    spec: ArraySpec,
    num_envs: int,
    lo: int,
    hi: int,
    factory: ShardFactory,
    parent_pid: int,
    main_thread: bool,
) -> None:
    # Ctrl-C, and the SIGTERM / SIGINT that timeout, Docker, systemd, SLURM and Kubernetes send
    # to the whole process group, reach the workers too: they ignore them, and the parent, which
    # decides when workers stop, checkpoints first and then closes them. They still end with
    # the parent (the pipe closes; on Linux the kernel also sends SIGKILL when it dies).
    for sig in WORKER_IGNORED_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    die_with_parent(main_thread)
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        return
    shm = SharedBlock(name=shm_name)
    shard: Shard | None = None
    try:
        arrays = rows(spec.views(shm.buf, num_envs), lo, hi)
        try:
            shard = factory(lo, hi, arrays)
        except BaseException as err:  # noqa: BLE001 - reported to the parent in one line
            conn.send(("error", one_line(err)))
            return
        del arrays
        conn.send(("ok", None))
        serve(conn, shard, parent_pid)
    finally:
        if shard is not None:
            with contextlib.suppress(Exception):
                shard.close()
        shard = None
        shm.close()
        # Nothing is left to flush (replies are sent); skip interpreter teardown, which would
        # otherwise run every remaining finalizer of this throwaway process.
        os._exit(0)


def serve(conn: mpc.Connection, shard: Shard, parent_pid: int) -> None:
    while True:
        if not conn.poll(1.0):
            if os.getppid() != parent_pid:
                return  # orphaned
            continue
        try:
            method, args = conn.recv()
        except (EOFError, OSError):
            return  # the parent closed the pipe or died
        if method == "close":
            return
        try:
            result = getattr(shard, method)(*args)
            done = time.perf_counter()  # CLOCK_MONOTONIC: comparable across processes
        except BaseException as err:  # noqa: BLE001 - reported to the parent, then exit
            detail = one_line(err)
            if os.environ.get("FLASHSAC_BENCH_DEBUG") or os.environ.get("HYDRA_FULL_ERROR"):
                detail += "\n" + traceback.format_exc()
            with contextlib.suppress(OSError):
                conn.send(("error", detail))
            return
        conn.send(("ok", result, done))
