"""Which callable builds the envs (`build_env` calls it and checks what it returns).

The default is `flashsac_bench.envs.make_env` (task + backend). FLASHSAC_BENCH_ENV_FACTORY=
"module:attr" names any callable with the same signature instead; it reaches Hydra multirun and
submitit job processes through the environment, which is how the tests run the real CLI against
a small fake env. A variable that names nothing callable, or a callable that cannot take the
factory's arguments, is an EnvFactoryError (one line).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.envs.contract.api import DeviceVecEnv, VecEnv, check_env

if TYPE_CHECKING:
    from flashsac_bench.config.backend import BackendConfig
    from flashsac_bench.config.task import BaseTaskConfig

log = logging.getLogger("flashsac_bench.runner")

ENV_FACTORY_VAR = "FLASHSAC_BENCH_ENV_FACTORY"

# (task config, backend config, num_envs, seed) -> the envs (on the host or on the learner's
# device: the runner picks the collection by the contract the env implements). The backend is
# None for a task that steps its envs itself (task=gymnasium).
EnvFactory = Callable[["BaseTaskConfig", "BackendConfig | None", int, int], VecEnv | DeviceVecEnv]


class EnvFactoryError(ConfigError):
    label = "invalid environment variable"


def resolve_env_factory(override: EnvFactory | None = None) -> EnvFactory:
    if override is not None:
        return override
    spec = os.environ.get(ENV_FACTORY_VAR, "").strip()
    if spec:
        return _import_factory(spec)
    from flashsac_bench.envs import make_env  # type: ignore[attr-defined]

    return make_env


def build_env(
    override: EnvFactory | None,
    task: BaseTaskConfig,
    backend: BackendConfig | None,
    num_envs: int,
    seed: int,
) -> VecEnv | DeviceVecEnv:
    env = resolve_env_factory(override)(task, backend, num_envs, seed)
    try:
        check_env(env)
    except TypeError:
        close = getattr(env, "close", None)
        if callable(close):
            close()  # it may have started worker processes
        raise
    return env


def warn_oversubscription(env_threads: int) -> None:
    """A CPU learner: warn when its threads and the env's do not fit the cores."""
    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    learner = torch.get_num_threads()
    if cores and learner + env_threads > cores:
        log.warning(
            "learner threads (%d) + env threads (%d) exceed the %d cores this process may "
            "use; OpenMP spin-waits then slow update cycles many-fold while the collector "
            "runs. Set hardware.torch_threads and backend.num_threads (task=gymnasium: "
            "task.vectorization=sync) to split the cores.",
            learner,
            env_threads,
            cores,
        )


def env_factory_is_default(override: EnvFactory | None = None) -> bool:
    return override is None and not os.environ.get(ENV_FACTORY_VAR, "").strip()


def _import_factory(spec: str) -> EnvFactory:
    where = f"{ENV_FACTORY_VAR}={spec!r}"
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise EnvFactoryError(f"{where} must be 'module:callable'")
    try:
        mod = importlib.import_module(module)
    except Exception as err:  # noqa: BLE001 - any import failure is the variable's fault here
        raise EnvFactoryError(
            f"{where}: cannot import {module!r} ({type(err).__name__}: {err})"
        ) from None
    factory = getattr(mod, attr, None)
    if factory is None:
        raise EnvFactoryError(f"{where}: module {module!r} has no attribute {attr!r}")
    if not callable(factory):
        raise EnvFactoryError(f"{where}: {module}.{attr} is not callable")
    _check_signature(where, factory)
    return factory


def _check_signature(where: str, factory: Callable[..., object]) -> None:
    """A factory must take (task, backend, num_envs, seed): checked without calling it (that
    would build the envs)."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return  # no signature to check (some builtins): the call will tell
    try:
        signature.bind(None, None, 0, 0)
    except TypeError as err:
        raise EnvFactoryError(
            f"{where} cannot be called as factory(task, backend, num_envs, seed): {err}"
        ) from None
