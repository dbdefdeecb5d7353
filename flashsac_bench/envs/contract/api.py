"""The env contract: everything the runner, evaluation and export use of an env.

`VecEnv` is an abstract base class: every env (`make_env`'s, an env-factory hook's, a test's
fake) subclasses it, so a class that lacks a method cannot be built, and `check_env` /
`check_step` test what a class cannot declare (the sizes' types, the step's dtypes and shapes).
An env written elsewhere joins by subclassing or by `VecEnv.register(cls)`.

`DeviceVecEnv` is the contract of an env whose state lives on the learner's device (the MuJoCo
Warp backend): it takes and returns torch tensors there, never synchronizes with the host in a
step, and may capture its step as a CUDA graph. The runner steps it without host staging or
worker processes (runner.device_collector); `check_device_step` tests its dtypes, shapes and
device. torch is imported only where a device env is made or checked.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    import torch
    from typing_extensions import Self  # typing.Self is 3.11+; pyproject allows 3.10


@dataclass(frozen=True)
class EnvStep:
    """What one vector step returns. The arrays are allocated once and overwritten in place by
    every step: copy what must outlive the next call.

    obs / critic_obs: float32 (N, obs_dim) / (N, critic_obs_dim), the observation for the NEXT
        action (after the autoreset of finished envs).
    final_obs / final_critic_obs: the true next observation of THIS transition (before any
        reset); equal to obs / critic_obs where the env did not finish.
    reward: float32 (N,), the sum of reward_terms.
    terminated: bool (N,), a failure (tilt, height, non-finite state): do not bootstrap.
    truncated: bool (N,), the time limit hit on a step that did not also terminate; terminated
        wins, so terminated & truncated is never true.
    reward_terms: name -> float32 (N,), each term already weighted (curriculum and ctrl_dt too).
    episode_return: float32 (N,), the undiscounted return of the episode so far; the final one
        where terminated | truncated.
    episode_length: int32 (N,), steps of the episode so far, the final one where done.

    A row the env cannot compute (non-finite physics or rewards) is never handed on: the env
    zeros its observation and reward and ends its episode there (terminated, length <= 1,
    return 0). A step in which every row is such a broken row is how the runner tells a dead env
    (runner.records.dead_tick).
    """

    obs: np.ndarray
    critic_obs: np.ndarray
    final_obs: np.ndarray
    final_critic_obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    reward_terms: dict[str, np.ndarray]
    episode_return: np.ndarray
    episode_length: np.ndarray

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], terms: Sequence[str]) -> EnvStep:
        """Views of a shard layout's arrays (`envs.g1.cpu.shards`): each field under its own
        name, the reward terms under "term/<name>"."""
        return cls(
            obs=arrays["obs"],
            critic_obs=arrays["critic_obs"],
            final_obs=arrays["final_obs"],
            final_critic_obs=arrays["final_critic_obs"],
            reward=arrays["reward"],
            terminated=arrays["terminated"],
            truncated=arrays["truncated"],
            reward_terms={name: arrays[f"term/{name}"] for name in terms},
            episode_return=arrays["episode_return"],
            episode_length=arrays["episode_length"],
        )


# The key of an env state (VecEnv.get_state) that cannot continue the envs; its value says why.
NOT_RESUMABLE = "not_resumable"

# Called by `step_end` with env rows [lo, hi) of the step once they are complete.
RowsDone = Callable[[EnvStep, int, int], None]


class VecEnv(ABC):
    """N autoresetting envs stepped together (what `make_env` and the env-factory hook return).

    `step` takes float actions (N, action_dim) in [-1, 1] (values outside are clipped) and returns
    the EnvStep described above. `get_state` returns everything needed to continue
    bit-identically (picklable: it goes into checkpoints); `set_state` restores it. An env that
    cannot hold its state in plain values says why under the key NOT_RESUMABLE: its checkpoints
    serve evaluate and export, and a resume from one is refused with that reason. `metrics`
    returns scalar means since its previous call. `close` frees what the env started (threads,
    worker processes, shared memory) and may be called more than once.

    Worker processes. An env whose envs step in other processes says so (`workers` > 0) and
    splits its step: `step_begin` hands the actions over and returns while the workers step,
    `step_end` waits, calling `on_rows(step, lo, hi)` as each worker's rows are complete, so
    the caller copies early workers' rows while the slowest one still steps. The defaults here
    are an in-process env's: no workers, and a split step that runs the whole step at once.
    """

    num_envs: int
    obs_dim: int
    critic_obs_dim: int
    action_dim: int
    max_episode_steps: int
    _begun: EnvStep | None = None  # the default split step's result, until step_end

    @abstractmethod
    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        """Reset every env; returns (obs, critic_obs)."""

    @abstractmethod
    def step(self, actions: np.ndarray) -> EnvStep: ...

    @abstractmethod
    def metrics(self) -> dict[str, float]: ...

    @abstractmethod
    def get_state(self) -> dict[str, Any]: ...

    @abstractmethod
    def set_state(self, state: dict[str, Any]) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def workers(self) -> int:
        """Worker processes stepping the envs (0: in this process)."""
        return 0

    @property
    def worker_done_times(self) -> list[float | None]:
        """time.perf_counter() in each worker when it finished its part of the last step (env
        order; empty in-process): how long the step waited for its slowest worker."""
        return []

    def step_begin(self, actions: np.ndarray) -> None:
        """The first half of `step`; `step_end` completes it."""
        self._begun = self.step(actions)

    def step_end(self, on_rows: RowsDone | None = None) -> EnvStep:
        """Wait for the step `step_begin` started; the same EnvStep as `step`."""
        step, self._begun = self._begun, None
        if step is None:
            raise RuntimeError("step_end() without step_begin()")
        if on_rows is not None:
            on_rows(step, 0, self.num_envs)
        return step


@dataclass(frozen=True)
class DeviceEnvStep:
    """What one step of a DeviceVecEnv returns: EnvStep's fields (the same meaning, dtypes and
    shapes) as torch tensors on the env's device, allocated once and overwritten in place by
    every step. `reward_terms` holds each weighted term, in the order of the env's names."""

    obs: torch.Tensor
    critic_obs: torch.Tensor
    final_obs: torch.Tensor
    final_critic_obs: torch.Tensor
    reward: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    reward_terms: dict[str, torch.Tensor]
    episode_return: torch.Tensor
    episode_length: torch.Tensor


class DeviceVecEnv(ABC):
    """N autoresetting envs whose state lives on `device` (torch tensors in and out).

    `step` takes float32 actions (N, action_dim) on the device and returns the DeviceEnvStep
    described above. It never waits for the device (no host copy of a device value, no
    data-dependent Python), so the caller may queue it with other device work (on another stream
    too: it runs on the current one), and on CUDA `capture(actions)` may record it as CUDA
    graphs: later `step` calls with that same actions tensor replay them on the current stream.
    `metrics`, `get_state` and `set_state` may synchronize (they run between iterations);
    `get_state` returns host copies (picklable, for checkpoints); `close` frees the device
    state and may be called more than once.
    """

    num_envs: int
    obs_dim: int
    critic_obs_dim: int
    action_dim: int
    max_episode_steps: int
    # An env that builds itself on a thread beside the caller's setup says how long that build
    # took once it is done (by the first `reset`; summary.json's setup_beside); None: no such
    # build.
    background_build_s: float | None = None

    @property
    @abstractmethod
    def device(self) -> torch.device:
        """Where the env's tensors live (the learner's device)."""

    @abstractmethod
    def reset(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Reset every env; returns the (obs, critic_obs) output tensors."""

    @abstractmethod
    def step(self, actions: torch.Tensor) -> DeviceEnvStep: ...

    @abstractmethod
    def metrics(self) -> dict[str, float]: ...

    @abstractmethod
    def get_state(self) -> dict[str, Any]: ...

    @abstractmethod
    def set_state(self, state: dict[str, Any]) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    def capture(self, actions: torch.Tensor) -> bool:
        """Record `step(actions)` as CUDA graphs (once, before the loop; the env's state is
        left as it was). False where the env cannot (the default, and on a CPU device): its
        steps then run as ordinary calls."""
        return False

    @property
    def step_mode(self) -> str:
        """How `step` runs, for the run's summary (e.g. "cuda_graph", "eager")."""
        return "eager"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@runtime_checkable
class TaskEnv(Protocol):
    """What evaluation uses beyond VecEnv: the physics pose of every env (rendering), the
    penalty-curriculum scale (so an evaluation can use the training env's) and the robustness
    conditions (evaluation.robustness). The G1 env is one; an env that is not gets no GIF and
    no robustness conditions, each said in one line."""

    num_envs: int
    qpos: np.ndarray  # (N, nq), the state after the last step or reset
    penalty_scale: float

    def set_perturbations(
        self,
        *,
        mass_scale: float = 1.0,
        push_step: int | None = None,
        push_velocity: list[float] | None = None,
        commands: np.ndarray | None = None,
    ) -> None:
        """Conditions no training run sees, acting from the next reset: every link's mass times
        `mass_scale`, a velocity change `push_velocity` at step `push_step` of every episode,
        `commands` (N, 3) instead of the sampled velocity commands."""


SIZES = ("num_envs", "obs_dim", "critic_obs_dim", "action_dim", "max_episode_steps")


def check_env(env: object) -> None:
    """TypeError naming what makes `env` no VecEnv or DeviceVecEnv: neither, or a size missing
    or no int."""
    if not isinstance(env, VecEnv | DeviceVecEnv):
        raise TypeError(
            f"the env factory returned {type(env).__name__}, not a VecEnv or DeviceVecEnv"
        )
    for name in SIZES:
        value = getattr(env, name, None)
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
            raise TypeError(f"{type(env).__name__}.{name} must be an int >= 1, got {value!r}")


def check_step(env: VecEnv, step: EnvStep) -> None:
    """TypeError naming the first EnvStep field whose dtype or shape breaks the contract."""
    n = env.num_envs
    fields: list[tuple[str, np.ndarray, type, tuple[int, ...]]] = [
        ("obs", step.obs, np.float32, (n, env.obs_dim)),
        ("critic_obs", step.critic_obs, np.float32, (n, env.critic_obs_dim)),
        ("final_obs", step.final_obs, np.float32, (n, env.obs_dim)),
        ("final_critic_obs", step.final_critic_obs, np.float32, (n, env.critic_obs_dim)),
        ("reward", step.reward, np.float32, (n,)),
        ("terminated", step.terminated, np.bool_, (n,)),
        ("truncated", step.truncated, np.bool_, (n,)),
        ("episode_return", step.episode_return, np.float32, (n,)),
        ("episode_length", step.episode_length, np.int32, (n,)),
        *((f"reward_terms[{k!r}]", v, np.float32, (n,)) for k, v in step.reward_terms.items()),
    ]
    for name, array, dtype, shape in fields:
        if not isinstance(array, np.ndarray) or array.dtype != dtype or array.shape != shape:
            got = f"{getattr(array, 'dtype', type(array).__name__)} {getattr(array, 'shape', '')}"
            raise TypeError(
                f"{type(env).__name__}: EnvStep.{name} must be {np.dtype(dtype)} {shape}, "
                f"got {got.strip()}"
            )


def check_device_step(env: DeviceVecEnv, step: DeviceEnvStep) -> None:
    """TypeError naming the first DeviceEnvStep field whose dtype, shape or device breaks the
    contract."""
    import torch

    n, dev = env.num_envs, env.device
    f32, b, i32 = torch.float32, torch.bool, torch.int32
    fields: list[tuple[str, Any, torch.dtype, tuple[int, ...]]] = [
        ("obs", step.obs, f32, (n, env.obs_dim)),
        ("critic_obs", step.critic_obs, f32, (n, env.critic_obs_dim)),
        ("final_obs", step.final_obs, f32, (n, env.obs_dim)),
        ("final_critic_obs", step.final_critic_obs, f32, (n, env.critic_obs_dim)),
        ("reward", step.reward, f32, (n,)),
        ("terminated", step.terminated, b, (n,)),
        ("truncated", step.truncated, b, (n,)),
        ("episode_return", step.episode_return, f32, (n,)),
        ("episode_length", step.episode_length, i32, (n,)),
        *((f"reward_terms[{k!r}]", v, f32, (n,)) for k, v in step.reward_terms.items()),
    ]
    for name, t, dtype, shape in fields:
        ok = isinstance(t, torch.Tensor) and t.dtype == dtype and tuple(t.shape) == shape
        if not ok or t.device.type != dev.type:
            got = f"{getattr(t, 'dtype', type(t).__name__)} {tuple(getattr(t, 'shape', ()))}"
            raise TypeError(
                f"{type(env).__name__}: DeviceEnvStep.{name} must be {dtype} {shape} on "
                f"{dev}, got {got} on {getattr(t, 'device', '?')}"
            )
