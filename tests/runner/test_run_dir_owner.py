"""A run dir has one writer in the code: every file a run creates, replaces, renames or removes
in its run dir is written from the run dir's owner (runner.run_dir), on the main thread or on
a thread the owner started (the checkpoint writer, the heartbeat). runner.records makes rows and
summary.json's content and hands them over; it writes nothing itself.

The file system's namespace calls (os.open creating or writing, os.replace, os.rename,
os.unlink, os.mkdir) are watched during tiny CPU runs: a fresh run with background checkpoints,
then a resume that continues it. Each call into the run dir must have a frame of the owner's
package on its stack."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import flashsac_bench.runner.run_dir as owner
from flashsac_bench.cli.train import train
from flashsac_bench.runner.checkpoint import checkpoint_path
from tests.fakes.fake_env import FakeEnv
from tests.fakes.runs import tiny_config

OWNER = Path(owner.__file__).resolve().parent
PROJECT = OWNER.parents[1]  # flashsac_bench/
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _watch(
    monkeypatch: pytest.MonkeyPatch, run_dir: Path
) -> tuple[list[str], list[tuple[str, str, list[str]]]]:
    """Wrap the namespace calls; the names written in `run_dir`, and the calls made there
    without the owner on the stack (what, where, the project frames that made it)."""
    seen: list[str] = []
    strays: list[tuple[str, str, list[str]]] = []
    root = run_dir.resolve()

    def check(what: str, path: Any) -> None:
        if not isinstance(path, str | bytes | os.PathLike):
            return  # a descriptor-relative call: not a path of the run dir
        target = Path(os.fsdecode(path)).resolve()
        if target != root and root not in target.parents:
            return
        seen.append(target.name)
        frames = [Path(f.filename).resolve() for f in traceback.extract_stack()]
        if not any(OWNER in f.parents for f in frames):
            project = [f"{f.relative_to(PROJECT)}" for f in frames if PROJECT in f.parents]
            strays.append((what, target.name, project))

    def wrap(name: str, paths: Callable[..., list[Any]]) -> None:
        real = getattr(os, name)

        def watched(*args: Any, **kwargs: Any) -> Any:
            for path in paths(*args, **kwargs):
                check(name, path)
            return real(*args, **kwargs)

        monkeypatch.setattr(os, name, watched)

    wrap("open", lambda path, flags, *a, **k: [path] if flags & WRITE_FLAGS else [])
    wrap("replace", lambda src, dst, *a, **k: [src, dst])
    wrap("rename", lambda src, dst, *a, **k: [src, dst])
    wrap("unlink", lambda path, *a, **k: [path])
    wrap("mkdir", lambda path, *a, **k: [path])
    return seen, strays


def test_every_write_into_a_run_dir_comes_from_its_owner(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    seen, strays = _watch(monkeypatch, run_dir)
    envs = lambda task, backend, n, seed: FakeEnv(n, seed)  # noqa: E731
    train(tiny_config(iterations=8, checkpoint_every=4), run_dir=run_dir, env_factory=envs)
    train(
        tiny_config(iterations=12, checkpoint_every=4, resume="auto"),
        run_dir=run_dir,
        env_factory=envs,
    )
    # The watch sees the run dir's files (else the test would pass on nothing).
    for name in ("run", ".writer.lock", "summary.json", "heartbeat.json", "latest.txt"):
        assert name in seen, (name, sorted(set(seen)))
    checkpoints = {checkpoint_path(run_dir, k).name for k in (4, 8, 12)}
    assert checkpoints <= set(seen), sorted(set(seen))
    assert not strays, strays
