"""Host-side statistics on the iteration's serial path.

Here, below the runner, because both layers take them: the env's metrics (g1_walk_flat) and the
runner's collector (the tick's reward means); envs import no runner."""

from __future__ import annotations

import numpy as np


def array_mean(values: np.ndarray) -> float:
    """np.mean's value -- the same pairwise sum divided by the count, so the same bits
    (tests/runner/test_runner_units.py) -- without np.mean's per-call dispatch, which every
    mean of an env tick would add to the serial path."""
    return float(np.add.reduce(values, axis=None) / values.size)
