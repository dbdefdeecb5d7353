"""Checkpoints: everything needed to continue a run as if it had never stopped.

Contents: learner state (networks, target, Adam moments, schedule steps, reward normalizer,
counter RNG, exploration noise), replay contents + cursor, env state, the collector's current
observations / dones, episode statistics, the rows so far, and the iteration to continue at.
Files are torch pickles (env state may hold numpy arrays); load only checkpoints you wrote.

A learner-only checkpoint (`kind: learner_only`, written by `python -m flashsac_bench.convert`
from a unilab-rl checkpoint, which has no replay or env state) holds the learner state and the
config but `replay`, `env` and `staging` are None; a run resumed from it refills its replay
first (runner.loop.Runner._restore).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch

CHECKPOINT_FORMAT = 1
CHECKPOINT_DIR = "checkpoints"
# Periodic checkpoints beyond this many are pruned (oldest first); the ring makes them large.
KEEP_LAST = 3
LEARNER_ONLY = "learner_only"


def checkpoint_path(run_dir: Path, iteration: int) -> Path:
    return run_dir / CHECKPOINT_DIR / f"iter_{iteration:07d}.pt"


def save_checkpoint(path: Path, payload: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        torch.save({"format": CHECKPOINT_FORMAT, **payload}, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    latest = path.parent / "latest.txt"
    latest.write_text(path.name + "\n")
    _prune(path.parent)
    return path


def _prune(folder: Path) -> None:
    files = sorted(folder.glob("iter_*.pt"))
    for old in files[:-KEEP_LAST]:
        old.unlink(missing_ok=True)


def resolve_resume_path(path: str | os.PathLike[str]) -> Path:
    """A checkpoint file, or a run dir / checkpoints dir (then its latest checkpoint)."""
    p = Path(path).expanduser()
    if p.is_dir():
        folder = p / CHECKPOINT_DIR if (p / CHECKPOINT_DIR).is_dir() else p
        latest = folder / "latest.txt"
        if latest.is_file():
            p = folder / latest.read_text().strip()
        else:
            files = sorted(folder.glob("iter_*.pt"))
            if not files:
                raise FileNotFoundError(f"no checkpoint (iter_*.pt) under {p}")
            p = files[-1]
    if not p.is_file():
        raise FileNotFoundError(f"checkpoint {p} does not exist")
    return p


def is_learner_only(payload: dict[str, Any]) -> bool:
    return payload.get("kind") == LEARNER_ONLY


def load_checkpoint(path: Path) -> dict[str, Any]:
    payload = torch.load(path, map_location="cpu", weights_only=False)
    if payload.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: unsupported checkpoint format {payload.get('format')!r}")
    return payload
