"""Training runner (collector/learner overlap, summaries). Built in issue 4."""

from __future__ import annotations

from typing import Any


def train(config: Any, raw_cfg: Any) -> float | None:
    raise NotImplementedError(
        "The training runner is not built yet (issue 4); use --cfg job to inspect configs."
    )
