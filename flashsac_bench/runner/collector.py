"""The collector thread and the host staging buffers it fills.

The thread owns env.step (MuJoCo releases the GIL, so it runs beside the learner's update on
the main thread). Each tick it packs one replay row per env into a host slab laid out like the
device ring (see learner.replay.RowLayout), so the main thread inserts the whole tick with one
contiguous host->device copy. The slab and the acting buffers are pinned when the learner is on
CUDA.

Buffer reuse needs no extra synchronization: the main thread enqueues the slab's host->device
copy (the store) before the next action hand-off, and that hand-off synchronizes the stream, so
the copy is complete before the collector packs the next tick into the slab.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from numpy.typing import ArrayLike

from flashsac_bench.envs.contract.api import EnvStep, VecEnv
from flashsac_bench.envs.contract.host_stats import array_mean
from flashsac_bench.envs.g1.cpu.shards import straggler_ms
from flashsac_bench.learner.replay import RowLayout

# How long the main thread waits for one env tick before declaring the collector hung: inside
# the bound ("a clear error within 30 s") and far beyond any healthy tick.
DEFAULT_TIMEOUT_S = 15.0
_POLL_S = 0.25


class CollectorError(RuntimeError):
    """The collector thread raised, died or hung: training cannot continue."""


@dataclass
class TickResult:
    """Host-side facts about one env tick (the rows themselves are in Staging.slab)."""

    env_step_ms: float
    cycle_ms: float
    reward_mean: float
    reward_terms: dict[str, float]
    episode_returns: np.ndarray
    episode_lengths: np.ndarray
    env_metrics: dict[str, float] | None = None
    # From the tick's release (Collector.submit) to its thread starting it: the wake-up and the
    # GIL hand-off while the main thread stores and launches the update (serial path).
    start_ms: float | None = None
    # time.perf_counter() when the tick was complete (its rows packed)
    end: float = 0.0
    # Worker processes: from the median worker's finish to the last one's (see straggler_ms)
    straggler_ms: float | None = None


@dataclass
class _Failure:
    error: BaseException


class Staging:
    """Host buffers shared by the collector thread and the main thread: the slab the collector
    packs each tick into (`slab`, with a column view per row field in `cols`), the current obs
    and dones the learner acts on, and the actions it writes."""

    def __init__(self, layout: RowLayout, num_envs: int, pin: bool) -> None:
        def alloc(*shape: int) -> torch.Tensor:
            return torch.zeros(shape, dtype=torch.float32, pin_memory=pin)

        self.layout = layout
        self.num_envs = num_envs
        self.slab_t = alloc(num_envs, layout.width)
        self.slab = self.slab_t.numpy()
        self.cols = {name: self.slab[:, a:b] for name, (a, b) in layout.spans.items()}
        self.obs_t = alloc(num_envs, layout.obs_dim)
        self.dones_t = alloc(num_envs)
        self.actions_t = alloc(num_envs, layout.action_dim)
        self.obs = self.obs_t.numpy()
        self.dones = self.dones_t.numpy()
        self.actions = self.actions_t.numpy()
        self.critic_obs = np.zeros((num_envs, layout.critic_obs_dim), dtype=np.float32)

    def set_current(self, obs: ArrayLike, critic_obs: ArrayLike, dones: ArrayLike) -> None:
        """The obs and dones the learner acts on next (an env's reset, a checkpoint's)."""
        self.obs[:] = obs
        self.critic_obs[:] = critic_obs
        self.dones[:] = dones

    def state_dict(self) -> dict[str, np.ndarray]:
        return {
            "obs": self.obs.copy(),
            "critic_obs": self.critic_obs.copy(),
            "dones": self.dones.copy(),
        }

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        self.set_current(state["obs"], state["critic_obs"], state["dones"])


def pack_tick(env: VecEnv, staging: Staging, want_metrics: bool) -> TickResult:
    """Step every env once with staging.actions and pack the transitions (an in-process env:
    its step returns when every row is written)."""
    t0 = time.perf_counter()
    pack_current(staging)
    t1 = time.perf_counter()
    step = env.step(staging.actions)
    t2 = time.perf_counter()
    pack_rows(staging, step, 0, staging.num_envs)
    return tick_result(env, staging, step, want_metrics, t0, t1, t2)


def pack_split_tick(env: VecEnv, staging: Staging, want_metrics: bool) -> TickResult:
    """pack_tick for an env in worker processes: hand the actions over, pack the tick's first
    columns while the workers step, then pack each worker's rows as soon as that worker is done
    (the copies of early workers overlap the slowest worker's physics). Its env_step_ms spans
    the whole split step, packing included: cycle_ms - env_step_ms is the serial rest."""
    t0 = time.perf_counter()
    env.step_begin(staging.actions)
    pack_current(staging)

    def rows_done(step: EnvStep, lo: int, hi: int) -> None:
        pack_rows(staging, step, lo, hi)

    step = env.step_end(on_rows=rows_done)
    return tick_result(
        env, staging, step, want_metrics, t0, t0, time.perf_counter(), env.worker_done_times
    )


def pack_current(staging: Staging) -> None:
    """The tick's first columns: the obs the actions are taken on, and the actions. They must be
    copied before pack_rows overwrites staging's current obs with the step's."""
    s, c = staging, staging.cols
    c["obs"][:] = s.obs
    c["critic_obs"][:] = s.critic_obs
    c["actions"][:] = s.actions


def pack_rows(staging: Staging, step: EnvStep, lo: int, hi: int) -> None:
    """Env rows [lo, hi) of the step's outputs into the tick's slab, and their current obs and
    dones for the next act."""
    s, c = staging, staging.cols
    c["next_obs"][lo:hi] = step.final_obs[lo:hi]  # the TRUE next obs, also where one just ended
    c["next_critic_obs"][lo:hi] = step.final_critic_obs[lo:hi]
    c["rewards"][lo:hi, 0] = step.reward[lo:hi]
    c["terminated"][lo:hi, 0] = step.terminated[lo:hi]
    c["truncated"][lo:hi, 0] = step.truncated[lo:hi]
    s.obs[lo:hi] = step.obs[lo:hi]
    s.critic_obs[lo:hi] = step.critic_obs[lo:hi]
    s.dones[lo:hi] = np.logical_or(step.terminated[lo:hi], step.truncated[lo:hi])


def tick_result(
    env: VecEnv,
    staging: Staging,
    step: EnvStep,
    want_metrics: bool,
    t0: float,
    t1: float,
    t2: float,
    done_times: list[float | None] | None = None,
) -> TickResult:
    """The tick's facts once every row is packed; t0 / t1 / t2: when the tick / the step began
    and when the step ended; done_times: when each worker process finished its part."""
    done_idx = np.flatnonzero(staging.dones)
    result = TickResult(
        env_step_ms=(t2 - t1) * 1e3,
        cycle_ms=0.0,
        reward_mean=array_mean(step.reward),
        reward_terms={k: array_mean(v) for k, v in step.reward_terms.items()},
        episode_returns=np.asarray(step.episode_return)[done_idx].astype(np.float64),
        episode_lengths=np.asarray(step.episode_length)[done_idx].astype(np.float64),
        env_metrics=dict(env.metrics()) if want_metrics else None,
        straggler_ms=straggler_ms(done_times or []),
    )
    result.end = time.perf_counter()
    result.cycle_ms = (result.end - t0) * 1e3
    return result


@dataclass
class Collector:
    """One daemon thread that runs pack_tick on request; `wait` bounds how long it may take."""

    env: VecEnv
    staging: Staging
    timeout_s: float = DEFAULT_TIMEOUT_S
    _requests: queue.Queue = field(default_factory=lambda: queue.Queue(maxsize=1))
    _results: queue.Queue = field(default_factory=lambda: queue.Queue(maxsize=1))
    _thread: threading.Thread | None = None
    _busy_since: float | None = None
    _tick: int = -1
    hung: bool = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="flashsac-collector", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        # An env in worker processes splits its step (VecEnv.step_begin / step_end).
        pack = pack_split_tick if self.env.workers else pack_tick
        while True:
            req = self._requests.get()
            if req is None:
                return
            want_metrics, released = req
            start_ms = (time.perf_counter() - released) * 1e3
            try:
                result = pack(self.env, self.staging, want_metrics)
            except BaseException as err:  # noqa: BLE001 - reported to the main thread
                self._results.put(_Failure(err))
                return
            result.start_ms = start_ms
            self._results.put(result)

    def submit(self, tick: int, want_metrics: bool) -> None:
        """Release the collector for one tick (staging.actions must hold the actions)."""
        self._tick = tick
        self._busy_since = time.perf_counter()
        self._requests.put((want_metrics, self._busy_since))

    def wait(self) -> TickResult:
        """The tick's result; CollectorError if the thread raised, died or exceeded timeout_s
        (counted from submit)."""
        assert self._thread is not None and self._busy_since is not None
        deadline = self._busy_since + self.timeout_s
        while True:
            try:
                out = self._results.get(timeout=_POLL_S)
                break
            except queue.Empty:
                if not self._thread.is_alive():
                    raise CollectorError(
                        f"collector thread died without a result at iteration {self._tick}"
                    ) from None
                if time.perf_counter() > deadline:
                    self.hung = True
                    raise CollectorError(
                        f"collector thread made no progress for {self.timeout_s:.0f} s at "
                        f"iteration {self._tick} (env.step hung?); giving up on it"
                    ) from None
        self._busy_since = None
        if isinstance(out, _Failure):
            err = out.error
            raise CollectorError(
                f"collector thread failed at iteration {self._tick}: {type(err).__name__}: {err}"
            ) from err
        return out

    @property
    def idle(self) -> bool:
        return self._busy_since is None

    @property
    def mode(self) -> str:
        """How the env steps, for summary.json (a device env's collector says its own)."""
        return "collector_thread"

    @property
    def overlap(self) -> str:
        """What runs the tick beside the update, for summary.json: this thread."""
        return "collector_thread"

    def stop(self) -> None:
        """Ask an idle thread to exit; a hung or busy one is abandoned (it is a daemon)."""
        if self._thread is None or not self._thread.is_alive():
            return
        if self.idle and not self.hung:
            self._requests.put(None)
            self._thread.join(timeout=5.0)

    def close(self) -> None:
        """Let an in-flight tick finish, then stop the thread (before the env is closed)."""
        self.drain()
        self.stop()

    def drain(self) -> None:
        """Let an in-flight tick finish (bounded by timeout_s) so the env can be closed safely."""
        if self._thread is None or self.idle or self.hung:
            return
        try:
            self.wait()
        except CollectorError:
            pass
