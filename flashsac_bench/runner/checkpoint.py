"""Checkpoints: everything needed to continue a run as if it had never stopped.

Contents: learner state (networks, target, Adam moments, schedule steps, reward normalizer,
counter RNG, exploration noise), replay contents + cursor, env state, the collector's current
observations / dones, episode statistics, the rows so far, and the iteration to continue at.
Files are torch pickles (env state may hold numpy arrays); load only checkpoints you wrote.

A learner-only checkpoint (`kind: learner_only`, written by `python -m flashsac_bench.convert`
from a unilab-rl checkpoint, which has no replay or env state) holds the learner state and the
config but `replay`, `env` and `staging` are None; a run resumed from it refills its replay
first (runner.lifecycle.restore).
"""

from __future__ import annotations

import os
import pickle
import zipfile
from pathlib import Path
from typing import IO, Any

import torch

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.runner.writes import atomic_write, atomic_write_text, open_tmp

CHECKPOINT_FORMAT = 1
CHECKPOINT_DIR = "checkpoints"
LATEST_NAME = "latest.txt"
# Periodic checkpoints beyond this many are pruned (oldest first); the ring makes them large.
KEEP_LAST = 3
# What every checkpoint holds besides "format" (a file without them is not one of ours).
REQUIRED_KEYS = ("iteration", "learner", "replay", "env", "staging", "rows_all")
# The "kind" of a checkpoint that holds a learner but no replay / env state (converted from
# unilab-rl, `flashsac_bench.convert`): its replay, env and staging entries are None.
LEARNER_ONLY = "learner_only"


class CheckpointError(ConfigError):
    """A file that is not a readable flashsac_bench checkpoint (missing, truncated, foreign)."""

    label = "unreadable checkpoint"


def checkpoint_path(run_dir: Path, iteration: int) -> Path:
    return run_dir / CHECKPOINT_DIR / f"iter_{iteration:07d}.pt"


def _open_tmp(folder: Path, name: str) -> tuple[IO[bytes], str]:
    """A new temp file beside the checkpoint (tests replace this to simulate a full disk)."""
    return open_tmp(folder, name)


def save_checkpoint(path: Path, payload: dict[str, Any]) -> Path:
    """Write atomically (temp file + rename), then point latest.txt at it (atomically too).

    torch.save writes through our file object, so a full disk surfaces as errno ENOSPC
    (DiskFullError naming the file) instead of torch's "unexpected pos" check."""
    payload = {"format": CHECKPOINT_FORMAT, **payload}
    # _open_tmp looked up per call: the tests' replacement takes effect.
    atomic_write(path, lambda f: torch.save(payload, f), "checkpoint", opener=_open_tmp)
    atomic_write_text(path.parent / LATEST_NAME, path.name + "\n", "checkpoint pointer")
    _prune(path.parent)
    return path


def list_checkpoints(folder: Path) -> list[Path]:
    """iter_*.pt in `folder`, oldest first (names are zero-padded iterations)."""
    return sorted(folder.glob("iter_*.pt"))


def _prune(folder: Path) -> None:
    for old in list_checkpoints(folder)[:-KEEP_LAST]:
        old.unlink(missing_ok=True)


def checkpoint_folder(path: str | os.PathLike[str]) -> Path:
    """The folder holding the iter_*.pt files of a run dir or checkpoints dir."""
    p = Path(path).expanduser()
    return p / CHECKPOINT_DIR if (p / CHECKPOINT_DIR).is_dir() else p


def resolve_resume_path(path: str | os.PathLike[str]) -> Path:
    """A checkpoint file, or a run dir / checkpoints dir (then its newest checkpoint).

    Only names the file; flashsac_bench.runner.resume.find_checkpoint also loads it and falls
    back to an older intact checkpoint when the newest is unreadable."""
    p = Path(path).expanduser()
    if p.is_dir():
        files = list_checkpoints(checkpoint_folder(p))
        if not files:
            raise CheckpointError(f"no checkpoint (checkpoints/iter_*.pt) under {p}")
        p = files[-1]
    if not p.is_file():
        raise CheckpointError(f"checkpoint {p} does not exist")
    return p


def is_learner_only(payload: dict[str, Any]) -> bool:
    return payload.get("kind") == LEARNER_ONLY


def _check_container(path: Path) -> None:
    """torch.save writes a zip archive: tell a cut-short file from a foreign one up front, in
    words, instead of torch's "failed finding central directory" / "invalid load key"."""
    if not path.exists():
        raise CheckpointError(f"checkpoint {path} does not exist")
    if path.is_dir():
        raise CheckpointError(f"{path} is a directory, not a checkpoint file")
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as err:
        raise CheckpointError(f"cannot read checkpoint {path}: {err.strerror}") from None
    if not head:
        raise CheckpointError(f"checkpoint {path} is empty (0 bytes)")
    if head != b"PK\x03\x04":
        raise CheckpointError(f"{path} is not a flashsac_bench checkpoint (not a torch.save file)")
    if not zipfile.is_zipfile(path):
        size = path.stat().st_size
        raise CheckpointError(
            f"checkpoint {path} is truncated ({size} bytes, its end is missing: the write was "
            "cut short)"
        )


def load_checkpoint(path: Path, *, mmap: bool = False) -> dict[str, Any]:
    """Load a checkpoint; anything that is not one of ours raises CheckpointError naming it.

    mmap=True maps the tensors instead of reading them (cheap checks of a large file)."""
    path = Path(path)
    _check_container(path)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=False, mmap=mmap)
    except (RuntimeError, zipfile.BadZipFile, EOFError) as err:
        raise CheckpointError(
            f"checkpoint {path} is corrupt ({type(err).__name__}: {_first_line(err)[:120]})"
        ) from None
    except (pickle.UnpicklingError, ValueError, TypeError, AttributeError, ImportError) as err:
        raise CheckpointError(
            f"{path} is not a flashsac_bench checkpoint ({type(err).__name__}: "
            f"{_first_line(err)[:120]})"
        ) from None
    if not isinstance(payload, dict) or "format" not in payload:
        raise CheckpointError(f"{path} is a torch file but not a flashsac_bench checkpoint")
    if payload["format"] != CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"{path}: checkpoint format {payload['format']!r}, this version reads "
            f"{CHECKPOINT_FORMAT}"
        )
    missing = [k for k in REQUIRED_KEYS if k not in payload]
    if missing:
        raise CheckpointError(f"{path} is incomplete: no {', '.join(missing)}")
    return payload


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
