"""Checkpoints: everything needed to continue a run as if it had never stopped.

Contents: learner state (networks, target, Adam moments, schedule steps, reward normalizer,
counter RNG, exploration noise), replay contents + cursor, env state, the collector's current
observations / dones, episode statistics, the rows so far, the model the envs ran (`model`:
envs.g1.model.model_record) and the iteration to continue at.

A checkpoint is read without running code and only when it is intact (runner.torch_files):
tensors and plain values only (numpy arrays are stored as byte tensors), every archive record
checked against its CRC-32. Its values then go through the rules a run's own values go
through (`check_payload`): the iteration in range, the rows in order, the stored config plain
data (no interpolation: it is never resolved), the stored model's files inside their folder,
and every tensor it restores (learner, replay, staging, env state) of the shape, dtype and
range a run of its config holds (runner.checkpoint_tensors), named when not. Every loader
(resume, evaluate, export, convert) reads through `load_checkpoint`, so all of them refuse the
same files. The policy it holds is tried on a probe batch before it is used
(runner.checkpoint_probe).

A learner-only checkpoint (`kind: learner_only`, written by `python -m flashsac_bench.convert`
from a unilab-rl checkpoint, which has no replay or env state) holds the learner state and the
config but `replay`, `env` and `staging` are None; a run resumed from it refills its replay
first (runner.run_dir.RunDir.restore).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

import torch

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.run import MAX_ITERATIONS
from flashsac_bench.config.values import require_no_interpolation
from flashsac_bench.runner.checkpoint_tensors import check_restored
from flashsac_bench.runner.torch_files import (
    MalformedValueError,
    file_identity,
    from_plain,
    non_finite,
    safe_load,
    to_plain,
)
from flashsac_bench.runner.writes import atomic_write, atomic_write_text, open_tmp

# 2: loadable weights-only (numpy arrays stored as byte tensors), the model carried along.
CHECKPOINT_FORMAT = 2
CHECKPOINT_DIR = "checkpoints"
LATEST_NAME = "latest.txt"
# Periodic checkpoints beyond this many are pruned (oldest first); the ring makes them large.
KEEP_LAST = 3
# What every checkpoint holds besides "format" (a file without them is not one of ours).
REQUIRED_KEYS = ("iteration", "learner", "replay", "env", "staging", "rows_all")
# The "kind" of a checkpoint that holds a learner but no replay / env state (converted from
# unilab-rl, `flashsac_bench.convert`): its replay, env and staging entries are None.
LEARNER_ONLY = "learner_only"
# A network's input and output sizes past this are no task of this project (and would size
# the learner a checkpoint is loaded into).
MAX_DIM = 1 << 16


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
    payload = {"format": CHECKPOINT_FORMAT, **to_plain(payload)}
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


# How messages name what they could not read.
WHAT = "flashsac_bench checkpoint"
# What the refusal of a checkpoint of format 1 says (its numpy arrays were pickled objects).
LEGACY_NOTE = (
    "written by an earlier version of flashsac_bench (checkpoint format 1, whose env state was "
    f"pickled numpy objects); this version reads format {CHECKPOINT_FORMAT} only, which loads "
    "without running code: continue it with the version that wrote it, or start a new run"
)
# Learner tensors that are not parameters or optimizer state (the last cycle's metric sums).
NOT_STATE = ("metrics",)


def load_checkpoint(path: Path, *, mmap: bool = False) -> dict[str, Any]:
    """Load a checkpoint; anything that is not one of ours, or not intact, raises
    CheckpointError naming it (runner.torch_files: weights-only, CRC-checked).

    mmap=True maps the tensors instead of reading them (cheap checks of a large file)."""
    path = Path(path)
    payload = safe_load(path, what=WHAT, error=CheckpointError, mmap=mmap, legacy_note=LEGACY_NOTE)
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
    try:
        payload = from_plain(payload)
    except MalformedValueError as err:
        raise CheckpointError(f"{path}: {err}") from None
    check_finite_learner(path, payload)
    check_payload(path, payload)
    return payload


def check_finite_learner(path: Path, payload: dict[str, Any]) -> None:
    """Refuse a learner state that holds NaN / inf (its policy cannot act, its run cannot
    continue), naming the tensor."""
    learner = payload.get("learner")
    tensors = learner.get("tensors") if isinstance(learner, dict) else None
    if not isinstance(tensors, dict):
        raise CheckpointError(f"{path} is incomplete: no learner tensors")
    bad = non_finite({k: v for k, v in tensors.items() if k not in NOT_STATE}, "learner")
    if bad:
        raise CheckpointError(
            f"{path}: non-finite values in {'; '.join(bad[:3])}"
            f"{f' and {len(bad) - 3} more' if len(bad) > 3 else ''}: this learner cannot act "
            "or continue"
        )


# A model's files are named relative to the MJCF's folder.
_FILE_NAME = "stored model file"
# The files (by torch_files.file_identity) whose restored tensors this process has checked.
_tensors_checked: set[tuple[int, ...]] = set()


def check_payload(path: Path, payload: dict[str, Any]) -> None:
    """The values of a checkpoint, checked as the command line's are (CheckpointError naming the
    first that is out of its range): what a run continues from must be a run's."""
    iteration = payload["iteration"]
    if type(iteration) is not int or not 0 <= iteration <= MAX_ITERATIONS:
        raise CheckpointError(
            f"{path}: iteration={iteration!r} must be a whole number in [0, {MAX_ITERATIONS}]"
        )
    _check_rows(path, payload.get("rows_all"), iteration)
    for key in ("config", "training_config"):
        value = payload.get(key)
        if value is not None and not isinstance(value, dict):
            raise CheckpointError(f"{path}: its {key} is a {type(value).__name__}, not a mapping")
    try:
        require_no_interpolation(payload.get("config") or {}, "config")
    except ConfigError as err:
        raise CheckpointError(f"{path}: {err}") from None
    _check_model(path, payload.get("model"))
    logger = payload.get("logger")
    if logger is not None and not (
        isinstance(logger, dict) and all(isinstance(v, str | None) for v in logger.values())
    ):
        raise CheckpointError(f"{path}: its logger state is not a mapping of names")
    _check_dims(path, payload["learner"])
    identity = file_identity(path)
    if identity not in _tensors_checked:  # the preflight and the run share one pass over it
        check_restored(path, payload, CheckpointError)
        _tensors_checked.add(identity)


def _check_rows(path: Path, rows: Any, iteration: int) -> None:
    """One row per iteration, in order, the last one the checkpoint's iteration - 1."""
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise CheckpointError(f"{path}: rows_all is not a list of rows")
    numbers = [r.get("iteration") for r in rows]
    ordered = all(type(k) is int and 0 <= k < iteration for k in numbers) and all(
        a < b for a, b in zip(numbers, numbers[1:], strict=False)
    )
    if not ordered or (numbers and numbers[-1] != iteration - 1):
        shown = numbers if len(numbers) <= 6 else [*numbers[:3], "...", *numbers[-2:]]
        raise CheckpointError(
            f"{path}: its rows' iterations {shown} do not end at iteration {iteration} in order"
        )


def _check_model(path: Path, record: Any) -> None:
    """The model record (envs.g1.model.model_record): its file names stay inside the MJCF's
    folder (a name such as ../x would be written elsewhere when the model is used)."""
    if record is None:
        return
    if not isinstance(record, dict) or not isinstance(record.get("sha256"), str):
        raise CheckpointError(f"{path}: its stored model is not a model record")
    files = record.get("files")
    if files is None:
        return
    if not isinstance(files, dict) or record.get("main") not in files:
        raise CheckpointError(f"{path}: its stored model names no MJCF among its files")
    for name, data in files.items():
        parts = Path(str(name)).parts
        if not name or Path(str(name)).is_absolute() or ".." in parts or "\\" in str(name):
            raise CheckpointError(
                f"{path}: {_FILE_NAME} {name!r} lies outside its folder (a model's files are "
                "named relative to its MJCF's folder)"
            )
        if not isinstance(data, bytes):
            raise CheckpointError(f"{path}: {_FILE_NAME} {name!r} holds no bytes")


def _check_dims(path: Path, learner: Any) -> None:
    dims = learner.get("dims")
    if not (
        isinstance(dims, list | tuple)
        and len(dims) == 3
        and all(type(d) is int and 1 <= d <= MAX_DIM for d in dims)
    ):
        raise CheckpointError(
            f"{path}: learner dims {dims!r} must be 3 sizes (obs, critic obs, action) in "
            f"[1, {MAX_DIM}]"
        )


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
