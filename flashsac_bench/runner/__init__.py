"""Training runner: collector/learner overlap, device replay, timing summaries, sweeps.

`train` is imported lazily so that readers of runner.summary / runner.liveness (the sweep
comparison, whose Hydra callback is instantiated for every command) do not pull in torch.
"""

from __future__ import annotations

from typing import Any


def train(config: Any, raw_cfg: Any = None, **kwargs: Any) -> float | None:
    from flashsac_bench.runner.loop import train as _train

    return _train(config, raw_cfg, **kwargs)


__all__ = ["train"]
