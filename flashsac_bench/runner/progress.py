"""A live Rich status line on a terminal, plain log lines otherwise (run.progress)."""

from __future__ import annotations

import logging
import sys
from typing import Any

log = logging.getLogger("flashsac_bench.runner")


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def status_text(s: dict[str, Any]) -> str:
    phase = "" if s.get("learning") else " [warmup: random actions]"
    return (
        f"iter {s['iteration'] + 1}/{s['iterations']}  "
        f"{_fmt(s.get('env_steps_per_s'), ',.0f')} env-steps/s  "
        f"reward {_fmt(s.get('reward_mean'), '.3f')}  "
        f"return {_fmt(s.get('episode_return_mean'), '.1f')}  "
        f"learner {_fmt(s.get('learner_train_ms'))} ms  "
        f"collector {_fmt(s.get('collector_cycle_ms'))} ms  "
        f"iter {_fmt(s.get('iter_ms'))} ms{phase}"
    )


class Progress:
    def __init__(self, mode: str, log_every: int) -> None:
        if mode == "auto":
            mode = "rich" if sys.stdout.isatty() else "plain"
        self.mode = mode
        self.log_every = log_every
        self._live: Any = None

    def __enter__(self) -> Progress:
        if self.mode == "rich":
            from rich.console import Console
            from rich.live import Live
            from rich.text import Text

            self._text = Text
            # redirect_*=False: Hydra's log handlers hold the real streams anyway.
            self._live = Live(
                Text("starting..."),
                console=Console(force_terminal=True),
                refresh_per_second=4,
                transient=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.__enter__()
        return self

    def update(self, status: dict[str, Any]) -> None:
        """Called once per iteration with the latest (already finalized) values."""
        if self._live is not None:
            self._live.update(self._text(status_text(status)))
        elif (status["iteration"] + 1) % self.log_every == 0 or status.get("final"):
            log.info(status_text(status))

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None
