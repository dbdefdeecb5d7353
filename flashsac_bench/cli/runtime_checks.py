"""Checks that need more than the config itself: this machine (CUDA), the env factory, the
model file. The CLI runs them before any run dir, env or learner exists (a job's check in
cli.train, and cli.train.train for a Config built elsewhere), so a bad input fails with one
line naming the key or file, never half-way into a run; the runner itself assumes them."""

from __future__ import annotations

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.root import Config
from flashsac_bench.runner.env_factory import (
    EnvFactory,
    env_factory_is_default,
    resolve_env_factory,
)


class ModelFileError(ConfigError):
    label = "invalid model file"


def _one_line(err: BaseException) -> str:
    lines = [ln.strip() for ln in str(err).strip().splitlines() if ln.strip()]
    return "; ".join(lines) or type(err).__name__


def check_model_file(config: Config) -> None:
    """Parse and compile the task's model (an external task.model_file, or the built-in G1) as
    the env will, find everything the task needs in it (joints, actuators, sites for the
    sensors, the `stand` keyframe) and check its physics values (g1_model.check_physics)."""
    model_file = config.task.model_file
    from flashsac_bench.envs.g1_layout import G1Layout
    from flashsac_bench.envs.g1_model import check_physics, task_spec

    try:
        model = task_spec(model_file).compile()
        check_physics(model)
        G1Layout.from_model(model)
    except Exception as err:  # noqa: BLE001 - MuJoCo raises ValueError / its own errors
        text = _one_line(err)
        if not text.startswith("task.model_file"):
            text = f"task.model_file={model_file}: {text}"
        raise ModelFileError(text) from None


def check_runtime(config: Config, env_factory: EnvFactory | None = None) -> None:
    """Device availability, the env factory (FLASHSAC_BENCH_ENV_FACTORY) and, for the built-in
    env, the model file. Raises a ConfigError subclass."""
    config.hardware.check_available()
    resolve_env_factory(env_factory)
    if env_factory_is_default(env_factory):
        check_model_file(config)
