"""Checks that need more than the config itself: this machine (CUDA, memory), the env
factory, the model file (found, complete, physically sound). The CLI runs them before any run
dir, env or learner exists (a job's check in cli.train, and cli.train.train for a Config built
elsewhere), so a bad input fails with one line naming the key or file, never half-way into a
run; the runner itself assumes them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.root import Config
from flashsac_bench.envs.g1.offer import g1_config
from flashsac_bench.envs.tasks import task_of
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


def check_model_file(config: Config) -> Any:
    """Parse and compile the task's model (an external task.model_file, or the built-in G1) as
    the env will, find everything the task needs in it (joints, actuators, sites for the
    sensors, the `stand` keyframe) and check its physics values (g1.model.check_physics)."""
    model_file = g1_config(config.task).model_file
    import mujoco

    from flashsac_bench.envs.g1.layout import G1Layout
    from flashsac_bench.envs.g1.model import check_physics, task_spec

    warned: list[str] = []
    # MuJoCo prints its warnings (e.g. "XML contains a 'NaN'") from C: collected here, they
    # join the one-line error, or are said once as warnings of the model file.
    mujoco.set_mju_user_warning(lambda text: warned.append(" ".join(str(text).split())))
    try:
        model = task_spec(model_file).compile()
        check_physics(model)
        G1Layout.from_model(model)
    except Exception as err:  # noqa: BLE001 - MuJoCo raises ValueError / its own errors
        text = _one_line(err)
        if not text.startswith("task.model_file"):
            text = f"task.model_file={model_file}: {text}"
        if warned:
            text += f" (MuJoCo: {'; '.join(dict.fromkeys(warned))})"
        raise ModelFileError(text) from None
    finally:
        mujoco.set_mju_user_warning(None)
    for text in dict.fromkeys(warned):
        print(f"flashsac_bench: warning: task.model_file={model_file}: MuJoCo: {text}",
              file=sys.stderr)  # fmt: skip
    return model


def check_stored_model(trained: Any) -> None:
    """The model a checkpoint carries (evaluation.trained.TrainedLearner), checked as
    task.model_file is before a run (a G1 with what the task needs, sound physics), so that
    evaluate and export refuse a stored model that is not a G1 before any work. A Gymnasium
    task's env is checked as before a run."""
    from dataclasses import replace

    from flashsac_bench.evaluation.trained import trained_task
    from flashsac_bench.runner.checkpoint import CheckpointError

    probe = task_of(trained.config.task).probe
    if probe is not None:
        probe(trained.config.task)
        return
    with trained_task(trained) as carried:
        task = g1_config(carried)  # a task without a probe: its model file is checked
        if task.model_file is None:
            return  # the built-in G1 of this version (trained_task warns when it differs)
        try:
            check_model_file(replace(trained.config, task=task))
        except ModelFileError as err:
            stored = str(task.model_file)
            named = (trained.payload.get("model") or {}).get("model_file") or "?"
            text = str(err).replace(f"task.model_file={stored}: ", "").replace(stored, named)
            raise CheckpointError(
                f"{trained.checkpoint}: its stored model ({named}) is not a usable G1: {text}"
            ) from None


class NotEnoughMemoryError(ConfigError):
    label = "not enough memory"


def _gib(n: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n / 2**10:.1f} KiB"


def host_available() -> int | None:
    """Bytes this process may still allocate: MemAvailable, or the cgroup's limit when lower."""
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        if limit != "max":
            avail = min(avail if avail is not None else 1 << 62, int(limit) - used)
    except (OSError, ValueError):
        pass
    return avail


def memory_needs(
    config: Config, model: Any | None, dims: tuple[int, int, int] | None = None
) -> dict[str, dict[str, int]]:
    """A lower bound of the bytes a run allocates, by place ("host", "device") and part: what
    surely gets allocated (the replay ring, its host copy for checkpoints, the staging, the
    env arrays and each env's physics buffer), so that only a run that cannot fit is refused.
    `model`: the G1 task's compiled model; `dims`: another task's (obs, critic obs, action)
    sizes (neither: a custom env, whose sizes are unknown: one float per observation and
    action is assumed)."""
    from flashsac_bench.learner.replay import RowLayout

    n = config.run.num_envs
    per_env_physics = 0
    if dims is not None:
        row = RowLayout(*dims)
    elif model is not None:
        from flashsac_bench.envs.g1.cpu.shard import array_spec
        from flashsac_bench.envs.g1.cpu.walk_flat import CRITIC_OBS_DIM, NUM_JOINTS, OBS_DIM

        row = RowLayout(OBS_DIM, CRITIC_OBS_DIM, NUM_JOINTS)
        per_env_physics = int(model.nbuffer) + array_spec(model).nbytes(1)
    else:
        row = RowLayout(1, 1, 1)
    ring = config.replay_capacity * row.width * 4
    staging = n * (row.width + row.obs_dim + row.critic_obs_dim + row.action_dim + 1) * 4
    host = {"envs": n * per_env_physics, "staging": staging, "replay ring checkpoint copy": ring}
    device = {"replay ring": ring}
    if config.hardware.resolved_device() == "cpu":
        host.update(device)
        device = {}
    return {"host": host, "device": device}


def check_memory(
    config: Config, model: Any | None = None, dims: tuple[int, int, int] | None = None
) -> None:
    """Refuse a run whose allocations (memory_needs, a lower bound) exceed what this machine
    has available, before anything is allocated."""
    needs = memory_needs(config, model, dims)
    places = [("host", host_available(), "host memory")]
    device = config.hardware.resolved_device()
    if needs["device"] and device.startswith("cuda"):
        import torch

        places.append(("device", int(torch.cuda.mem_get_info(device)[0]), f"{device} memory"))
    for place, available, what in places:
        parts = needs[place]
        total = sum(parts.values())
        if available is None or total <= available:
            continue
        detail = ", ".join(f"{k} {_gib(v)}" for k, v in parts.items() if v)
        raise NotEnoughMemoryError(
            f"run.num_envs={config.run.num_envs} with replay.replay_buffer_n="
            f"{config.replay.replay_buffer_n} needs at least {_gib(total)} of {what} ({detail}), "
            f"this machine has {_gib(available)} available: lower run.num_envs or "
            "replay.replay_buffer_n"
        )


def check_runtime(config: Config, env_factory: EnvFactory | None = None) -> None:
    """Device availability, the logger's package (and W&B login), the env factory
    (FLASHSAC_BENCH_ENV_FACTORY) and, for the built-in env, the backend's packages and the model
    file (task=gymnasium: its extra and its env). Raises a ConfigError subclass."""
    config.hardware.check_available()
    config.logger.check_available()  # logger=wandb without its extra: the pip command
    resolve_env_factory(env_factory)
    model = dims = None
    probe = task_of(config.task).probe
    if env_factory_is_default(env_factory) and probe is not None:
        dims = probe(config.task)  # task=gymnasium without its extra: the pip command
    elif env_factory_is_default(env_factory):
        assert config.backend is not None  # a G1 task has one (Config)
        config.backend.check_available()  # backend=mjwarp without its extra: the pip command
        model = check_model_file(config)
    check_memory(config, model, dims)
