"""A config written by an older version (a checkpoint's, a summary's), read as this version's.

Checkpoints and summaries store the composed config as plain data; evaluate, export, convert and
resume read it back (`upgrade_stored_config` first, then config.to_config). What changed since:

- a key that became another option reads as that option (MOVED: run.tensorboard -> logger);
- a removed key is dropped where its stored value is what this version always does, and refused
  in one line (ConfigError naming it) where it asks for something this version cannot do
  (REMOVED: a derived label, a fixed frequency, a merged quantity);
- a backend's config drops the keys of the other backend that it once carried unread (the CPU
  keys of backend=mjwarp, the empty `warp` of backend=mujoco).
"""

from __future__ import annotations

from typing import Any

from flashsac_bench.config.backend import BACKENDS, BackendConfig
from flashsac_bench.config.errors import ConfigError

# Keys that became other options: a command that still names one is told where it went, and a
# stored config with one reads as that option.
MOVED = {"run.tensorboard": "the logger group: logger=tensorboard, logger=wandb or logger=none"}

ANY = object()  # any stored value reads as this version
# Keys that were removed: (the one stored value this version still honours, or ANY; why).
REMOVED: dict[str, tuple[Any, str]] = {
    "update.name": (ANY, "the label is derived from update.updates_per_step"),
    "update.target_frequency": (1, "the target network follows every critic update"),
    "path.fallback_to_compile": (
        ANY,
        "a run whose CUDA graph capture fails goes on with the compiled steps",
    ),
    "learner.target_entropy": (None, "the target entropy follows learner.temp_target_sigma"),
    "run.capture_device_steps": (ANY, "act and store are captured on CUDA, the same math"),
    "run.background_checkpoints": (ANY, "periodic checkpoints are written in the background"),
    "run.skip_first": (ANY, "the summary's statistics cover the last run.summary_last rows"),
}


def upgrade_stored_config(composed: dict[str, Any]) -> dict[str, Any]:
    """`composed` (a plain composed config, changed in place) in this version's keys; a removed
    key holding a value this version cannot honour raises ConfigError naming it."""
    run = composed.get("run")
    if isinstance(run, dict) and "tensorboard" in run:
        logged = run.pop("tensorboard")
        composed.setdefault("logger", {"name": "tensorboard" if logged else "none"})
    for key, (honoured, why) in REMOVED.items():
        group, leaf = key.split(".")
        node = composed.get(group)
        if not isinstance(node, dict) or leaf not in node:
            continue
        value = node.pop(leaf)
        if honoured is not ANY and value != honoured:
            raise ConfigError(
                f"the stored config holds {key}={value!r}, an option this version removed ({why}"
                f"; it runs only {key}={honoured!r}): use the version that wrote it"
            )
    backend = composed.get("backend")
    if isinstance(backend, dict) and backend.get("name", BACKENDS[0]) in BACKENDS:
        name = backend.get("name", BACKENDS[0])
        for key in list(backend):
            if BackendConfig.owning(f"backend.{key}") not in (None, name):
                del backend[key]
    return composed


def removed_key_hint(key: str) -> str | None:
    """Where a key a command still names went (MOVED), or why it is gone (REMOVED)."""
    if key in MOVED:
        return f"now {MOVED[key]}"
    if key in REMOVED:
        return f"removed: {REMOVED[key][1]}"
    return None
