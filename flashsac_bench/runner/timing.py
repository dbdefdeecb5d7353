"""Per-iteration timers and the summary statistics of timing series.

What each timing measures is defined in one place: `TIMING_SEMANTICS` in runner.summary (copied
into every summary.json as `timing_semantics`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence

import numpy as np
import torch

STAT_KEYS = ("count", "mean", "median", "p90", "p95", "min", "max")


def summarize(values: Iterable[float | None]) -> dict[str, float | int | None]:
    """count, mean, median, p90, p95, min, max (linear-interpolated percentiles) of the finite
    values; every statistic but count is None when there are none."""
    arr = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    if arr.size == 0:
        return {"count": 0, **{k: None for k in STAT_KEYS[1:]}}
    p50, p90, p95 = np.percentile(arr, [50, 90, 95])
    return {
        "count": int(arr.size),
        "mean": float(arr.mean()),
        "median": float(p50),
        "p90": float(p90),
        "p95": float(p95),
        "min": float(arr.min()),
        "max": float(arr.max()),
    }


def overlap_efficiency(
    learner: dict[str, float | int | None],
    collector: dict[str, float | int | None],
    iteration: dict[str, float | int | None],
) -> float | None:
    """max(median learner, median collector) / median iter: 1.0 means the shorter side is fully
    hidden behind the longer one; lower values mean serial overhead around them."""
    med = [s.get("median") for s in (learner, collector, iteration)]
    if any(m is None for m in med) or not med[2]:
        return None
    return max(float(med[0]), float(med[1])) / float(med[2])  # type: ignore[arg-type]


def window_mean(rows: Sequence[dict], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return float(np.mean(vals)) if vals else None


class LearnerTimer:
    """Times the update cycle without adding a host<->device sync.

    CUDA: start/end events on the current stream; `read()` is called one iteration later, after
    the action hand-off has synchronized past the end event, so elapsed_time never waits.
    CPU: the learner runs synchronously, so host wall time is the learner's time.
    """

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.device = device
        self._pending = False
        self._wall_ms: float | None = None
        if self.cuda:
            self._start = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)
        self._t0 = 0.0

    def start(self) -> None:
        if self.cuda:
            self._start.record(torch.cuda.current_stream(self.device))
        self._t0 = time.perf_counter()

    def stop(self) -> None:
        if self.cuda:
            self._end.record(torch.cuda.current_stream(self.device))
        else:
            self._wall_ms = (time.perf_counter() - self._t0) * 1e3
        self._pending = True

    def read(self) -> float | None:
        """The last start/stop span in ms (None if nothing is pending); call only after a sync
        point that follows the end event on the stream."""
        if not self._pending:
            return None
        self._pending = False
        if self.cuda:
            return float(self._start.elapsed_time(self._end))
        return self._wall_ms
