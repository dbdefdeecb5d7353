"""Runs that end by a fault the user can act on, said in one line (no torch imported here: the
CLI describes these before anything heavy is loaded).

A RunFaultError's message says what happened and why; `hint` (set by whoever knows it, e.g. the
CLI: the command that resumes from the last checkpoint) says what to do next. The CLI prints
both on one line and exits with status 1 (cli.errors).
"""

from __future__ import annotations


class RunFaultError(RuntimeError):
    """A run ended by a fault outside its code: the message is complete for the user."""

    label = "run stopped"
    hint: str | None = None


class NotLearningError(RunFaultError):
    """A whole log window in which the run learned nothing (runner.stopping): every update
    skipped, or every reward zeroed as a broken row."""

    label = "not learning"


class EnvLostError(RunFaultError):
    """An env worker process died, hung or failed: the envs cannot go on from where they were,
    but the run continues from its last checkpoint."""

    label = "env worker lost"


class StartInterrupted(KeyboardInterrupt):
    """SIGINT / SIGTERM before a run's first iteration (runner.signals): the run stops at once,
    its setup undone, nothing of it saved; the runner completes the message (what was kept) and
    sets `hint` (the command that starts it again). Exit status 128 + the signal, as for an
    interrupted loop."""

    def __init__(self, signame: str, signum: int, where: str) -> None:
        super().__init__(f"interrupted by {signame} during {where}")
        self.signame, self.signum, self.where = signame, signum, where
        self.hint: str | None = None

    @property
    def code(self) -> int:
        return 128 + self.signum
