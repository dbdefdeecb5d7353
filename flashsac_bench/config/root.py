from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from omegaconf import DictConfig, OmegaConf

from flashsac_bench.config.backend import BackendConfig, EnvPlan, MjwarpConfig, device_name
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.hardware import HardwareConfig
from flashsac_bench.config.keys import suggest, unknown_key_hint, unknown_keys
from flashsac_bench.config.learner import LearnerConfig
from flashsac_bench.config.logger import LoggerConfig
from flashsac_bench.config.path import PathConfig
from flashsac_bench.config.run import ReplayConfig, RunConfig
from flashsac_bench.config.task import BaseTaskConfig
from flashsac_bench.config.update import UpdateConfig
from flashsac_bench.config.values import require_bounded, require_no_interpolation


@dataclass
class Config:
    update: UpdateConfig = field(default_factory=UpdateConfig)
    path: PathConfig = field(default_factory=PathConfig)
    # The group's base: each backend's options are a schema of their own (backend.schema_for),
    # which the chosen option's YAML starts from; bare, it becomes its backend's defaults.
    # None: no backend, where the task steps its envs itself (task=gymnasium); a task that
    # needs one gets backend=mujoco's defaults.
    backend: BackendConfig | None = None
    hardware: HardwareConfig = field(default_factory=HardwareConfig)
    # The group's base, as backend's: each task's options are a schema of their own.
    task: BaseTaskConfig = field(default_factory=BaseTaskConfig)
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    run: RunConfig = field(default_factory=RunConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)

    def __post_init__(self) -> None:
        if type(self.task) is BaseTaskConfig:
            self.task = BaseTaskConfig.schema_for(self.task.name)()
        if not self.task.USES_BACKEND and self.backend is not None:
            raise ConfigError(
                f"backend={self.backend.name} with task={self.task.name}: the task steps its "
                f"envs itself ({self.task.stepped_by}), no backend applies; drop "
                f"backend={self.backend.name}"
            )
        if self.task.USES_BACKEND and self.backend is None:
            self.backend = BackendConfig()
        if self.run.stop_at_walk and self.task.walk_tracking_top() is None:
            raise ConfigError(
                f"run.stop_at_walk judges the G1's walking thresholds: task={self.task.name} "
                "has none (stop it with run.iterations or run.time_limit_s)"
            )
        if type(self.backend) is BackendConfig:
            self.backend = BackendConfig.schema_for(self.backend.name)()
        require_bounded(self, "")  # every group's numbers, also of a group without own checks
        # Cross-group rules: combinations that each group alone cannot see.
        if self.path.name == "cudagraph" and self.hardware.resolved_device() == "cpu":
            raise ConfigError(
                f"path=cudagraph needs a CUDA device, but hardware={self.hardware.name} resolves "
                "to the CPU (no CUDA device). Use path=eager or path=compile on the CPU, "
                "or a CUDA hardware preset "
                "(hardware=h200, hardware=rtx4090)."
            )
        capacity = self.replay.replay_buffer_n * self.run.num_envs
        if self.replay.batch_size > capacity:
            raise ConfigError(
                f"replay.batch_size={self.replay.batch_size} is larger than the replay capacity "
                f"{capacity} (= replay.replay_buffer_n {self.replay.replay_buffer_n} x "
                f"run.num_envs {self.run.num_envs})."
            )
        if self.backend is not None:
            self.backend.plan(self.run.num_envs)  # e.g. more worker processes than envs
        if isinstance(self.backend, MjwarpConfig):
            # The device env hands its transitions to the learner's ring without host staging:
            # its worlds run on the learner's device ("auto" resolves to it here).
            warp = self.backend.warp
            learner = device_name(self.hardware.resolved_device())
            if warp.device == "auto":
                self.backend.warp = replace(warp, device=learner)
            elif device_name(warp.device) != learner:
                raise ConfigError(
                    f"backend.warp.device={warp.device} but hardware={self.hardware.name} puts "
                    f"the learner on {learner}: the worlds must run on the learner's device "
                    "(backend.warp.device=auto follows it)"
                )
        if self.replay.learning_starts > self.replay.replay_buffer_n:
            raise ConfigError(
                f"replay.learning_starts={self.replay.learning_starts} exceeds "
                f"replay.replay_buffer_n={self.replay.replay_buffer_n}: learning would never start."
            )

    def env_plan(self) -> EnvPlan:
        """How the run's envs are stepped: by the backend, or by a task that steps its own."""
        if self.backend is not None:
            return self.backend.plan(self.run.num_envs)
        return self.task.plan(self.run.num_envs)

    @property
    def replay_capacity(self) -> int:
        return self.replay.replay_buffer_n * self.run.num_envs


def to_config(cfg: DictConfig | dict[str, Any] | Config) -> Config:
    """Typed, validated Config from a composed Hydra config (runs every __post_init__ check).

    A plain dict is data (a stored config: a checkpoint's, a summary's, a test's): a string in
    it that OmegaConf would resolve as an interpolation (`${oc.env:HOME}` would read the
    environment of whoever opens the file) is refused, never resolved."""
    if isinstance(cfg, Config):
        return cfg
    if isinstance(cfg, dict):
        require_no_interpolation(cfg)
        cfg = OmegaConf.create(cfg)
    task = BaseTaskConfig.chosen(cfg.get("task", {}))
    # A task that steps its envs itself composes no backend (None); a stored config of an
    # older version may hold none for a task that needs one: its defaults.
    stored = cfg.get("backend")
    if stored is None and task.USES_BACKEND:
        stored = {}
    backend = None if stored is None else BackendConfig.chosen(stored)
    _refuse_unknown_keys(cfg, Config(task=task(), backend=None if backend is None else backend()))
    schema = OmegaConf.structured(Config)
    schema.task = OmegaConf.structured(task)
    if backend is not None:
        schema.backend = OmegaConf.structured(backend)
    obj = to_object(OmegaConf.merge(schema, cfg))
    assert isinstance(obj, Config)
    return obj


def to_object(cfg: Any) -> Any:
    """OmegaConf.to_object, re-raising a ConfigError from a schema's __post_init__ as itself
    (OmegaConf wraps it), so that it reaches the user as its one line."""
    try:
        return OmegaConf.to_object(cfg)
    except ConfigError:
        raise
    except Exception as err:
        cause = err.__cause__ or err.__context__
        if isinstance(cause, ConfigError):
            raise cause from None
        raise


def _refuse_unknown_keys(cfg: DictConfig, schema: Config) -> None:
    """Keys the schema does not have (added with Hydra's `+`, or in a plain dict) are errors:
    OmegaConf would drop them silently and the run would not do what was asked."""
    unknown = unknown_keys(cfg, schema)
    if not unknown:
        return
    hints = []
    for key in unknown:
        chosen = getattr(getattr(schema, key.split(".")[0], None), "name", None)
        hints.append(key + unknown_key_hint(key, suggest(key, schema), chosen))
    noun = "key" if len(unknown) == 1 else "keys"
    raise ConfigError(f"unknown {noun} {', '.join(hints)}: not in the config schema")
