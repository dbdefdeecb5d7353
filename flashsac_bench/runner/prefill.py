"""The random-action iterations, stepped while the learner compiles (run.prefill_during_cold_start).

Before learning starts, an iteration only acts randomly, steps the envs and stores the tick: the
learner is idle. A fresh run can therefore step those iterations on a thread while the main
thread builds its cold start (compile, capture), then store the kept ticks in order once the
cold start is done. The numbers stay the same as stepping them in the loop:

- the random actions come from a host twin of the learner's counter RNG (`CounterRNG.host_twin`:
  same key, same counter, exact integer arithmetic; `2u - 1` of a 24-bit u is exact in float32),
  so they are the draws the learner would have made, bit for bit; afterwards the learner's
  counter is advanced past them;
- the ticks are packed by the collector's own `pack_tick` and stored in tick order, each one's
  reward statistics included, before the first update (which in the loop also sees every
  earlier tick).

The thread makes no CUDA call (host RNG, pageable copies), so it cannot disturb the graph
captures the main thread makes meanwhile. What changes is only when the iterations run: the
thread shares the GIL and the CPU with the compile, and the walk's clock (rows' time_s,
setup_s) starts with the first prefilled iteration.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import torch

from flashsac_bench.envs.api import VecEnv
from flashsac_bench.learner.learner import FlashSACLearner
from flashsac_bench.runner.collector import CollectorError, Staging, TickResult, pack_tick
from flashsac_bench.runner.records import IterationMarks, reads_env_metrics

_POLL_S = 0.25


@dataclass(frozen=True)
class PrefilledTick:
    """One random-action iteration, stepped and packed, waiting to be stored."""

    iteration: int
    rows: torch.Tensor  # the tick's packed slab (an owned host copy)
    tick: TickResult
    marks: IterationMarks


class Prefill:
    """A thread stepping iterations [0, iterations) with random actions (see the module)."""

    def __init__(
        self,
        env: VecEnv,
        staging: Staging,
        learner: FlashSACLearner,
        iterations: int,
        log_every: int,
        total_iterations: int,
        timeout_s: float,
    ) -> None:
        self.env, self.staging, self.learner = env, staging, learner
        self.iterations = iterations
        self.log_every, self.total = log_every, total_iterations
        self.timeout_s = timeout_s
        # Taken now, before the cold start runs (and undoes) its warm-up draws.
        self._rng = learner.state.rng.host_twin()
        self.ticks: list[PrefilledTick] = []
        self.error: BaseException | None = None
        self.hung = False
        self.reset_s: float | None = None  # env.reset on the thread (worker processes may start)
        self.t0: float | None = None  # when the first iteration started
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Prefill:
        self._thread = threading.Thread(target=self._loop, name="flashsac-prefill", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        s, n = self.staging, self.staging.num_envs
        s.select(0)
        try:
            # On this thread, so the cold start does not wait for worker processes to start.
            t = time.perf_counter()
            obs, critic_obs = self.env.reset()
            s.set_current(obs, critic_obs, np.zeros(n, dtype=np.float32))
            self.t0 = time.perf_counter()
            self.reset_s = self.t0 - t
            for k in range(self.iterations):
                if self._stop.is_set():
                    return
                start = time.perf_counter()
                s.actions_t.copy_(self.learner.act_random(n, rng=self._rng))
                acted = time.perf_counter()
                want = reads_env_metrics(k, self.log_every, self.total)
                tick = pack_tick(self.env, s, want_metrics=want)
                tick.start_ms = 0.0
                # Pageable numpy memory, explicitly: a pinned allocation is a CUDA call, which
                # could break the main thread's graph capture.
                rows = torch.from_numpy(s.slab.copy())
                done = time.perf_counter()
                marks = IterationMarks(start, acted, acted, acted, acted, tick.end, done)
                self.ticks.append(PrefilledTick(k, rows, tick, marks))
        except BaseException as err:  # noqa: BLE001 - reported by `join`
            self.error = err

    def join(self) -> None:
        """Wait until every tick is in `ticks`; CollectorError if a tick raised or none
        finished for timeout_s (the thread is then abandoned: it is a daemon)."""
        assert self._thread is not None, "join() without start()"
        seen, last = 0, time.perf_counter()
        while self._thread.is_alive():
            self._thread.join(_POLL_S)
            if len(self.ticks) != seen:
                seen, last = len(self.ticks), time.perf_counter()
            elif time.perf_counter() - last > self.timeout_s:
                self.hung = True
                raise CollectorError(
                    f"the prefill made no progress for {self.timeout_s:.0f} s at iteration "
                    f"{len(self.ticks)} (env.step hung?); giving up on it"
                )
        if self.error is not None:
            err = self.error
            what = "reset failed"
            if self.t0 is not None:
                what = f"step failed at iteration {len(self.ticks)}"
            raise CollectorError(f"env {what} (prefill): {type(err).__name__}: {err}") from err

    def advance_rng(self) -> None:
        """Move the learner's counter past the prefill's draws (after the cold start, which
        restores the counter it found)."""
        self.learner.state.rng.counter.copy_(self._rng.counter)

    def cancel(self) -> None:
        """Stop after the tick in flight and wait for it (a hung thread is left, a daemon)."""
        self._stop.set()
        if self._thread is not None and not self.hung:
            self._thread.join(self.timeout_s)


def random_iterations(threshold_rows: int, num_envs: int, iterations: int) -> int:
    """How many iterations of a fresh run act randomly: those before the ring holds
    threshold_rows (the loop's `ring.count >= threshold` at each iteration's start)."""
    return min(-(-threshold_rows // num_envs), iterations)
