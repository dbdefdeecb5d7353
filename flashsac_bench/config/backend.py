from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, ClassVar

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.options import OptionGroup, installed
from flashsac_bench.config.values import FLOAT_BOUND, ranged, require_bounded

MODES = ("auto", "processes", "threads")
BACKENDS = ("mujoco", "mjwarp")
# Cores the learner's own thread keeps beside the envs' worker processes or pool threads (more
# busy threads than cores spin-wait on each other and slow every update cycle).
LEARNER_CORES = 1
# Auto picks worker processes only when at least this many cores are left for them: with fewer,
# the pipe round trips and the extra copies buy nothing over the in-process thread pool.
MIN_AUTO_WORKERS = 2
# Worker processes and threads past this are a typo (each is an OS process or thread).
MAX_WORKERS = 4096
# Contacts and constraint rows per world past this are a typo (allocated for every world).
MAX_WARP_ROWS = 1 << 20


def available_cores() -> int:
    """CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@dataclass(frozen=True)
class EnvPlan:
    """How the envs are stepped: `workers` processes, a `threads`-thread pool in-process, or
    (MuJoCo Warp) all of them as one batch on the device."""

    mode: str  # "processes", "threads" or "device"
    workers: int  # worker processes (0 in threads mode)
    threads: int  # physics threads: of the in-process pool, or per worker process


@dataclass
class WarpOptions:
    """The mjwarp backend's own options (`backend.warp`)."""

    # Where the worlds run: the learner's device (hardware.device), where the transitions stay;
    # "auto" follows it (Warp's CPU device on a CPU learner: for testing only).
    device: str = "auto"
    # Contacts and constraint rows allocated per world (MuJoCo Warp allocates its buffers once):
    # enough for a G1 lying on the floor (four rows per pyramidal contact, plus joint limits and
    # friction); too few drops contacts or rows, and MuJoCo Warp prints an overflow warning.
    nconmax: int = ranged(48, low=1, high=MAX_WARP_ROWS)
    njmax: int = ranged(384, low=1, high=MAX_WARP_ROWS)
    # MuJoCo Warp's deterministic mode (stable contact order, canonical constraint rows,
    # order-invariant atomic sums in the kernels it covers), at a cost. On CUDA it does not make
    # two envs of one seed repeat each other's bits (docs/results.md, "The GPU suite, sixth
    # pass"): GPU results vary in their last bits from run to run either way. Warp's CPU device
    # is deterministic either way.
    deterministic: bool = False
    # Build MuJoCo Warp's model and data and load its kernels on a background thread while the
    # runner builds and compiles the learner (the first use of the env waits for it).
    background_build: bool = True
    # The env step and the tick's packing beside the learner's update: on CUDA on a stream of
    # their own, ordered by events (on a CPU device, a thread); the update reads only ticks
    # stored before, so the data does not change. False: one after the other on one stream.
    overlap: bool = True

    def __post_init__(self) -> None:
        require_bounded(self, "backend.warp.")
        dev = self.device
        if not (dev in ("auto", "cpu", "cuda") or (dev.startswith("cuda:") and dev[5:].isdigit())):
            raise ConfigError(f"backend.warp.device must be auto, cpu, cuda or cuda:N, got {dev!r}")

    def resolved_device(self) -> str:
        """The worlds' torch device: "cpu" or "cuda:N". A Config has resolved "auto" to the
        learner's device; alone (a benchmark), "auto" is cuda:0 when torch sees CUDA."""
        return device_name(self.device)


def device_name(device: str) -> str:
    """A device name in one spelling: "auto" resolved (CUDA when torch sees it), "cuda" as
    "cuda:0"; so that two names of one device compare equal in a config, before any CUDA
    context exists (runner.setup.same_device compares the built torch devices, where "cuda"
    is CUDA's current device)."""
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    return "cuda:0" if device == "cuda" else device


@dataclass
class BackendConfig(OptionGroup):
    """The physics backend that steps the envs (group `backend`): what every backend has.

    Each backend has a schema of its own (MujocoConfig, MjwarpConfig below; its YAML in
    conf/backend/ starts from it: config.store registers them), so that a composed config holds
    the options its backend reads and no others."""

    GROUP: ClassVar[str] = "backend"
    OPTIONS: ClassVar[tuple[str, ...]] = BACKENDS

    # "mujoco": MuJoCo on the CPU; "mjwarp": MuJoCo Warp on the learner's device.
    name: str = "mujoco"

    def __post_init__(self) -> None:
        require_bounded(self, "backend.")  # config.values: every number finite, in its range
        self.check_name(self.name)

    @classmethod
    def _schemas(cls) -> dict[str, type[Any]]:
        return {"mujoco": MujocoConfig, "mjwarp": MjwarpConfig}

    def plan(self, num_envs: int, cores: int | None = None) -> EnvPlan:
        """How `num_envs` envs are stepped on a machine with `cores` cores."""
        raise NotImplementedError(f"backend {self.name!r} has no schema of its own")

    def check_available(self) -> None:
        """Refuse a backend whose packages are not installed (one line naming the install
        command). Not part of __post_init__: a config must still compose and validate on a
        machine without them (tests, --cfg job)."""

    def warp_options(self) -> WarpOptions:
        """The device env's stream options: backend.warp of backend=mjwarp; for a device env
        of another backend (a custom env factory's), the defaults."""
        return WarpOptions()


@dataclass
class MujocoConfig(BackendConfig):
    """backend=mujoco: MuJoCo on the CPU, in worker processes or an in-process thread pool."""

    name: str = "mujoco"
    # "processes": env shards in worker processes (each steps its envs AND computes their
    # observations, rewards and resets, free of the trainer's GIL). "threads": one process, a
    # pool of native threads for the physics (the task's numpy holds the GIL). "auto":
    # processes when at least MIN_AUTO_WORKERS cores are left beside the learner, else threads.
    mode: str = "auto"
    # Worker processes: K >= 1 = exactly K; 0 = one per core beside the learner's.
    workers: int = ranged(0, low=0, high=MAX_WORKERS)
    # Threads mode: native threads stepping the envs; 0 = one per core beside the learner's.
    num_threads: int = ranged(0, low=0, high=MAX_WORKERS)
    # A worker that sends no reply to a step within this many seconds is declared hung.
    worker_timeout_s: float = ranged(10.0, low=0.0, high=FLOAT_BOUND, closed="(]")

    def __post_init__(self) -> None:
        super().__post_init__()
        self._require_name("mujoco")
        if self.mode not in MODES:
            raise ConfigError(f"backend.mode must be one of {MODES}, got {self.mode!r}")
        if self.workers and self.mode == "threads":
            raise ConfigError(
                f"backend.workers={self.workers} asks for worker processes but backend.mode="
                "threads forces the in-process thread pool; drop one of the two"
            )

    def resolved_num_threads(self, num_envs: int, cores: int | None = None) -> int:
        """Threads of the in-process pool on a machine with `cores` cores: never more than
        there are envs."""
        cores = available_cores() if cores is None else cores
        threads = self.num_threads or cores - LEARNER_CORES
        return max(1, min(threads, num_envs))

    def plan(self, num_envs: int, cores: int | None = None) -> EnvPlan:
        """Resolve auto settings for `num_envs` envs on a machine with `cores` cores."""
        cores = available_cores() if cores is None else cores
        spare = max(cores - LEARNER_CORES, 1)
        if self.workers > num_envs:
            raise ConfigError(
                f"backend.workers={self.workers} exceeds run.num_envs={num_envs}: every worker "
                "process needs at least one env"
            )
        if self.workers:
            return EnvPlan("processes", self.workers, 1)
        if self.mode == "processes" or (self.mode == "auto" and spare >= MIN_AUTO_WORKERS):
            return EnvPlan("processes", min(spare, num_envs), 1)
        return EnvPlan("threads", 0, self.resolved_num_threads(num_envs, cores))


@dataclass
class MjwarpConfig(BackendConfig):
    """backend=mjwarp: MuJoCo Warp on the learner's device ([mjwarp] extra); every env is a
    world of one batched simulation, and the transitions stay on the device."""

    name: str = "mjwarp"
    warp: WarpOptions = field(default_factory=WarpOptions)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._require_name("mjwarp")

    def plan(self, num_envs: int, cores: int | None = None) -> EnvPlan:
        """All worlds in one batch on the device: no processes, no threads."""
        return EnvPlan("device", 0, 0)

    def check_available(self) -> None:
        missing = [m for m in ("warp", "mujoco_warp") if not installed(m)]
        if missing:
            raise ConfigError(
                f"backend=mjwarp needs the [mjwarp] extra ({', '.join(missing)} not installed): "
                'pip install -e ".[mjwarp]"'
            )

    def warp_options(self) -> WarpOptions:
        return self.warp
