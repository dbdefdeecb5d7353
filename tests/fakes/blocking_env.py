"""A fake env whose build blocks like a long cold start, for interrupts during the setup.

FAKE_BLOCK_MARKER: a file written when the build starts blocking (the test sends its signal
then). FAKE_BLOCK_MODE: "python" blocks in time.sleep (the main thread runs its signal handler
at once); "native" blocks with SIGINT and SIGTERM masked in the main thread, as a call into
native code that does not return for minutes would hold it (only another thread hears the
signal); "swallow" blocks in short sleeps inside a handler that drops whatever they raise, as a
callback whose caller swallows the signal handler's exception would (the build goes on).
FAKE_BLOCK_S: how long it blocks (default 120 s), after which it builds a FakeEnv.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.fakes.fake_env import FakeEnv


def make_env(task, backend, num_envs: int, seed: int) -> FakeEnv:
    seconds = float(os.environ.get("FAKE_BLOCK_S", "120"))
    marker = os.environ.get("FAKE_BLOCK_MARKER")
    native = os.environ.get("FAKE_BLOCK_MODE", "python") == "native"
    signals = {signal.SIGINT, signal.SIGTERM}
    if native:
        signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        if marker:
            Path(marker).write_text("blocking\n")
        if os.environ.get("FAKE_BLOCK_MODE") == "swallow":
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                try:
                    time.sleep(0.05)
                except BaseException:  # noqa: BLE001 - what the fake is for
                    pass
        else:
            time.sleep(seconds)
    finally:
        if native:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
    return FakeEnv(num_envs, seed)
