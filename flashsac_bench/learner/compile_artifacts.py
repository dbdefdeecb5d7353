"""Saved compiled functions on disk: what names one (its key), and the file that holds it.

A saved compile is valid only for what it was traced from. Its key says what that is: the
function, the structure of everything it reads (the objects it closes over and its arguments:
types, constants, every tensor's dtype / shape / strides / device), its compile options, and
the environment that compiled it (torch, Python, the device, torch's compiler configs). The
key's hash names the file; the key itself is stored inside it again and must match exactly, so
a file copied or left over from other settings is never used. The file also records a hash of
every source file of the traced package's modules that Dynamo traced; a changed source is a
stale file.

The file: one magic line, one JSON line (the key, the sources, each variant's size and
SHA-256), then each variant's bytes (torch's own serialization). `read` raises `UnusableError`,
with the reason, for anything that does not check out; nothing is read past a failed check.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import platform
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch

MAGIC = b"flashsac-bench compiled function\n"
FORMAT = 1


class UnusableError(Exception):
    """A saved compile that must not be used (the message says why)."""


def artifact_dir() -> Path:
    """Beside Inductor's own cache (TORCHINDUCTOR_CACHE_DIR, else torch's default), so that
    'warm caches' means one folder: a warm start loads both, an emptied folder empties both."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return Path(cache_dir()) / "flashsac_bench_compiled"


def structure(obj: Any, depth: int = 0) -> Any:
    """What a compiled graph is built from, as JSON data: constants by value, tensors by
    dtype / shape / strides / device (their values are the graph's inputs), containers and
    objects field by field. A plain object's private attributes (a leading underscore) are
    its caches or derived from its public ones (the RNG's draw constants, a projector's row
    table), and are left out: a key must not depend on what ran before the first call."""
    if depth > 12:
        raise ValueError("structure: nested too deeply to describe")
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, torch.Tensor):
        return ["tensor", str(obj.dtype), list(obj.shape), list(obj.stride()), str(obj.device)]
    if isinstance(obj, (torch.dtype, torch.device)):
        return str(obj)
    if isinstance(obj, dict):
        return {str(k): structure(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [type(obj).__name__, [structure(v, depth + 1) for v in obj]]
    if callable(obj) and hasattr(obj, "__qualname__"):
        return ["callable", f"{getattr(obj, '__module__', '')}.{obj.__qualname__}"]
    if dataclasses.is_dataclass(obj):
        fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    elif hasattr(obj, "__dict__"):
        fields = {k: v for k, v in vars(obj).items() if not k.startswith("_")}
    else:
        return ["object", type(obj).__qualname__, repr(obj)]
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    return [kind, {k: structure(v, depth + 1) for k, v in sorted(fields.items())}]


def environment(devices: Iterable[str]) -> dict[str, Any]:
    """What compiled the function: torch, Python, the devices, torch's compiler configs."""
    env: dict[str, Any] = {
        "format": FORMAT,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "matmul_precision": torch.get_float32_matmul_precision(),
        "configs": _config_hashes(),
    }
    for device in sorted(set(devices)):
        if device.startswith("cuda"):
            index = torch.device(device).index
            env[device] = {
                "name": torch.cuda.get_device_name(index),
                "capability": list(torch.cuda.get_device_capability(index)),
                "cuda": torch.version.cuda,
            }
        elif device == "cpu":
            env["cpu"] = _cpu_isa()
    return env


def _config_hashes() -> dict[str, str]:
    """Hashes of Dynamo's, AOTAutograd's and Inductor's configs (what torch saves of them, less
    the keys it marks as not affecting compilation): an environment variable that changes
    compilation changes the key. Sets are sorted (torch's own config hash is not stable
    across processes: it hashes sets in their iteration order)."""
    from torch._dynamo import config as dynamo_config
    from torch._functorch import config as functorch_config
    from torch._inductor import config as inductor_config

    def stable(value: Any) -> Any:
        return sorted(map(repr, value)) if isinstance(value, (set, frozenset)) else repr(value)

    out = {}
    for name, cfg in (
        ("dynamo", dynamo_config),
        ("functorch", functorch_config),
        ("inductor", inductor_config),
    ):
        save: Callable[[], dict[str, Any]] | None = getattr(cfg, "save_config_portable", None)
        if save is None:
            out[name] = "unknown"
            continue
        ignored = set(getattr(cfg, "_compile_ignored_keys", ()))
        values = {k: v for k, v in save().items() if k not in ignored}
        text = json.dumps(values, sort_keys=True, default=stable)
        out[name] = hashlib.sha256(text.encode()).hexdigest()[:32]
    return out


def _cpu_isa() -> str:
    """The CPU's vector instruction set as ATen dispatches to it (Inductor's CPU kernels are
    compiled for the machine's; probing them as Inductor does costs a compile)."""
    return str(torch.backends.cpu.get_cpu_capability())


def key_name(key: dict[str, Any]) -> str:
    """The file name of the compile `key` names."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:40]
    function = str(key.get("function", "fn")).rsplit(".", 1)[-1]
    return f"{function}-{digest}.bin"


def source_hashes(modules: Iterable[str]) -> dict[str, str]:
    """SHA-256 of each module's source file ('missing' where it has none)."""
    out = {}
    for name in sorted(set(modules)):
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin is None or not os.path.isfile(origin):
            out[name] = "missing"
        else:
            out[name] = hashlib.sha256(Path(origin).read_bytes()).hexdigest()
    return out


def write(path: Path, key: dict[str, Any], sources: dict[str, str], blobs: list[bytes]) -> None:
    """Write the file atomically (a reader sees the old file or the new one, never a part)."""
    header = {
        "key": key,
        "sources": sources,
        "variants": [{"bytes": len(b), "sha256": hashlib.sha256(b).hexdigest()} for b in blobs],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC)
            f.write(json.dumps(header, sort_keys=True).encode() + b"\n")
            for blob in blobs:
                f.write(blob)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(path: Path, key: dict[str, Any]) -> list[bytes]:
    """The variants saved under `key`; `UnusableError` where the file was made for anything else,
    its traced sources changed since, or its bytes are not the ones written."""
    with open(path, "rb") as f:
        if f.readline() != MAGIC:
            raise UnusableError("not a saved compile of this format")
        try:
            header = json.loads(f.readline())
        except ValueError as err:
            raise UnusableError(f"unreadable header ({err})") from None
        rest = f.read()
    stored = header.get("key")
    if stored != key:
        raise UnusableError(f"made for other settings: {_differences(stored, key)}")
    sources = header.get("sources", {})
    changed = sorted(m for m, h in source_hashes(sources).items() if sources[m] != h)
    if changed:
        raise UnusableError(f"traced sources changed since: {', '.join(changed)}")
    blobs, offset = [], 0
    for i, variant in enumerate(header.get("variants", [])):
        blob = rest[offset : offset + variant["bytes"]]
        offset += variant["bytes"]
        if hashlib.sha256(blob).hexdigest() != variant["sha256"]:
            raise UnusableError(f"variant {i} is corrupt (its SHA-256 differs)")
        blobs.append(blob)
    if offset != len(rest) or not blobs:
        raise UnusableError("corrupt (its length differs from its header)")
    return blobs


def _differences(stored: Any, expected: dict[str, Any]) -> str:
    """Which parts of the key differ, by name (torch's version by value)."""
    if not isinstance(stored, dict):
        return "no key"
    names = sorted(k for k in stored.keys() | expected.keys() if stored.get(k) != expected.get(k))
    env_s, env_e = stored.get("environment", {}), expected.get("environment", {})
    if "environment" in names and isinstance(env_s, dict):
        names.remove("environment")
        names += [
            f"environment.{k}" if k != "torch" else f"torch {env_s.get(k)} (this is {env_e.get(k)})"
            for k in sorted(env_s.keys() | env_e.keys())
            if env_s.get(k) != env_e.get(k)
        ]
    return ", ".join(names)
