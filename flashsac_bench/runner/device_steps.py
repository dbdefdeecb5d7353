"""What an iteration runs on the device besides the env step.

  act:    observations (host) -> exploration actions (host)
  store:  packed transitions (host) -> replay ring, reward statistics
  update: the learner's update cycle (`with steps.timed_update(): learner.update()`) + an
          async copy of its metrics to the host, timed; the time and the metrics are read one
          iteration late (`late_values`), once the next act has synchronized past them

Act and store are not part of the update cycle, but they sit on the iteration's serial path
(the env step needs the actions; the next act needs the ring and statistics), so their host
cost adds directly to iter_ms. On CUDA each is therefore captured once as its own small CUDA
graph (on every path, so that the paths differ only in how the update cycle runs; a capture
that fails warns and runs them eagerly); per iteration the host then issues three copies and
one replay to act and one copy and one replay to store. The graphs run the same kernels as the
eager calls, bit for bit. Host <-> device copies stay outside the graphs, from and into the
pinned staging buffers.

With a device env (runner.device_collector) the staging buffers are already on the learner's
device: the steps read and write them in place, with no copies, and the act step's
synchronization is only what makes the previous update's late values readable.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

from flashsac_bench.learner.graphs import GraphSet, collect_dead_graphs
from flashsac_bench.learner.learner import FlashSACLearner
from flashsac_bench.runner.collector import Staging
from flashsac_bench.runner.device_collector import DeviceStaging
from flashsac_bench.runner.timing import LearnerTimer

log = logging.getLogger(__name__)


class DeviceSteps:
    def __init__(
        self, learner: FlashSACLearner, staging: Staging | DeviceStaging, capture: bool = True
    ) -> None:
        self.learner, self.staging = learner, staging
        self.cuda = learner.device.type == "cuda"
        self.capture_requested = capture and self.cuda
        ring = learner.ring
        lay = ring.layout
        # Host staging on a CUDA learner: copies in and out around the steps.
        self.copies = self.cuda and staging.slab_t.device.type != "cuda"
        if self.copies:
            n, dev = staging.num_envs, learner.device
            # Static device buffers: the graphs read and write these addresses on every replay.
            self.obs = torch.zeros(n, lay.obs_dim, device=dev)
            self.dones = torch.zeros(n, device=dev)
            self.actions = torch.zeros(n, lay.action_dim, device=dev)
            self.slab = torch.zeros(n, lay.width, device=dev)
        else:  # the steps work on the staging buffers where they are (fixed addresses too)
            self.obs, self.dones, self.actions = staging.obs_t, staging.dones_t, staging.actions_t
            self.slab = staging.slab_t
        if self.cuda:
            self.event = torch.cuda.Event()
        self.r_col = lay.span("rewards")[0]
        self.t_col = lay.span("terminated")[0]
        self.u_col = lay.span("truncated")[0]
        self.graphs = GraphSet()  # act / store; destroyed only by release() (learner/graphs.py)
        self.capture_error: str | None = None
        self.timer = LearnerTimer(learner.device)
        # Pinned on CUDA, so that the metric copy is asynchronous.
        self.metrics_host = torch.zeros(len(learner.metric_names), pin_memory=self.cuda)

    # ------------------------------------------------------------------ the steps
    def _act(self) -> None:
        self.actions.copy_(self.learner.act(self.obs, self.dones))

    def _store(self) -> None:  # CUDA only: the graph body, on the static landing buffer
        self._store_rows(self.slab)

    def _store_rows(self, slab: torch.Tensor) -> None:
        learner = self.learner
        learner.ring.write_rows(slab)
        dones = (slab[:, self.t_col] + slab[:, self.u_col]) > 0
        learner.update_reward_stats(slab[:, self.r_col], dones)

    def act(self) -> None:
        """Policy actions for staging.obs / staging.dones into staging.actions, then wait for
        them: the one host <-> device synchronization of an iteration."""
        s = self.staging
        if self.copies:
            self.obs.copy_(s.obs_t, non_blocking=True)
            self.dones.copy_(s.dones_t, non_blocking=True)
        self._run("act", self._act)
        if self.copies:
            s.actions_t.copy_(self.actions, non_blocking=True)
        if self.cuda:
            self.sync()

    def act_random(self) -> None:
        """Uniform random actions (before learning starts); eager, these iterations are
        excluded from the statistics."""
        actions = self.learner.act_random(self.staging.num_envs)
        self.staging.actions_t.copy_(actions, non_blocking=True)
        if self.cuda:
            self.sync()

    def store(self, host_slab: torch.Tensor) -> None:
        """Write one tick's packed rows (the staging slab) into the ring and update the reward
        statistics; asynchronous on CUDA. The ring's host mirror is the caller's (advance)."""
        if self.cuda:
            if self.copies:
                self.slab.copy_(host_slab, non_blocking=True)
            self._run("store", self._store)
        else:
            self._store_rows(host_slab)

    @contextmanager
    def timed_update(self) -> Iterator[None]:
        """Around the learner's update: time it (CUDA events, or the host clock on the CPU) and
        launch the copy of its metrics (see `late_values`)."""
        self.timer.start()
        yield
        self.metrics_host.copy_(self.learner.metrics_tensor(), non_blocking=True)
        self.timer.stop()

    def update(self) -> None:
        """Launch the update cycle, timed, and the copy of its metrics."""
        with self.timed_update():
            self.learner.update()

    def late_values(self) -> tuple[float | None, dict[str, float]]:
        """The last update's learner_train_ms and metrics; call after the next `act`."""
        return self.timer.read(), self.learner.metrics_from(self.metrics_host)

    def sync(self) -> None:
        self.event.record()
        self.event.synchronize()

    def _run(self, name: str, fn: Callable[[], None]) -> None:
        graph = self.graphs.get(name)
        if graph is not None:
            graph.replay()
        else:
            fn()

    # ------------------------------------------------------------------ capture
    def capture(self) -> None:
        """Capture both steps (before the loop; counted in the cold start). Each is first run
        once on a side stream so that lazy initialization happens outside the capture, and
        everything it wrote is restored: capturing records kernels without running them. The
        uncaptured random-action step's first-use work happens here too: the loop that calls it
        allows no host synchronization, and a first use may compile."""
        self.learner.prepare_random_actions(self.staging.num_envs)
        if not self.capture_requested or self.graphs:
            return
        learner, ring = self.learner, self.learner.ring
        dev = learner.device
        collect_dead_graphs(keep=(self.graphs, *learner.path.graph_sets()))
        state = learner.state.snapshot()
        slots = ring.next_slots(self.staging.num_envs)  # what the warm-up store overwrites
        rows = ring.storage.index_select(0, slots)
        cursor, size = ring.cursor_t.clone(), ring.size.clone()
        try:
            side = torch.cuda.Stream(dev)
            side.wait_stream(torch.cuda.current_stream(dev))
            with torch.cuda.stream(side):
                self._act()
                self._store()
            torch.cuda.current_stream(dev).wait_stream(side)
            torch.cuda.synchronize(dev)
            self._restore(state, slots, rows, cursor, size)
            for name, fn in (("act", self._act), ("store", self._store)):
                self.graphs.capture(name, fn)
        except Exception as err:  # noqa: BLE001 - any capture failure falls back, loudly
            # Kept alive, not destroyed: the learner's cycle graph may share their stream.
            self.graphs.retire_all()
            self.capture_error = f"{type(err).__name__}: {err}"
            warnings.warn(
                f"CUDA graph capture of the act / store steps failed ({self.capture_error}); "
                "running them eagerly.",
                RuntimeWarning,
                stacklevel=2,
            )
            torch.cuda.synchronize(dev)
            self._restore(state, slots, rows, cursor, size)
        else:
            log.info("captured the act and store steps as CUDA graphs")

    def release(self) -> None:
        """Destroy the act / store graphs (at the run's end; learner/graphs.py says why)."""
        if self.cuda:
            self.graphs.release(self.learner.device)

    def _restore(self, state, slots, rows, cursor, size) -> None:
        ring = self.learner.ring
        self.learner.state.restore(state)
        ring.storage.index_copy_(0, slots, rows)
        ring.cursor_t.copy_(cursor)
        ring.size.copy_(size)

    @property
    def mode(self) -> str:
        if self.graphs:
            return "cuda_graphs"
        return "eager (capture failed)" if self.capture_error else "eager"
