"""Reading torch.save files without running code, and knowing that they are intact.

Every torch file this project reads (a runner checkpoint for resume, evaluate, export and
convert; a unilab-rl checkpoint for convert) goes through `safe_load`:

- it must be a torch.save zip archive (a cut-short or foreign file is named as such);
- every record of the archive must match the CRC-32 that torch.save wrote beside it, so a
  flipped byte in a tensor, the pickle or an index is found before anything is used (the check
  reads the whole file once; a file already verified by this process, unchanged, is not read
  again: the preflight and the run share one check);
- it is unpickled with `torch.load(weights_only=True)`: tensors and plain values only. A file
  that holds pickled objects is refused with one line naming them, and nothing of it runs.

What a checkpoint holds besides tensors is stored as plain values: `to_plain` turns numpy
arrays (an env's state) into byte tensors with their dtype and shape, `from_plain` restores
them bit for bit, and anything else that is no plain value is refused when the file is written.
"""

from __future__ import annotations

import pickle
import threading
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from flashsac_bench.config.errors import ConfigError

ZIP_MAGIC = b"PK\x03\x04"
_CHUNK = 1 << 24
# The markers of an encoded numpy array and of encoded bytes (to_plain / from_plain).
NDARRAY_KEY = "__ndarray__"
BYTES_KEY = "__bytes__"
PLAIN_SCALARS = (bool, int, float, str, type(None))

_verified: set[tuple[int, int, int, int]] = set()
_verified_lock = threading.Lock()


class UnreadableFileError(ConfigError):
    """A torch file that cannot be used: missing, cut short, corrupt, foreign or unsafe."""

    label = "unreadable file"


def check_container(path: Path, what: str, error: type[Exception]) -> None:
    """torch.save writes a zip archive: tell a missing, empty, cut-short or foreign file apart,
    in words, instead of torch's "failed finding central directory" / "invalid load key"."""
    if not path.exists():
        raise error(f"{what} {path} does not exist")
    if path.is_dir():
        raise error(f"{path} is a directory, not a {what} file")
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as err:
        raise error(f"cannot read {what} {path}: {err.strerror}") from None
    if not head:
        raise error(f"{what} {path} is empty (0 bytes)")
    if head != ZIP_MAGIC:
        raise error(f"{path} is not a {what} (not a torch.save file)")
    if not zipfile.is_zipfile(path):
        size = path.stat().st_size
        raise error(
            f"{what} {path} is truncated ({size} bytes, its end is missing: the write was cut "
            "short)"
        )


def file_identity(path: Path) -> tuple[int, int, int, int]:
    """What changes when a file is written again: (device, inode, size, modification time)."""
    st = path.stat()
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def verify_archive(path: Path, what: str, error: type[Exception]) -> None:
    """Every record's bytes against its CRC-32 (error naming the first record that differs)."""
    key = file_identity(path)
    with _verified_lock:
        if key in _verified:
            return
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                with archive.open(info) as record:
                    while record.read(_CHUNK):
                        pass
    except zipfile.BadZipFile as err:
        raise error(
            f"{what} {path} is corrupt: {_first_line(err)} (its bytes changed after it was written)"
        ) from None
    except (OSError, EOFError, ValueError, NotImplementedError) as err:
        raise error(f"{what} {path} is corrupt ({_described(err)})") from None
    with _verified_lock:
        _verified.add(key)


def safe_load(
    path: Path,
    *,
    what: str = "checkpoint",
    error: type[Exception] = UnreadableFileError,
    mmap: bool = False,
    legacy_note: str | None = None,
) -> Any:
    """The file's contents, loaded weights-only after its container and CRCs are checked.

    legacy_note: what to say when the only objects in the file are numpy's (the format of an
    earlier version of this project's checkpoints)."""
    path = Path(path)
    check_container(path, what, error)
    verify_archive(path, what, error)
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError:
        pass  # objects that are not plain values: named below, from the pickle's opcodes
    except (RuntimeError, zipfile.BadZipFile, EOFError, ValueError, OSError) as err:
        raise error(f"{what} {path} is corrupt ({_described(err)})") from None
    unsafe = _unsafe_globals(path)
    if unsafe and legacy_note and all(name.startswith("numpy.") for name in unsafe):
        raise error(f"{path}: {legacy_note}")
    named = ", ".join(unsafe[:4]) + (", ..." if len(unsafe) > 4 else "") if unsafe else "?"
    raise error(
        f"{path} refused: it holds pickled Python objects ({named}) that loading would run as "
        f"code; a {what} is read as tensors and plain values only (torch.load weights_only)"
    )


def _unsafe_globals(path: Path) -> list[str]:
    """The globals the file's pickle would import (read from its opcodes, nothing runs)."""
    try:
        return sorted(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    except Exception:  # noqa: BLE001 - a pickle too broken to list: named "?"
        return []


# ---------------------------------------------------------------------------- plain values
def to_plain(value: Any, where: str = "checkpoint") -> Any:
    """`value` as tensors and plain values: numpy arrays and scalars become byte tensors with
    their dtype and shape (`from_plain` restores them exactly). TypeError names an entry that
    is none of these (such an entry could only be read back by unpickling an object)."""
    if isinstance(value, torch.Tensor) or type(value) in PLAIN_SCALARS:
        return value
    if isinstance(value, bytes | bytearray):
        if not value:  # torch.frombuffer refuses an empty buffer
            return {BYTES_KEY: torch.zeros(0, dtype=torch.uint8)}
        return {BYTES_KEY: torch.frombuffer(bytearray(value), dtype=torch.uint8)}
    if isinstance(value, np.ndarray | np.generic):
        arr = np.asarray(value)
        if arr.dtype.hasobject:
            raise TypeError(f"{where} is a numpy array of Python objects: not storable")
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        return {
            NDARRAY_KEY: arr.dtype.str,
            "shape": list(arr.shape),
            "scalar": isinstance(value, np.generic),
            "data": torch.from_numpy(raw.copy()),
        }
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if type(key) not in (str, int):
                raise TypeError(f"{where} has a key {key!r} of type {type(key).__name__}")
            out[key] = to_plain(item, f"{where}.{key}")
        return out
    if isinstance(value, list | tuple):
        items = [to_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    raise TypeError(
        f"{where} is a {type(value).__module__}.{type(value).__qualname__}: a checkpoint holds "
        "tensors, numpy arrays and plain values (numbers, strings, lists, dicts) only"
    )


class MalformedValueError(ValueError):
    """An encoded value (`to_plain`) that no `to_plain` wrote: its record is named."""


def from_plain(value: Any, where: str = "") -> Any:
    """The inverse of `to_plain`. MalformedValueError names an encoded array or bytes whose
    record does not describe a plain numpy array (an object dtype, a shape its bytes do not
    fill, data that is no byte tensor): a crafted file, refused instead of decoded."""
    if isinstance(value, dict):
        if BYTES_KEY in value:
            return _bytes(value, where)
        if NDARRAY_KEY in value:
            return _ndarray(value, where)
        return {
            key: from_plain(item, f"{where}.{key}" if where else str(key))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [from_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, tuple):
        return tuple(from_plain(item, f"{where}[{i}]") for i, item in enumerate(value))
    return value


def _byte_tensor(data: Any, where: str) -> torch.Tensor:
    if not (isinstance(data, torch.Tensor) and data.dtype == torch.uint8 and data.dim() == 1):
        raise MalformedValueError(f"{where or 'value'}: its data is not a 1-d byte tensor")
    return data


def _bytes(value: dict[str, Any], where: str) -> bytes:
    return _byte_tensor(value[BYTES_KEY], where).numpy().tobytes()


def _ndarray(value: dict[str, Any], where: str) -> Any:
    name = where or "array"
    try:
        dtype = np.dtype(value[NDARRAY_KEY])
    except (TypeError, ValueError):
        raise MalformedValueError(f"{name}: {value[NDARRAY_KEY]!r} is not a numpy dtype") from None
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise MalformedValueError(f"{name}: dtype {dtype} is not one of plain numbers")
    shape = value.get("shape")
    if not (
        isinstance(shape, list)
        and all(type(n) is int and 0 <= n <= 1 << 40 for n in shape)
        and len(shape) <= 32
    ):
        raise MalformedValueError(f"{name}: shape {shape!r} is not a list of sizes")
    data = _byte_tensor(value.get("data"), name)
    need = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if data.numel() != need:
        raise MalformedValueError(
            f"{name}: {data.numel()} bytes do not fill shape {tuple(shape)} of {dtype} ({need} "
            "bytes)"
        )
    scalar = value.get("scalar")
    if type(scalar) is not bool or (scalar and shape):
        raise MalformedValueError(f"{name}: 'scalar' is {scalar!r} for shape {tuple(shape)}")
    arr = np.frombuffer(data.numpy().tobytes(), dtype=dtype).copy().reshape(shape)
    return arr[()] if scalar else arr


# ---------------------------------------------------------------------------- finite values
def float_tensors(tree: Any, prefix: str = "") -> Iterator[tuple[str, torch.Tensor]]:
    """(dotted name, tensor) of every floating-point tensor in nested dicts / lists."""
    if isinstance(tree, torch.Tensor):
        if tree.is_floating_point():
            yield prefix, tree
    elif isinstance(tree, Mapping):
        for key, item in tree.items():
            yield from float_tensors(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(tree, list | tuple):
        for i, item in enumerate(tree):
            yield from float_tensors(item, f"{prefix}[{i}]")


def non_finite(tree: Any, prefix: str = "") -> list[str]:
    """'name (k of n values NaN / inf)' for every floating-point tensor in `tree` that holds a
    value that is not finite."""
    found = []
    for name, t in float_tensors(tree, prefix):
        bad = ~torch.isfinite(t.detach())
        count = int(bad.sum())
        if count:
            nans = int(torch.isnan(t.detach()).sum())
            kinds = " / ".join(k for k, n in (("NaN", nans), ("inf", count - nans)) if n)
            found.append(f"{name} ({count} of {t.numel()} values {kinds})")
    return found


def _described(err: BaseException) -> str:
    return f"{type(err).__name__}: {_first_line(err)}"


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return (text[0] if text else type(err).__name__)[:160]
