"""Training runner: collector/learner overlap, device replay, timing summaries, sweeps.

`train` (flashsac_bench.hydra_app.train, one run from a composed config) is imported lazily so
that `flashsac_bench.analysis.sweep_callback` (instantiated by Hydra for every command) does not
pull in torch.
"""

from __future__ import annotations

from typing import Any


def train(config: Any, raw_cfg: Any = None, **kwargs: Any) -> float | None:
    from flashsac_bench.hydra_app import train as _train

    return _train(config, raw_cfg, **kwargs)


__all__ = ["train"]
