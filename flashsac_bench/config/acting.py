"""A checkpoint's stored config, typed for acting (evaluate, export) and for checking what the
checkpoint holds (runner.checkpoint_tensors)."""

from __future__ import annotations

import copy
from typing import Any

from flashsac_bench.config.root import Config, to_config
from flashsac_bench.config.stored import upgrade_stored_config

# The matmul dtypes a trained policy can act in ('checkpoint': the training dtype).
ACTING_DTYPES = ("float32", "bfloat16")


def acting_config(payload: dict[str, Any], device: str = "cpu", dtype: str = "float32") -> Config:
    """A checkpoint's composed config, typed for acting: eager path (a cudagraph run's config is
    invalid on a CPU), the given device / matmul dtype ('checkpoint': the training dtype). What
    the checkpoint's tensors are checked against, and what evaluate and export act with."""
    composed = upgrade_stored_config(copy.deepcopy(payload["config"]))
    if dtype == "checkpoint":
        dtype = payload.get("training_config", {}).get("dtype", "float32")
    if dtype not in ACTING_DTYPES:
        raise ValueError(f"dtype must be float32, bfloat16 or checkpoint, got {dtype!r}")
    composed["path"] = {"name": "eager"}
    composed["hardware"] = {"name": "eval", "device": device, "dtype": dtype}
    composed.setdefault("run", {})["resume"] = None
    return to_config(composed)
