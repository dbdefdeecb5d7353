"""The one training loop, for every path / update / hardware combination.

Iteration k (one env step of every env):
  1. action hand-off: the learner acts on the current obs (random actions before learning
     starts) and the actions are copied to a pinned host buffer, then the stream is
     synchronized: the only per-iteration host<->device sync (act and store are small CUDA
     graphs on CUDA, see runner.device_steps). It also guarantees that iteration k-1's
     update, metric copy and CUDA events are complete;
  2. the collector thread is released to step the envs with those actions (packing tick k
     into one of two pinned slabs) ...
  3. ... while the main thread reads iteration k-1's late values (learner GPU time, loss
     metrics) without waiting,
  4. stores tick k-1 from the other slab (run.overlap_store: its
     copy, replay insert and reward statistics), then launches the update cycle on the ring
     -- in that order on one stream, so the update sees every earlier tick -- and copies its
     metric buffer asynchronously into pinned host memory; then builds iteration k-1's row
     (episode statistics, the row with its late values, the progress line) and, when a log
     window is full, writes its TensorBoard point (and checks run.stop_at_walk);
  5. join the collector (without overlap_store, store tick k now). Iteration k's serial part
     ends here; its row waits for iteration k+1 (or a checkpoint, the loop's end, a failure).
Transitions are packed with next_obs = the true final obs.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from flashsac_bench.checks import check_runtime
from flashsac_bench.config.root import Config
from flashsac_bench.envs.api import VecEnv
from flashsac_bench.learner.learner import Dims, FlashSACLearner
from flashsac_bench.runner import lifecycle, training_config
from flashsac_bench.runner.checkpoint_writer import CheckpointWriter
from flashsac_bench.runner.collector import (
    DEFAULT_TIMEOUT_S,
    Collector,
    InlineCollector,
    Staging,
    splits_its_step,
)
from flashsac_bench.runner.device_steps import DeviceSteps
from flashsac_bench.runner.env_factory import EnvFactory, build_env, warn_oversubscription
from flashsac_bench.runner.liveness import Heartbeat
from flashsac_bench.runner.prefill import Prefill, random_iterations
from flashsac_bench.runner.progress import Progress
from flashsac_bench.runner.records import (
    DeferredRow,
    IterationMarks,
    Records,
    RunInfo,
    RunState,
    reads_env_metrics,
)
from flashsac_bench.runner.summary import device_info, git_info, load_summary
from flashsac_bench.runner.writes import write_error

log = logging.getLogger("flashsac_bench.runner")


@dataclass(frozen=True)
class Parts:
    """What setup builds for the loop."""

    env: VecEnv
    learner: FlashSACLearner
    staging: Staging
    steps: DeviceSteps
    collector: Collector | InlineCollector


class Runner:
    def __init__(
        self,
        config: Config,
        run_dir: Path,
        *,
        composed: dict[str, Any] | None = None,
        command: dict[str, Any] | None = None,
        env_factory: EnvFactory | None = None,
        collector_timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.cfg = config
        self.run_dir = Path(run_dir)
        self.env_factory = env_factory
        self.collector_timeout_s = collector_timeout_s
        self.device = torch.device(config.hardware.resolved_device())
        self.threshold = training_config.learning_starts_rows(config)
        self.info = RunInfo(
            composed=composed if composed is not None else asdict(config),
            command=command or {"argv": list(sys.argv), "cwd": os.getcwd()},
            training_config=training_config.static(config),
            device={"device": str(self.device)},
        )
        self.state = RunState()
        self.records = Records(config, self.run_dir, self.info, self.state)
        self.parts: Parts | None = None  # built by run()
        self._resume_payload: dict[str, Any] | None = None  # until setup restores it
        self.writer = CheckpointWriter()  # run.background_checkpoints
        self._run_t0 = time.perf_counter()
        self._progress: Progress | None = None  # the loop's, while it runs
        self._prefill: Prefill | None = None  # run.prefill_during_cold_start, while setup runs

    # ------------------------------------------------------------------ entry
    def run(self) -> dict[str, Any]:
        self._run_t0 = time.perf_counter()  # run.time_limit_s counts from here (incl. setup)
        # Everything that can refuse the run does so before the run dir exists.
        check_runtime(self.cfg, self.env_factory)
        plan = lifecycle.plan_run_resume(self.records)
        if plan.skip:  # run.resume=auto: this run is complete
            return self._existing_summary()
        self._resume_payload, plan.payload = plan.payload, None  # setup drops it once restored
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise write_error(err, self.run_dir, "run dir") from err
        self.info.git = git_info()
        # `closing` undoes setup, however far it got, after a failure has been recorded.
        with lifecycle.Signals() as signals, ExitStack() as closing:
            try:
                heartbeat = Heartbeat(self.run_dir, lambda: self.state.done_iterations)
                closing.callback(heartbeat.start().stop)
                closing.callback(self.writer.close)  # a failed run's last checkpoint completes
                self.records.write_summary()  # status "starting": readers see the run
                self.parts = parts = self._setup(closing)
                with Progress(self.cfg.run.progress, self.cfg.run.log_every) as progress:
                    self._progress = progress
                    self._train(parts, signals, progress)
                self._progress = None
                self._finish(parts, signals)
            except BaseException as err:
                lifecycle.record_failure(self.records, err)
                raise
        return self.records.summary()

    def _existing_summary(self) -> dict[str, Any]:
        try:
            return load_summary(self.run_dir)
        except (OSError, ValueError):
            return self.records.summary()

    # ------------------------------------------------------------------ setup
    def _setup(self, closing: ExitStack) -> Parts:
        c, startup, tc = self.cfg, self.info.startup, self.info.training_config
        torch.set_float32_matmul_precision(c.hardware.matmul_precision)
        if c.hardware.torch_threads > 0:
            torch.set_num_threads(c.hardware.torch_threads)
        cuda = self.device.type == "cuda"

        # An env may return while its workers still start (the G1 env does): they build their
        # shards while this process builds and compiles the learner; env_ready_s is the wait
        # that is left at the first reset.
        t = time.perf_counter()
        env = build_env(self.env_factory, c.task, c.backend, c.run.num_envs, c.run.seed)
        closing.callback(self._close_env, env)
        startup["env_build_s"] = time.perf_counter() - t
        # What the env really runs on (a custom factory may ignore backend.mode).
        tc["env_workers"] = int(getattr(env, "workers", 0))
        if not cuda:
            warn_oversubscription(tc["env_workers"] or tc["env_threads"])
        dims = Dims(env.obs_dim, env.critic_obs_dim, env.action_dim)

        if cuda:  # the CUDA context on its own line of startup (the learner build used to hide it)
            t = time.perf_counter()
            torch.empty(1, device=self.device)
            startup["cuda_init_s"] = time.perf_counter() - t
        t = time.perf_counter()
        learner = FlashSACLearner(
            c.learner,
            c.update,
            dims,
            num_envs=c.run.num_envs,
            batch_size=c.replay.batch_size,
            replay_capacity=c.replay_capacity,
            device=self.device,
            dtype=c.hardware.resolved_dtype(),
            path=c.path,
            seed=c.run.seed,
            gemm_align=c.hardware.resolved_gemm_align(),
        )
        startup["learner_build_s"] = time.perf_counter() - t
        # Graphs die at the run's end, not whenever the garbage collector finds them
        # (flashsac_bench/learner/graphs.py: a late one would break a later run's graphs).
        closing.callback(
            lifecycle.release_quietly, learner.release_graphs, "the update cycle's CUDA graph"
        )
        tc.update(training_config.learner_fields(learner, dims))
        self.info.device = device_info(self.device)

        # A worker process that hangs is reported by the env itself (naming the worker), so the
        # collector's generic timeout must not fire first.
        timeout = self.collector_timeout_s
        if tc["env_workers"]:
            timeout = max(timeout, c.backend.worker_timeout_s + 5.0)
        staging = Staging(learner.ring.layout, c.run.num_envs, pin=cuda)
        prefill = self._start_prefill(env, staging, learner, timeout, closing)

        # Compile / capture before any timing; reported on its own as cold_start_s.
        t = time.perf_counter()
        learner.warmup()  # every path runs (and then undoes) one untimed cycle
        if cuda:
            torch.cuda.synchronize(self.device)
        startup["cold_start_s"] = time.perf_counter() - t
        tc["executor"] = training_config.executor_name(learner)

        if prefill is None:
            t = time.perf_counter()
            obs, critic_obs = env.reset()
            startup["env_ready_s"] = time.perf_counter() - t
            staging.set_current(obs, critic_obs, np.zeros(c.run.num_envs, dtype=np.float32))
            self._restore(learner, env, staging)
        else:
            t = time.perf_counter()
            prefill.join()
            startup["prefill_wait_s"] = time.perf_counter() - t
        # Act and store: captured as CUDA graphs now, so that this too is cold start.
        t = time.perf_counter()
        steps = DeviceSteps(learner, staging, c.run.capture_device_steps)
        closing.callback(lifecycle.release_quietly, steps.release, "the act / store CUDA graphs")
        steps.capture()
        startup["device_steps_capture_s"] = time.perf_counter() - t
        startup["cold_start_s"] += startup["device_steps_capture_s"]
        tc["device_steps"] = steps.mode
        if c.run.checkpoint_every and c.run.background_checkpoints:
            self.writer.reserve_ring(tuple(learner.ring.storage.shape), learner.ring.storage.dtype)
        collector = self._collector(env, staging, timeout)
        tc["collector"] = "thread" if isinstance(collector, Collector) else "inline"
        collector.start()
        closing.callback(collector.close)
        self.records.open_scalars(self.run_dir / "tb" if c.run.tensorboard else None)
        closing.callback(self.records.scalars.close)
        if prefill is not None:
            self._store_prefilled(prefill, steps)
        lifecycle.report_start(self.records, self.threshold)
        return Parts(env, learner, staging, steps, collector)

    def _start_prefill(
        self,
        env: VecEnv,
        staging: Staging,
        learner: FlashSACLearner,
        timeout_s: float,
        closing: ExitStack,
    ) -> Prefill | None:
        """run.prefill_during_cold_start: a fresh run's random-action iterations, started on a
        thread before the cold start (runner.prefill). The run's clock starts with them."""
        run = self.cfg.run
        n = random_iterations(self.threshold, run.num_envs, run.iterations)
        tc = self.info.training_config
        tc["prefill_iterations"] = 0
        if not run.prefill_during_cold_start or self._resume_payload is not None or n == 0:
            return None
        prefill = Prefill(env, staging, learner, n, run.log_every, run.iterations, timeout_s)
        closing.callback(prefill.cancel)  # before the env closes (LIFO)
        self._prefill = prefill.start()
        tc["prefill_iterations"] = n
        return prefill

    def _store_prefilled(self, prefill: Prefill, steps: DeviceSteps) -> None:
        """Store the prefilled ticks in order and record their rows, as the loop would have;
        then move the learner's RNG past their draws."""
        ring, rec, ticks = steps.learner.ring, self.records, prefill.ticks
        assert prefill.t0 is not None and prefill.reset_s is not None  # join() returned
        rec.loop_t0 = prefill.t0  # the run's clock starts with the first prefilled iteration
        self.info.startup["env_ready_s"] = prefill.reset_s
        for p in ticks:
            t = time.perf_counter()
            steps.store(p.rows)
            insert_ms = (time.perf_counter() - t) * 1e3
            ring.advance(self.cfg.run.num_envs)
            rec.defer(DeferredRow(p.iteration, False, p.tick, p.marks, insert_ms, ring.count))
            rec.record_deferred(None, None)
            rec.flush_due()
        prefill.advance_rng()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        n, span = len(ticks), ticks[-1].marks.stored - prefill.t0 if ticks else 0.0
        ticks.clear()  # the host copies of the ticks (~86 MB at 1024 envs): stored now
        self.state.done_iterations = n
        log.info(
            "stepped the %d random-action iterations during the cold start (prefill %.2f s, "
            "waited %.2f s for it after the cold start)",
            n,
            span,
            self.info.startup["prefill_wait_s"],
        )

    def _collector(
        self, env: VecEnv, staging: Staging, timeout_s: float
    ) -> Collector | InlineCollector:
        """run.collector_thread: the collector thread, or (false, where the env splits its step
        across worker processes) the main thread itself."""
        if self.cfg.run.collector_thread:
            return Collector(env, staging, timeout_s)
        if splits_its_step(env):
            return InlineCollector(env, staging)
        log.warning(
            "run.collector_thread=false needs worker processes (backend.mode=processes) and an "
            "env with step_begin / step_end; this env (%s, %d workers) is stepped by the "
            "collector thread",
            type(env).__name__,
            int(getattr(env, "workers", 0)),
        )
        return Collector(env, staging, timeout_s)

    def _restore(self, learner: FlashSACLearner, env: VecEnv, staging: Staging) -> None:
        """Continue from run.resume's checkpoint, if any (then drop it: the learner, ring and
        env hold copies)."""
        payload, self._resume_payload = self._resume_payload, None
        if payload is not None:
            lifecycle.restore(payload, learner, env, staging, self.records, self.threshold)

    def _close_env(self, env: VecEnv) -> None:
        # A hung collector (or prefill) thread may still be inside env.step: leave the env to
        # the exit.
        if self._prefill is not None and self._prefill.hung:
            return
        if self.parts is None or not self.parts.collector.hung:
            lifecycle.close_env(env)

    # ------------------------------------------------------------------ the loop
    def _train(self, p: Parts, signals: lifecycle.Signals, progress: Progress) -> None:
        c, st, rec = self.cfg, self.state, self.records
        learner, collector, steps, staging = p.learner, p.collector, p.steps, p.staging
        cuda = self.device.type == "cuda"
        ring = learner.ring
        iterations, log_every = c.run.iterations, c.run.log_every
        limit = c.run.time_limit_s
        overlap = c.run.overlap_store
        st.status = "running"
        rec.write_summary()
        # run.prefill_during_cold_start: the first iterations began during setup, and so did
        # the clock.
        rec.loop_t0 = rec.loop_t0 or time.perf_counter()
        # Wall seconds from the runner's start to its first iteration: what "since start"
        # adds to the loop's time_s (the startup parts above leave out the small steps between).
        rec.setup_s = rec.loop_t0 - self._run_t0
        for k in range(st.done_iterations, iterations):
            if signals.requested or st.stopped_by:  # st.stopped_by: run.stop_at_walk
                break
            if limit is not None and time.perf_counter() - self._run_t0 >= limit:
                st.stopped_by = f"run.time_limit_s={limit:g} reached after {k} iterations"
                log.info("%s: stopping", st.stopped_by)
                break
            start = time.perf_counter()
            learning = ring.count >= self.threshold
            # 1. action hand-off (the one sync per iteration)
            if learning or st.policy_refill:
                steps.act()
            else:
                steps.act_random()
            acted = time.perf_counter()
            # 2. collector steps the envs ...
            staging.select(k % Staging.SLABS if overlap else 0)
            released = time.perf_counter()
            collector.submit(k, want_metrics=reads_env_metrics(k, log_every, iterations))
            # 3. iteration k-1's late values are complete (the hand-off synced past its
            # update); read them while the envs step, before the next update overwrites them
            late = self._late_values(p)
            # 4. ... and tick k-1 is stored (run.overlap_store) and the learner updates from
            # the ring, in that order on one stream: the update sees every earlier tick.
            insert_ms = steps.flush_store()
            update_start = time.perf_counter()
            if learning:
                steps.update()
            update_end = time.perf_counter()
            # Iteration k-1's row and TensorBoard's window point, while the envs step.
            rec.record_deferred(late, progress)
            rec.flush_due()
            # 5. join; store now, or (overlap) in the next iteration while the envs step
            tick = collector.wait()
            joined = time.perf_counter()
            ring.advance(c.run.num_envs)  # host mirror: tick k counts from k+1 on
            steps.store_later(staging.index)
            if not overlap:
                insert_ms += steps.flush_store()
            marks = IterationMarks(
                start, acted, released, update_start, update_end, joined, time.perf_counter()
            )
            rec.defer(DeferredRow(k, learning, tick, marks, insert_ms, ring.count))
            st.done_iterations = k + 1
            every = c.run.checkpoint_every
            if every and st.done_iterations % every == 0 and st.done_iterations < iterations:
                self._checkpoint(p, background=c.run.background_checkpoints)
            elif self.writer.busy:
                self._collect_checkpoint(wait=False)
        steps.flush_store()
        if cuda:
            torch.cuda.synchronize(self.device)
        rec.record_deferred(self._late_values(p), progress)
        rec.flush_window()

    def _late_values(self, p: Parts) -> tuple[float | None, dict[str, float] | None] | None:
        """The deferred row's learner time and losses, if its iteration learned (call after a
        sync past its update: the next action hand-off, or a device synchronize)."""
        d = self.records.deferred
        return p.steps.late_values() if d is not None and d.learning else None

    # ------------------------------------------------------------------ checkpoints, ending
    def _checkpoint(self, p: Parts, *, background: bool = False) -> None:
        """Snapshot the run (every tick stored, every row final) and write it inline, or on the
        writer's thread while training goes on (runner.checkpoint_writer)."""
        t = time.perf_counter()
        self._collect_checkpoint(wait=True)  # one write at a time; a failed one raises here
        p.steps.flush_store()  # the checkpoint's ring holds every finished tick
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.records.record_deferred(self._late_values(p), self._progress)
        path, payload = lifecycle.checkpoint_snapshot(
            p.learner, p.env, p.staging, self.records, self.writer.ring_copy
        )
        info = {"iteration": payload["iteration"], "path": str(path), "background": background}
        if background:
            info["blocking_s"] = time.perf_counter() - t
            self.writer.start(lambda: lifecycle.save_snapshot(path, payload), info)
            return
        lifecycle.save_snapshot(path, payload)
        s = time.perf_counter() - t
        lifecycle.note_checkpoint(self.records, {**info, "s": s, "blocking_s": s})

    def _collect_checkpoint(self, *, wait: bool) -> None:
        """List the background write in the summary once it is done (raise its error)."""
        done = self.writer.collect(wait=wait)
        if done is not None and "path" in done:  # not the buffer's reservation
            done["s"] = done["blocking_s"] + done.pop("write_s")
            lifecycle.note_checkpoint(self.records, done)

    def _finish(self, p: Parts, signals: lifecycle.Signals) -> None:
        lifecycle.end_status(self.state, self.cfg.run.iterations, signals)
        self._checkpoint(p)
        lifecycle.report_end(self.records, signals)
