"""Which callable builds the envs.

The default is `flashsac_bench.envs.make_env` (task + backend). FLASHSAC_BENCH_ENV_FACTORY=
"module:attr" names any callable with the same signature instead; it reaches Hydra multirun and
submitit job processes through the environment, which is how the tests run the real CLI against
a small fake env.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from flashsac_bench.envs.api import VecEnv

if TYPE_CHECKING:
    from flashsac_bench.config.backend import BackendConfig
    from flashsac_bench.config.task import TaskConfig

ENV_FACTORY_VAR = "FLASHSAC_BENCH_ENV_FACTORY"

# (task config, backend config, num_envs, seed) -> the envs.
EnvFactory = Callable[["TaskConfig", "BackendConfig", int, int], VecEnv]


def resolve_env_factory(override: EnvFactory | None = None) -> EnvFactory:
    if override is not None:
        return override
    spec = os.environ.get(ENV_FACTORY_VAR, "").strip()
    if spec:
        module, _, attr = spec.partition(":")
        if not attr:
            raise ValueError(f"{ENV_FACTORY_VAR} must be 'module:attr', got {spec!r}")
        return getattr(importlib.import_module(module), attr)
    from flashsac_bench.envs import make_env  # type: ignore[attr-defined]

    return make_env
