"""summary.json: what ran, where, and how fast. Written atomically (temp file + rename), so a
reader never sees a torn file, also when the run is interrupted or crashes mid-write."""

from __future__ import annotations

import json
import math
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from flashsac_bench.runner.timing import overlap_efficiency, summarize
from flashsac_bench.runner.writes import atomic_write_text

SUMMARY_FORMAT = 1
SUMMARY_NAME = "summary.json"
TIMINGS = ("learner_train_ms", "collector_cycle_ms", "iter_ms")
# Secondary series, summarized the same way (diagnostics, not part of the comparison).
EXTRA_TIMINGS = (
    "env_step_ms",
    "action_ms",
    "learner_host_ms",
    "collector_wait_ms",
    "collector_start_ms",
    "release_ms",
    "join_ms",
    "insert_ms",
    "bookkeeping_ms",
    "straggler_ms",
)

# The one definition of what each timing measures. collector_cycle_ms is the work the learner's
# cycle has to hide; in steady state iter_ms is the training period (one env step of every env).
TIMING_SEMANTICS = {
    "learner_train_ms": (
        "update cycle + async metric copy; CUDA: event span on the learner stream (GPU time), "
        "CPU: host wall time"
    ),
    "collector_cycle_ms": (
        "collector thread busy time per tick: env.step + packing replay rows "
        "(excludes waiting for actions, unlike UniLab's)"
    ),
    "env_step_ms": (
        "env.step inside the tick; with an env that splits its step across worker processes, "
        "from handing the actions over to the last worker's rows packed (each worker's rows "
        "are copied while the others still step, so collector_cycle_ms - env_step_ms is the "
        "serial rest of the packing)"
    ),
    "iter_ms": (
        "host wall time of one iteration's serial part: action hand-off, update launch, "
        "collector join, replay insert, reward stats; excludes checkpoint writes and the "
        "row's bookkeeping (done in the next iteration while the envs step)"
    ),
    "collector_start_ms": (
        "from the collector's release to its thread starting the tick (thread wake-up and GIL "
        "hand-off while the main thread launches the update): on the serial path"
    ),
    "release_ms": (
        "from the actions on the host to the collector's release; on the serial path. The "
        "previous update's late values are read after the release, while the envs step"
    ),
    "join_ms": (
        "from the tick complete (and the update launched, whichever is later) to the main "
        "thread going on with it: the wake-up after the join, plus whatever of the previous "
        "row and the TensorBoard point was still being done when the tick completed; on the "
        "serial path"
    ),
    "insert_ms": (
        "host time of storing the iteration's tick after the join (replay insert + reward "
        "stats; asynchronous on CUDA): on the serial path"
    ),
    "straggler_ms": (
        "worker processes: from the median worker finishing its part of the env step to the "
        "last one (the workers' own clocks): how much sooner the step would end with the work "
        "evenly split; null with the envs in-process"
    ),
    "bookkeeping_ms": (
        "host time of building the iteration's row (episode statistics, the row, the progress "
        "line), during the next iteration while the envs step (or at a checkpoint or the "
        "loop's end): off the serial path, not part of iter_ms"
    ),
    "collector_wait_ms": (
        "from the update's launch to the tick back; the previous iteration's row and the "
        "window's TensorBoard write, when one is due, are done first (while the envs step)"
    ),
    "setup_s": (
        "host wall time from the runner's start to its first iteration: env build (its workers "
        "or its Warp build keep going during the learner's build and compile), learner build, "
        "compile and capture, restore; startup holds its disjoint parts, other_s what lies "
        "between them, and cold_start_s their compile / capture total (learner_warmup_s + "
        "device_steps_capture_s + env_capture_s); compile: what torch's compiler did in the "
        "learner's warmup (Dynamo's tracing, the backend, the caches' hits and misses); "
        "setup_beside: what ran on a thread beside those parts (the Warp env's build: its "
        "wall time, of which env_ready_s was left to wait)"
    ),
    "rows": (
        "learning iterations only (warmup iterations with random actions and no update are "
        "in rows_all with learning=false), the last summary_last of them"
    ),
}


def _clean(obj: Any) -> Any:
    """JSON-safe copy: numpy scalars to Python, NaN/inf to None (strict JSON)."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_json(path: Path, payload: dict[str, Any], what: str = "file") -> None:
    text = json.dumps(_clean(payload), indent=1, allow_nan=False) + "\n"
    atomic_write_text(path, text, what)


def device_info(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {
        "device": str(device),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
    }
    try:
        import mujoco

        info["mujoco"] = mujoco.__version__
    except ImportError:  # pragma: no cover - mujoco is a dependency
        info["mujoco"] = None
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(
            gpu=props.name,
            capability=f"{props.major}.{props.minor}",
            gpu_memory_gib=round(props.total_memory / 2**30, 1),
        )
    return info


COMMIT_VAR = "FLASHSAC_BENCH_COMMIT"


def git_info() -> dict[str, Any]:
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    # A copy of the tree without its own history (the device machine's) names its commit here.
    pinned = os.environ.get(COMMIT_VAR)
    commit = pinned or git("rev-parse", "HEAD")
    status = None if pinned else git("status", "--porcelain", "--untracked-files=no")
    return {
        "commit": commit,
        "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
        "dirty": None if status is None else bool(status),
    }


def select_rows(rows_all: list[dict[str, Any]], summary_last: int) -> list[dict[str, Any]]:
    """The rows the statistics use: the last `summary_last` learning iterations."""
    learning = [r for r in rows_all if r.get("learning")]
    return learning[-summary_last:]


def timing_block(rows: list[dict[str, Any]], num_envs: int) -> dict[str, Any]:
    stats = {key: summarize(r.get(key) for r in rows) for key in TIMINGS}
    extra = {key: summarize(r.get(key) for r in rows) for key in EXTRA_TIMINGS}
    iter_median = stats["iter_ms"]["median"]
    return {
        **stats,
        "extra_timings": extra,
        "overlap_efficiency": overlap_efficiency(
            stats["learner_train_ms"], stats["collector_cycle_ms"], stats["iter_ms"]
        ),
        "env_steps_per_s": (num_envs * 1e3 / iter_median) if iter_median else None,
    }


def load_summary(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    with open(Path(run_dir) / SUMMARY_NAME) as f:
        return json.load(f)
