"""Env shards: contiguous env ranges stepped in-process (thread pool) or by worker processes.

A *shard* owns envs [lo, hi): it steps their physics and computes everything per env
(observations, rewards, terminations, resets, randomization), reading its inputs from and
writing its outputs into row views of one set of (N, ...) arrays. Whoever owns the shards
(`ShardedArrays` + an executor) only reads and writes those arrays and signals commands, so a
vector env built on shards has no per-env Python in its own process.

Two executors run the same shard code:
- `InlineShards`: one shard of all N envs in this process (its physics on a thread pool);
- `ProcessShards`: K worker processes (spawned), shard k in worker k, the arrays in ONE
  shared-memory block that the parent and every worker map. The parent sends a command down a
  pipe to every worker and waits for every reply: a step costs two small messages per worker.

Faults (`EnvWorkerError`, naming the worker and its env range): a worker that raises sends a
one-line error and exits; one that dies is seen at once (its pipe closes); one that sends no
reply within `timeout_s` is declared hung. `close()` ends every worker (terminate, then kill)
and unlinks the shared memory, also after any of these. Workers also end on their own when the
parent dies (the pipe closes; on Linux the kernel also sends them SIGKILL), and they ignore
SIGINT and SIGTERM, so a Ctrl-C or a SIGTERM to the whole process group (timeout, Docker,
systemd, SLURM, Kubernetes) stops only the parent, which checkpoints and then stops them in
order (a worker that does not answer "close" gets SIGKILL). If the parent is
killed, multiprocessing's resource tracker unlinks the block once the workers are gone. The
shard interface, the arrays' layout and the worker's side are in `envs.g1.cpu.shard_worker`.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing as mp
import multiprocessing.connection as mpc
import multiprocessing.util
import os
import secrets
import signal
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from flashsac_bench.envs.g1.cpu.shard_worker import (
    ArraySpec,
    Shard,
    ShardFactory,
    SharedBlock,
    rows,
    worker_main,
)

SHM_PREFIX = "flashsac_"
DEFAULT_STEP_TIMEOUT_S = 10.0  # below the runner's collector timeout, so this error wins
START_TIMEOUT_S = 180.0  # spawn + imports + model build, on a loaded machine
STATE_TIMEOUT_S = 120.0


# Every ProcessShards not closed yet. At interpreter exit they are closed before
# multiprocessing's own exit handler runs (atexit runs handlers last-registered first, and
# multiprocessing.util registered its handler when imported above): that handler SIGTERMs
# daemonic children and joins them without a timeout, and a worker ignores SIGTERM.
_OPEN: weakref.WeakSet[ProcessShards] = weakref.WeakSet()


def _close_open_shards() -> None:
    for shards in list(_OPEN):
        with contextlib.suppress(Exception):
            shards.close()


atexit.register(_close_open_shards)


class EnvWorkerError(RuntimeError):
    """A worker process failed, died or hung; the message names it and its env range."""


# Called with a shard's env range [lo, hi) once its reply says those rows are written.
RowsReady = Callable[[int, int], None]


def split_ranges(num_envs: int, parts: int) -> list[tuple[int, int]]:
    """`parts` contiguous ranges covering [0, num_envs), sizes differing by at most one."""
    if not 1 <= parts <= num_envs:
        raise ValueError(f"cannot split {num_envs} envs into {parts} shards")
    base, extra = divmod(num_envs, parts)
    bounds = [0]
    for k in range(parts):
        bounds.append(bounds[-1] + base + (k < extra))
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def straggler_ms(done_times: list[float | None]) -> float | None:
    """From the median worker's finish to the last one's, in ms: how much sooner the step
    would end if every worker had the same work (None without two timed workers)."""
    times = sorted(t for t in done_times if t is not None)
    if len(times) < 2:
        return None
    return (times[-1] - float(np.median(times))) * 1e3


class InlineShards:
    """One shard of all envs, in this process (its physics may use a thread pool)."""

    kind = "threads"

    def __init__(self, factory: ShardFactory, spec: ArraySpec, num_envs: int) -> None:
        self.num_envs = num_envs
        self.ranges = [(0, num_envs)]
        self.done_times: list[float | None] = []  # no worker processes to time (see ProcessShards)
        self._buffer = np.zeros(spec.nbytes(num_envs), dtype=np.uint8)
        self.arrays = spec.views(self._buffer, num_envs)
        self.shard: Shard | None = factory(0, num_envs, rows(self.arrays, 0, num_envs))

    @property
    def workers(self) -> int:
        return 0

    def call(self, method: str, *args: Any) -> list[Any]:
        assert self.shard is not None, "shards are closed"
        return [getattr(self.shard, method)(*args)]

    def call_each(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]:
        assert self.shard is not None, "shards are closed"
        (only,) = args
        return [getattr(self.shard, method)(*only)]

    def post(self, method: str, *args: Any) -> None:
        self.call(method, *args)  # nothing runs beside this process: done now

    def settle(self, on_reply: RowsReady | None = None) -> None:
        """Nothing to wait for: `post` ran the command. `on_reply` (see ProcessShards.settle)
        is called once, for every env."""
        if on_reply is not None:
            on_reply(0, self.num_envs)

    def close(self) -> None:
        if self.shard is not None:
            self.shard.close()
            self.shard = None


@dataclass
class _Worker:
    index: int
    lo: int
    hi: int
    process: Any  # multiprocessing.Process (spawn context)
    conn: mpc.Connection

    pid: int = 0

    def __post_init__(self) -> None:
        self.pid = int(self.process.pid)

    @property
    def name(self) -> str:
        return f"env worker {self.index} (envs {self.lo}-{self.hi - 1}, pid {self.pid})"


class ProcessShards:
    """K worker processes, worker k owning the k-th contiguous env range."""

    kind = "processes"

    def __init__(
        self,
        factory: ShardFactory,
        spec: ArraySpec,
        num_envs: int,
        workers: int,
        timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
        start_timeout_s: float = START_TIMEOUT_S,
        wait_for_start: bool = True,
    ) -> None:
        """wait_for_start=False returns once the workers are spawned: they import and build
        their shards while the caller does other work (the runner builds and compiles the
        learner meanwhile); the next command waits for them, and a worker that failed to start
        fails that command with the same one-line error."""
        self.num_envs = num_envs
        self.ranges = split_ranges(num_envs, workers)
        self.timeout_s = timeout_s
        self._workers: list[_Worker] = []
        self._closed = False
        # Commands sent whose replies are still unread, oldest first, with their timeouts (the
        # start's counts from the spawn; a posted command's from when its replies are awaited).
        # Every worker answers in order, so they are read in order before the next command.
        self._unread: list[tuple[str, float, float | None]] = []
        # time.perf_counter() in each worker when it finished the last command read (env
        # order; None for the start): the tick's stragglers, seen without the parent's delays.
        self.done_times: list[float | None] = []
        self._name = name = f"{SHM_PREFIX}{os.getpid()}_{secrets.token_hex(4)}"
        self._pids: list[int] = []
        self._shm: SharedBlock | None = SharedBlock(
            name=name, create=True, size=spec.nbytes(num_envs)
        )
        try:
            self.arrays = spec.views(self._shm.buf, num_envs)
            for a in self.arrays.values():
                a[...] = 0
            ctx = mp.get_context("spawn")
            # The kernel's parent-death signal fires when the creating THREAD ends.
            main_thread = threading.current_thread() is threading.main_thread()
            for k, (lo, hi) in enumerate(self.ranges):
                parent_end, child_end = ctx.Pipe(duplex=True)
                proc = ctx.Process(
                    target=worker_main,
                    args=(
                        child_end,
                        name,
                        spec,
                        num_envs,
                        lo,
                        hi,
                        factory,
                        os.getpid(),
                        main_thread,
                    ),
                    name=f"flashsac-env-{k}",
                    daemon=True,
                )
                proc.start()
                child_end.close()
                self._workers.append(_Worker(k, lo, hi, proc, parent_end))
                assert proc.pid is not None  # started
                self._pids.append(proc.pid)
            _OPEN.add(self)
            self._unread.append(("start", start_timeout_s, time.monotonic() + start_timeout_s))
            if wait_for_start:
                self.settle()
        except BaseException:
            self.close()
            raise

    @property
    def workers(self) -> int:
        return len(self._workers)

    @property
    def pids(self) -> list[int]:
        """The worker processes' pids (also after close: for checks that they are gone)."""
        return list(self._pids)

    @property
    def shm_name(self) -> str:
        """The shared-memory block's name (also after close, when it is unlinked)."""
        return self._name

    # -- commands ---------------------------------------------------------------------------

    def call(self, method: str, *args: Any) -> list[Any]:
        """`method(*args)` on every shard, in parallel; the results in env order."""
        return self.call_each(method, [args] * len(self._workers))

    def call_each(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]:
        self.settle()
        self._send(method, args)
        return self._gather(self._workers, method, self._timeout(method))

    def post(self, method: str, *args: Any) -> None:
        """`method(*args)` on every shard without waiting: its replies (results dropped, errors
        raised) are read before the next command, or by `settle`."""
        if self._closed:
            raise EnvWorkerError("the env workers are closed")
        self._send(method, [args] * len(self._workers))
        self._unread.append((method, self._timeout(method), None))

    def settle(self, on_reply: RowsReady | None = None) -> None:
        """Wait for every reply still unread (the workers' start, posted commands).
        `on_reply(lo, hi)` is called for each worker's reply to the last posted command as it
        arrives (its env rows are written then) while the other workers may still run."""
        if self._closed:
            raise EnvWorkerError("the env workers are closed")
        while self._unread:
            what, timeout_s, deadline = self._unread.pop(0)
            last = not self._unread
            self._gather(self._workers, what, timeout_s, deadline, on_reply if last else None)

    def _timeout(self, method: str) -> float:
        return self.timeout_s if method == "step" else max(self.timeout_s, STATE_TIMEOUT_S)

    def _send(self, method: str, args: Sequence[tuple[Any, ...]]) -> None:
        for w, a in zip(self._workers, args, strict=True):
            try:
                w.conn.send((method, a))
            except (BrokenPipeError, ConnectionResetError, EOFError):
                # A reply still unread (a start error, say) tells why the worker is gone.
                self.settle()
                self._fail(w, f"{w.name} is gone ({self._exit_text(w)}) before {method!r}")

    def _gather(
        self,
        workers: list[_Worker],
        what: str,
        timeout_s: float,
        deadline: float | None = None,
        on_reply: RowsReady | None = None,
    ) -> list[Any]:
        results: dict[int, Any] = {}
        finished: dict[int, float | None] = {}
        # A failing on_reply must not leave replies unread (the next command would read them as
        # its own): the rest are gathered, then its error is raised.
        reply_error: BaseException | None = None
        waiting = {w.conn: w for w in workers}
        if deadline is None:
            deadline = time.monotonic() + timeout_s
        while waiting:
            left = deadline - time.monotonic()
            ready = mpc.wait(list(waiting), timeout=max(left, 0.0)) if left > 0 else []
            if not ready:
                w = next(iter(waiting.values()))
                self._fail(
                    w,
                    f"{w.name} sent no reply to {what!r} within {timeout_s:.0f} s (hung?)",
                )
            for conn in ready:
                assert isinstance(conn, mpc.Connection)  # wait() returns what it was given
                w = waiting.pop(conn)
                try:
                    status, value, *done = conn.recv()  # ok replies to commands: + done time
                except (EOFError, OSError):
                    self._fail(w, f"{w.name} died during {what!r} ({self._exit_text(w)})")
                if status == "error":
                    verb = "failed to start" if what == "start" else f"failed in {what!r}"
                    self._fail(w, f"{w.name} {verb}: {value}")
                results[w.index] = value
                finished[w.index] = done[0] if done else None
                if on_reply is not None and reply_error is None:
                    try:
                        on_reply(w.lo, w.hi)
                    except BaseException as err:  # noqa: BLE001 - raised once all are read
                        reply_error = err
        self.done_times = [finished[w.index] for w in workers]
        if reply_error is not None:
            raise reply_error
        return [results[w.index] for w in workers]

    def _exit_text(self, w: _Worker) -> str:
        w.process.join(timeout=1.0)
        code = w.process.exitcode
        if code is None:
            return "still running"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-code).name}"
        return f"exit code {code}"

    def _fail(self, w: _Worker, message: str) -> None:
        # The shards are out of step with each other now: nothing can continue.
        self.close()
        raise EnvWorkerError(message)

    # -- teardown ---------------------------------------------------------------------------

    def close(self) -> None:
        """End every worker and free the shared memory (idempotent; safe after any fault)."""
        if self._closed:
            return
        self._closed = True
        _OPEN.discard(self)
        for w in self._workers:
            with contextlib.suppress(OSError, ValueError, EOFError):
                if w.process.is_alive():
                    w.conn.send(("close", ()))
        deadline = time.monotonic() + 2.0
        for w in self._workers:
            w.process.join(timeout=max(deadline - time.monotonic(), 0.0))
        for w in self._workers:
            # Workers ignore SIGTERM (shard_worker.WORKER_IGNORED_SIGNALS): SIGKILL at once.
            if w.process.is_alive():
                w.process.kill()
                w.process.join(timeout=1.0)
            with contextlib.suppress(OSError):
                w.conn.close()
            with contextlib.suppress(ValueError):
                w.process.close()
        if self._shm is not None:
            shm, self._shm = self._shm, None
            with contextlib.suppress(FileNotFoundError):
                shm.unlink()
            # Callers may still hold views of the block: then the mapping lives until they go.
            self.arrays = {}
            shm.close()

    def __del__(self) -> None:  # a forgotten close must not leave processes behind
        with contextlib.suppress(Exception):
            self.close()
