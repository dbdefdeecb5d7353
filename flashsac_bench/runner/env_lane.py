"""Where a device env's tick runs relative to the learner's update (runner.device_collector).

The tick (the env step and the packing of its rows) of iteration k and the update of iteration
k touch different data: the update reads the ring, which holds the ticks stored before k; the
tick reads the actions and the current observations and writes the staging slab, which the store
step puts into the ring after both. So the two may run at the same time and compute exactly what
they compute one after the other. A lane runs the tick:

  serial: on the caller's stream, before the update (the order of a run without overlap);
  stream: on CUDA, on a stream of its own that starts after the caller's stream has queued the
          actions (an event), while the update runs on the caller's stream; `join` makes the
          caller's stream wait for the tick (an event) before the store. (A priority for
          either stream changed nothing measurable: docs/results.md);
  thread: on a CPU device, on one worker thread while the main thread updates (Warp's CPU
          kernels and torch's ops release the GIL), so that the CPU runs exercise the same
          ordering as a GPU's streams.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import torch


class Lane:
    """Runs `fn` now, on the caller's stream (serial)."""

    mode = "serial"

    def run(self, fn: Callable[[], None]) -> None:
        fn()

    def join(self) -> None:
        """Order what the caller queues next after the tick (raise the tick's error)."""

    def close(self) -> None:
        """Wait for a tick still running (its error is dropped: the run already failed)."""


class StreamLane(Lane):
    mode = "stream"

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.stream = torch.cuda.Stream(device)
        self._ready = torch.cuda.Event()
        self._done = torch.cuda.Event()
        self._running = False

    def run(self, fn: Callable[[], None]) -> None:
        self._ready.record(torch.cuda.current_stream(self.device))
        self.stream.wait_event(self._ready)
        with torch.cuda.stream(self.stream):
            fn()
        self._done.record(self.stream)
        self._running = True

    def join(self) -> None:
        torch.cuda.current_stream(self.device).wait_event(self._done)
        self._running = False

    def close(self) -> None:
        if self._running:
            self._done.synchronize()
            self._running = False


class ThreadLane(Lane):
    mode = "thread"

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="env-tick")
        self._future: Future[None] | None = None

    def run(self, fn: Callable[[], None]) -> None:
        self._future = self._pool.submit(fn)

    def join(self) -> None:
        future, self._future = self._future, None
        if future is not None:
            future.result()

    def close(self) -> None:
        future, self._future = self._future, None
        if future is not None:
            future.exception()  # waits; the error was (or will not be) raised by join
        self._pool.shutdown(wait=True)


def make_lane(device: torch.device, overlap: bool) -> Lane:
    """The lane of a device env on `device`: serial unless `overlap`."""
    if not overlap:
        return Lane()
    if device.type == "cuda":
        return StreamLane(device)
    return ThreadLane()
