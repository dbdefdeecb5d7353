"""SIGINT and SIGTERM, honoured within about two seconds in every phase of a run.

Before the loop (the setup: env build, worker start, learner build, compile and capture,
restoring a checkpoint) there is nothing to save yet: the first signal stops the run at once
(StartInterrupted: the setup is undone, the summary says `interrupted` and why, and the one
line names the command that starts the run again, `run.resume=auto`). In the loop the first
signal ends the run after the current iteration with a checkpoint, and a second one at once
(KeyboardInterrupt), as before; once the loop is over (the final checkpoint) a first signal
changes nothing but is answered, a second one aborts.

Python runs a signal handler only when the main thread executes bytecode: a main thread held in
native code (a MuJoCo or Warp build, a compile, a large allocation) would hear Ctrl-C only when
that call returns, minutes later. So a watchdog thread reads every signal from the interpreter's
wakeup fd the moment it arrives. When the main thread's handler has not run GRACE_S after a
signal, the watchdog acts for it: in the setup it ends the process itself (the summary written
as interrupted, the same one line, exit status 128 + the signal; a run dir's lock dies with the
process, and the next start removes any temp file a write in flight left), in the loop it says
that the run stops after the busy step. A handler that ran is not enough either: code it
interrupts may catch its exception (a callback whose caller swallows what it raises, a compile
that cleans up for seconds before re-raising), so a run still going GRACE_S after its handler
raised to end it at once (the first signal in the setup, a second one in the loop) is ended
the same way; a further signal meanwhile is left to that end, rather than raised into the
writing of the run's summary. It also prints a progress line every PROGRESS_EVERY_S of a long
setup phase, so a cold start of minutes is not silent.

`phase(name)` names the setup phase now running (runner.loop calls it); `Signals.loop_started`
switches to the loop's behaviour (runner.stopping calls it when the loop asks its first
question).
"""

from __future__ import annotations

import logging
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from flashsac_bench.runner.faults import StartInterrupted

log = logging.getLogger("flashsac_bench.runner")

HANDLED = (signal.SIGINT, signal.SIGTERM)
# Seconds the main thread has to run its handler before the watchdog acts for it.
GRACE_S = 1.0
# Seconds between two progress lines of one setup phase.
PROGRESS_EVERY_S = 10.0
_TICK_S = 0.1

_current: Signals | None = None


def phase(name: str) -> None:
    """The setup phase that runs now ("env build", "compile and capture", ...): what an
    interrupt and the progress lines name."""
    if _current is not None:
        _current.enter_phase(name)


class Signals:
    """Installed for the whole of a run (main thread only; elsewhere it does nothing).

    `on_stuck(signame, where)`: what the watchdog does before it ends a process whose main
    thread did not hear a signal (write the summary as the handler's exception would have);
    it returns the one line to print."""

    def __init__(self, on_stuck: Callable[[str, str], str] | None = None) -> None:
        self.requested: str | None = None  # the first signal, before or in the loop
        self.late: str | None = None  # the first signal once the run is finishing
        self.in_loop = False
        self.finishing = False
        self.phase_name = "setup"
        self.phase_t0 = time.perf_counter()
        self._on_stuck = on_stuck
        self._old: dict[int, Any] = {}
        self._old_wakeup: int | None = None
        self._pipe: tuple[int, int] | None = None
        self._handled = 0
        # (signum, when) of the exception raised to end the run at once
        self._raised: tuple[int, float] | None = None
        self._old_unraisable = sys.unraisablehook
        self._done = threading.Event()
        self._watchdog: threading.Thread | None = None

    # ------------------------------------------------------------------ install
    def __enter__(self) -> Signals:
        global _current
        if threading.current_thread() is not threading.main_thread():
            return self
        r, w = os.pipe()
        os.set_blocking(w, False)
        self._pipe = (r, w)
        self._old_wakeup = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        for sig in HANDLED:
            self._old[sig] = signal.signal(sig, self._handle)
        self._watchdog = threading.Thread(target=self._watch, name="signal-watchdog", daemon=True)
        self._watchdog.start()
        self._old_unraisable = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        _current = self
        return self

    def _unraisable(self, unraisable: Any) -> None:
        """The handler's exception raised inside a callback whose caller cannot raise it (a
        finalizer, a callback from native code) is not reported as "Exception ignored": the
        watchdog ends the run it could not stop; anything else is reported as before."""
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and self._raised is not None:
            return
        self._old_unraisable(unraisable)

    def __exit__(self, *exc: object) -> None:
        global _current
        if self._pipe is None:
            return
        _current = None
        sys.unraisablehook = self._old_unraisable
        for sig, old in self._old.items():
            signal.signal(sig, old)
        signal.set_wakeup_fd(self._old_wakeup if self._old_wakeup is not None else -1)
        self._done.set()
        os.write(self._pipe[1], b"\0")  # wakes the watchdog: it ends
        if self._watchdog is not None:
            self._watchdog.join(timeout=5.0)
        for fd in self._pipe:
            os.close(fd)
        self._pipe = None

    # ------------------------------------------------------------------ phases
    def enter_phase(self, name: str) -> None:
        self.phase_name, self.phase_t0 = name, time.perf_counter()

    def loop_started(self) -> None:
        self.in_loop = True

    def finishing_started(self) -> None:
        """The loop is over and its status decided: a first signal now only says that the run
        is writing its final checkpoint (a second one aborts it)."""
        self.finishing = True

    def _where(self) -> str:
        return f"the {self.phase_name} ({time.perf_counter() - self.phase_t0:.1f} s in)"

    # ------------------------------------------------------------------ the handler
    def _handle(self, signum: int, frame: object) -> None:
        self._handled += 1
        name = signal.Signals(signum).name
        if self._raised is not None:
            # The run already ends at once: raising again would only cut its summary's write
            # short (the watchdog ends the process should that end stall).
            return
        if self.requested is not None or self.late is not None:
            self._raised = (signum, time.perf_counter())
            raise KeyboardInterrupt(name)
        if self.finishing:
            self.late = name
            log.warning("%s: writing the final checkpoint (send again to abort at once)", name)
            return
        self.requested = name
        if not self.in_loop:
            self._raised = (signum, time.perf_counter())
            raise StartInterrupted(name, signum, self._where())
        log.warning("%s: stopping after this iteration (send again to abort at once)", name)

    # ------------------------------------------------------------------ the watchdog
    def _watch(self) -> None:
        assert self._pipe is not None
        heard: list[tuple[int, float]] = []  # signals the main thread has not handled yet
        seen = 0
        last_line = time.perf_counter()
        acknowledged = 0
        while not self._done.is_set():
            ready, _, _ = select.select([self._pipe[0]], [], [], _TICK_S)
            now = time.perf_counter()
            if ready:
                for byte in os.read(self._pipe[0], 64):
                    if byte in (int(s) for s in HANDLED):
                        seen += 1
                        heard.append((byte, now))
            del heard[: max(0, len(heard) - (seen - self._handled))]  # the handled ones
            if heard and now - heard[0][1] >= GRACE_S and not self._done.is_set():
                signum = heard[0][0]
                again = self.requested is not None or self.late is not None or len(heard) > 1
                if not self.in_loop or again:
                    self._end_process(signum)  # in the setup, or a second signal: at once
                if acknowledged < seen:
                    acknowledged = seen
                    log.warning(
                        "%s: heard; the main thread is busy in native code, the run stops when "
                        "this step returns (send again to abort at once)",
                        signal.Signals(signum).name,
                    )
            raised = self._raised
            if raised and now - raised[1] >= GRACE_S and not self._done.is_set():
                self._end_process(raised[0])  # the run did not end: its exception was held
            if not self.in_loop and now - max(last_line, self.phase_t0) >= PROGRESS_EVERY_S:
                last_line = now
                log.info("still in %s", self._where())

    def _end_process(self, signum: int) -> None:
        """The main thread cannot hear the signal: end the process for it, as its handler
        would have (the run's summary, the one line, 128 + the signal)."""
        name = signal.Signals(signum).name
        line = f"interrupted by {name} during {self._where()}"
        if self._on_stuck is not None:
            try:
                line = self._on_stuck(name, self._where())
            except Exception as err:  # noqa: BLE001 - the exit must happen
                line = f"{line} (its summary could not be written: {err})"
        try:
            sys.stderr.write(f"flashsac_bench: {line}\n")
            sys.stderr.flush()
        finally:
            os._exit(128 + signum)
