"""Collecting from a device env (envs.contract.api.DeviceVecEnv): its step and the tick's rows,
queued on the learner's device, no host staging.

The counterpart of runner.collector for an env whose state lives on the learner's device (the
MuJoCo Warp backend). The loop drives both alike (submit, then wait; runner.loop):

  submit: pack the tick's first columns (the obs acted on, the actions) into the device slab,
          step the env, pack its outputs (next obs = the true final obs) and make the current
          obs and dones the step's; the tick's few statistics (reward and term means, the
          finished episodes) go to the host by one asynchronous copy. Nothing waits: the tick
          runs in its lane (runner.env_lane), beside the update the loop launches next on a
          stream of its own (or a thread, on a CPU device), or before it on one stream.
  wait:   order the caller's stream after the tick, wait for the statistics' copy (an event),
          then the tick's facts as the thread's TickResult.

The slab then goes to the replay ring by the store step (runner.device_steps), after the update,
so the update sees the ring as in the threaded loop: every tick before this one. On CUDA the
env's step replays CUDA graphs (DeviceVecEnv.capture) and the two packing steps are small graphs
of their own (a capture that fails warns and runs them eagerly); env_step_ms /
collector_cycle_ms are then device time measured by CUDA events in the tick's lane. On a CPU
device everything runs as ordinary calls, timed by the clock.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch

from flashsac_bench.envs.contract.api import DeviceEnvStep, DeviceVecEnv
from flashsac_bench.learner.graphs import GraphSet
from flashsac_bench.learner.replay import RowLayout
from flashsac_bench.runner.collector import TickResult
from flashsac_bench.runner.env_lane import Lane

log = logging.getLogger(__name__)


class DeviceStaging:
    """Staging's buffers on the learner's device: the tick's slab (one replay row per env, laid
    out like the ring, `cols` its column views), the current obs and dones the learner acts on,
    and the actions it writes. The act / store steps read and write them where they are."""

    def __init__(self, layout: RowLayout, num_envs: int, device: torch.device) -> None:
        def alloc(*shape: int) -> torch.Tensor:
            return torch.zeros(shape, dtype=torch.float32, device=device)

        self.layout, self.num_envs, self.device = layout, num_envs, device
        self.slab_t = alloc(num_envs, layout.width)
        self.cols = {name: self.slab_t[:, a:b] for name, (a, b) in layout.spans.items()}
        self.obs_t = alloc(num_envs, layout.obs_dim)
        self.critic_obs_t = alloc(num_envs, layout.critic_obs_dim)
        self.dones_t = alloc(num_envs)
        self.actions_t = alloc(num_envs, layout.action_dim)

    def set_current(self, obs: object, critic_obs: object, dones: object) -> None:
        for target, value in ((self.obs_t, obs), (self.critic_obs_t, critic_obs)):
            target.copy_(torch.as_tensor(value))
        self.dones_t.copy_(torch.as_tensor(dones))

    def state_dict(self) -> dict[str, np.ndarray]:
        """Host copies, the same entries as Staging's (a checkpoint holds either)."""
        return {
            "obs": self.obs_t.cpu().numpy().copy(),
            "critic_obs": self.critic_obs_t.cpu().numpy().copy(),
            "dones": self.dones_t.cpu().numpy().copy(),
        }

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        self.set_current(state["obs"], state["critic_obs"], state["dones"])


class DeviceCollector:
    """Steps a DeviceVecEnv with staging's actions and packs each tick into staging's slab, in
    `lane` (serial when None)."""

    hung = False  # a tick that hangs is the device's: nothing the loop could stop

    def __init__(self, env: DeviceVecEnv, staging: DeviceStaging, lane: Lane | None = None) -> None:
        self.env, self.staging = env, staging
        self.lane = lane if lane is not None else Lane()
        n, dev = staging.num_envs, staging.device
        self.cuda = dev.type == "cuda"
        self._terms = 0  # reward terms, known after the first step (capture or submit)
        self._stats: torch.Tensor | None = None
        self._host: torch.Tensor | None = None
        self._num_envs = n
        self.graphs = GraphSet()  # pack_in / pack_out; destroyed only by release()
        self._events = [torch.cuda.Event(enable_timing=True) for _ in range(3)] if self.cuda else []
        # The submitted tick's want_metrics; perf_counter() at the tick's start, before and
        # after the env step and at its end (on CUDA: when each was queued), set by the tick.
        self._pending: bool | None = None
        self._stamps = (0.0, 0.0, 0.0, 0.0)
        self._term_names: list[str] = []

    # ------------------------------------------------------------------ the tick
    def _pack_in(self) -> None:
        """The tick's first columns: the obs acted on and the actions (before the step
        overwrites the current obs)."""
        s, c = self.staging, self.staging.cols
        c["obs"].copy_(s.obs_t)
        c["critic_obs"].copy_(s.critic_obs_t)
        c["actions"].copy_(s.actions_t)

    def _pack_out(self, step: DeviceEnvStep) -> None:
        """The step's outputs into the slab, the next act's obs and dones, the tick's stats."""
        s, c = self.staging, self.staging.cols
        c["next_obs"].copy_(step.final_obs)  # the TRUE next obs, also where one just ended
        c["next_critic_obs"].copy_(step.final_critic_obs)
        c["rewards"].copy_(step.reward[:, None])
        c["terminated"].copy_(step.terminated[:, None])
        c["truncated"].copy_(step.truncated[:, None])
        s.obs_t.copy_(step.obs)
        s.critic_obs_t.copy_(step.critic_obs)
        done = step.terminated | step.truncated
        s.dones_t.copy_(done)
        f64 = torch.float64
        terms = torch.stack(list(step.reward_terms.values()), dim=1).to(f64).mean(dim=0)
        stats = torch.cat(
            (
                step.reward.to(f64).mean().reshape(1),
                terms,
                done.to(f64),
                step.episode_return.to(f64),
                step.episode_length.to(f64),
            )
        )
        self._stats_buffer(stats.numel()).copy_(stats)

    def _stats_buffer(self, size: int) -> torch.Tensor:
        if self._stats is None:
            self._stats = torch.zeros(size, dtype=torch.float64, device=self.staging.device)
            self._host = torch.zeros(size, dtype=torch.float64, pin_memory=self.cuda)
            self._terms = size - 1 - 3 * self._num_envs
        return self._stats

    def _run(self, name: str, fn: Callable[[], None]) -> None:
        graph = self.graphs.get(name)
        if graph is not None:
            graph.replay()
        else:
            fn()

    def submit(self, tick: int, want_metrics: bool) -> None:
        """Queue tick `tick` (staging.actions_t must hold the actions, on the device) in the
        lane: the packing of its first columns, the env step, the packing of its outputs
        (eagerly or from the captured graphs) and the copy of its statistics to the host."""
        self._pending = want_metrics
        self.lane.run(self._tick)

    def _tick(self) -> None:
        ev = self._events
        t0 = time.perf_counter()
        if ev:
            ev[0].record()
        self._run("pack_in", self._pack_in)
        t1 = time.perf_counter()
        step = self.env.step(self.staging.actions_t)
        t2 = time.perf_counter()
        if ev:
            ev[1].record()
        self._run("pack_out", lambda: self._pack_out(step))  # a graph reads the same tensors
        assert self._host is not None and self._stats is not None
        self._host.copy_(self._stats, non_blocking=True)
        if ev:
            ev[2].record()
        self._stamps = (t0, t1, t2, time.perf_counter())

    def wait(self) -> TickResult:
        """The tick's facts, once its statistics reached the host; the caller's stream is
        ordered after the tick (the store that follows reads its slab)."""
        assert self._pending is not None, "wait() without submit()"
        want_metrics, self._pending = self._pending, None
        self.lane.join()
        t0, t1, t2, t3 = self._stamps
        ev = self._events
        if ev:  # device time (the first packing counts in the env step's span, on CUDA)
            ev[2].synchronize()
            env_ms = ev[0].elapsed_time(ev[1])
            cycle_ms = ev[0].elapsed_time(ev[2])
        else:  # a CPU device: the tick ran it all
            env_ms, cycle_ms = (t2 - t1) * 1e3, (t3 - t0) * 1e3
        assert self._host is not None
        host = self._host.numpy()
        n, k = self._num_envs, self._terms
        done = host[1 + k : 1 + k + n] > 0
        names = self._term_names
        result = TickResult(
            env_step_ms=env_ms,
            cycle_ms=cycle_ms,
            reward_mean=float(host[0]),
            reward_terms={name: float(v) for name, v in zip(names, host[1 : 1 + k], strict=True)},
            episode_returns=host[1 + k + n : 1 + k + 2 * n][done].copy(),
            episode_lengths=host[1 + k + 2 * n :][done].copy(),
            env_metrics=dict(self.env.metrics()) if want_metrics else None,
        )
        result.end = time.perf_counter()
        return result

    # ------------------------------------------------------------------ setup and the end
    def start(self, capture: bool = True) -> None:
        """Run one tick's packing untimed (the stats' sizes; torch's lazy state) and, on CUDA
        with `capture`, record the env's step and the two packing steps as CUDA graphs. The
        env and staging are left as they were."""
        s, env = self.staging, self.env
        saved = [t.clone() for t in (s.obs_t, s.critic_obs_t, s.dones_t)]
        env_state = env.get_state()
        step = env.step(s.actions_t)
        self._term_names = list(step.reward_terms)
        self._pack_in()
        self._pack_out(step)
        env.set_state(env_state)
        for target, value in zip((s.obs_t, s.critic_obs_t, s.dones_t), saved, strict=True):
            target.copy_(value)
        if not (capture and self.cuda):
            return
        env.capture(s.actions_t)  # False, with a warning, where it cannot: then eager
        try:
            self.graphs.capture("pack_in", self._pack_in)
            self.graphs.capture("pack_out", lambda: self._pack_out(step))
        except Exception as err:  # noqa: BLE001 - any capture failure falls back, loudly
            self.graphs.retire_all()
            warnings.warn(
                f"CUDA graph capture of the device env's packing failed "
                f"({type(err).__name__}: {err}); running it eagerly.",
                RuntimeWarning,
                stacklevel=2,
            )
        torch.cuda.synchronize(s.device)

    @property
    def mode(self) -> str:
        """The env step's mode and whether the packing replays graphs (summary.json)."""
        packing = "cuda_graphs" if self.graphs else "eager"
        return f"{self.env.step_mode}, packing {packing}"

    @property
    def idle(self) -> bool:
        return self._pending is None

    @property
    def overlap(self) -> str:
        """Where the tick runs beside the update (summary.json): serial, stream or thread."""
        return self.lane.mode

    def close(self) -> None:
        """Wait for a tick still running in the lane (a failed run's), then stop the lane."""
        self._pending = None
        self.lane.close()

    def release(self) -> None:
        """Destroy the packing graphs (at the run's end; learner/graphs.py says why)."""
        if self.cuda:
            self.graphs.release(self.staging.device)
