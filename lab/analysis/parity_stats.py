"""Small-sample statistics of the learning-parity report: Student-t confidence intervals and
exact (or Monte-Carlo) two-sided permutation tests."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

# Student t quantiles t_{0.975, df} for df = 1..30 (beyond: 1.96 + 2.5 / df, within 0.002).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


def t975(df: int) -> float:
    if df < 1:
        raise ValueError("df must be >= 1")
    return _T975[df - 1] if df <= len(_T975) else 1.96 + 2.5 / df


def mean_ci(values: np.ndarray) -> dict[str, float | int | None]:
    """Mean and 95% CI half-width (Student t over the finite values; None below 2 values)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    n = len(v)
    if n == 0:
        return {"n": 0, "mean": None, "ci95": None}
    half = t975(n - 1) * v.std(ddof=1) / math.sqrt(n) if n > 1 else None
    return {"n": n, "mean": float(v.mean()), "ci95": None if half is None else float(half)}


def permutation_test(
    a: np.ndarray, b: np.ndarray, n_perm: int = 20_000, max_exact: int = 200_000, seed: int = 0
) -> dict[str, Any]:
    """Two-sided permutation test of mean(a) - mean(b) (exact when C(n, k) <= max_exact).

    p = fraction of relabelings whose |mean difference| is at least the observed one (the
    identity labeling included); Monte Carlo: (1 + hits) / (1 + n_perm).
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if len(a) == 0 or len(b) == 0:
        return {"p": None, "diff": None, "exact": None, "min_p": None, "n": [len(a), len(b)]}
    pooled = np.concatenate([a, b])
    n, k = len(pooled), len(a)
    observed = abs(a.mean() - b.mean())
    # Relative slack: identical labelings must count as "at least as extreme" despite rounding.
    tol = 1e-12 * max(1.0, float(np.abs(pooled).max()))
    total = math.comb(n, k)
    if total <= max_exact:
        hits = 0
        s = pooled.sum()
        for idx in itertools.combinations(range(n), k):
            sa = pooled[list(idx)].sum()
            if abs(sa / k - (s - sa) / (n - k)) >= observed - tol:
                hits += 1
        p, exact = hits / total, True
    else:
        rng = np.random.default_rng(seed)
        hits = 0
        for _ in range(n_perm):
            perm = rng.permutation(pooled)
            if abs(perm[:k].mean() - perm[k:].mean()) >= observed - tol:
                hits += 1
        p, exact = (1 + hits) / (1 + n_perm), False
    # The identity and its mirror (when k = n - k) are always as extreme as the observation.
    min_p = (2 if 2 * k == n else 1) / total
    return {
        "p": float(p),
        "diff": float(a.mean() - b.mean()),
        "exact": exact,
        "min_p": float(min_p),
        "n": [len(a), len(b)],
    }
