"""The training loop, for every path / update / hardware combination.

Iteration k (one env step of every env):
  1. act: the learner acts on the current obs (random actions before learning starts) and the
     actions reach the pinned host buffer: the iteration's one host <-> device synchronization
     (act and store are small CUDA graphs on CUDA, see runner.device_steps). It also completes
     iteration k-1's update, metric copy and timing events;
  2. collect: the collector thread is released to step the envs with those actions and pack
     tick k's transitions (next_obs = the true final obs) ...
  3. update: ... while the main thread launches the update cycle on the ring (every earlier
     tick is in it), then builds iteration k-1's row from its late values (learner time,
     losses: readable since step 1) and, when a log window is full, writes its TensorBoard
     point and judges it (runner.stopping);
  4. store: join the collector and store tick k (replay insert, reward statistics). Iteration
     k's serial part ends here.
Rows are deferred by design: iteration k's row is built during iteration k+1 while the envs
step, off the serial path (or at a checkpoint, the loop's end, a failure; runner.records).

A device env (envs.api.DeviceVecEnv, the MuJoCo Warp backend) runs the same four steps with
the device collector (runner.device_collector): its step and the tick's packing are queued in
step 2 on a stream of their own that runs beside the update of step 3 (runner.env_lane; or on
the learner's stream before it), the store of step 4 is ordered after both, and nothing leaves
the device but the tick's statistics; the actions stay on the device (step 1 synchronizes only
so that iteration k-1's late values can be read).
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

from flashsac_bench.config.root import Config
from flashsac_bench.envs.api import DeviceVecEnv, VecEnv
from flashsac_bench.learner.learner import Dims, FlashSACLearner
from flashsac_bench.runner import lifecycle, setup, training_config
from flashsac_bench.runner.checkpoint_writer import CheckpointWriter
from flashsac_bench.runner.collector import DEFAULT_TIMEOUT_S, Collector, Staging
from flashsac_bench.runner.device_collector import DeviceCollector, DeviceStaging
from flashsac_bench.runner.device_steps import DeviceSteps
from flashsac_bench.runner.env_factory import EnvFactory, build_env
from flashsac_bench.runner.liveness import Heartbeat
from flashsac_bench.runner.progress import Progress
from flashsac_bench.runner.records import (
    DeferredRow,
    IterationMarks,
    Records,
    RunInfo,
    RunState,
    reads_env_metrics,
)
from flashsac_bench.runner.stopping import Stopping
from flashsac_bench.runner.summary import device_info, git_info, load_summary
from flashsac_bench.runner.writes import write_error

log = logging.getLogger("flashsac_bench.runner")


@dataclass(frozen=True)
class Parts:
    """What setup builds for the loop."""

    env: VecEnv | DeviceVecEnv
    learner: FlashSACLearner
    staging: Staging | DeviceStaging
    steps: DeviceSteps
    collector: Collector | DeviceCollector


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

    # ------------------------------------------------------------------ entry
    def run(self) -> dict[str, Any]:
        self._run_t0 = time.perf_counter()  # run.time_limit_s counts from here (incl. setup)
        # The config is checked (flashsac_bench.cli); what the run itself can refuse (its
        # resume checkpoint) it refuses before the run dir exists.
        plan = lifecycle.plan_run_resume(self.records, self.env_factory)
        if plan.skip:  # run.resume=auto: this run is complete
            return self._existing_summary()
        self._resume_payload, plan.payload = plan.payload, None  # setup drops it once restored
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise write_error(err, self.run_dir, "run dir") from err
        # One live writer per run dir, from here to the end (released last).
        run_dir_lock = lifecycle.hold_run_dir(self.records, plan)
        self.info.git = git_info()
        # `closing` undoes setup, however far it got, after a failure has been recorded.
        with run_dir_lock, lifecycle.run_signals(self.records) as signals, ExitStack() as closing:
            try:
                heartbeat = Heartbeat(self.run_dir, lambda: self.state.done_iterations)
                closing.callback(heartbeat.start().stop)
                closing.callback(self.writer.close)  # a failed run's last checkpoint completes
                self.records.write_summary()  # status "starting": readers see the run
                self.parts = parts = self._setup(closing)
                stopping = Stopping(self.cfg, self._run_t0, signals)
                with Progress(self.cfg.run.progress, self.cfg.run.log_every) as progress:
                    self._progress = progress
                    self._train(parts, stopping, progress)
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
        # the run dir, its lock, the resume plan (resume_load_s apart), git, the first summary
        startup["before_setup_s"] = (
            time.perf_counter() - self._run_t0 - startup.get("resume_load_s", 0.0)
        )
        torch.set_float32_matmul_precision(c.hardware.matmul_precision)
        if c.hardware.torch_threads > 0:
            torch.set_num_threads(c.hardware.torch_threads)
        cuda = self.device.type == "cuda"

        # An env may return while its workers still start (the G1 env does): they build their
        # shards while this process builds and compiles the learner; env_ready_s is the wait
        # that is left at the first reset.
        t = time.perf_counter()
        lifecycle.phase("env build")  # what an interrupt and the progress lines name
        env = build_env(self.env_factory, c.task, c.backend, c.run.num_envs, c.run.seed)
        closing.callback(self._close_env, env)
        startup["env_build_s"] = time.perf_counter() - t
        setup.describe_env(env, tc, cuda)
        dims = Dims(env.obs_dim, env.critic_obs_dim, env.action_dim)

        lifecycle.phase("learner build")
        learner = setup.build_learner(c, dims, self.device, startup, closing)
        tc.update(training_config.learner_fields(learner, dims))
        self.info.device = device_info(self.device)

        staging = setup.build_staging(env, learner, c.run.num_envs)

        lifecycle.phase("compile and capture")
        self.info.compile = setup.cold_start(learner, startup)
        tc["executor"] = training_config.executor_name(learner)

        t = time.perf_counter()
        lifecycle.phase("env worker start")
        obs, critic_obs = env.reset()
        startup["env_ready_s"] = time.perf_counter() - t
        beside = getattr(env, "background_build_s", None)  # envs.g1_warp: built on a thread
        if beside is not None:
            self.info.beside["env_build_s"] = beside
        staging.set_current(obs, critic_obs, np.zeros(c.run.num_envs, dtype=np.float32))
        lifecycle.phase("checkpoint restore and step capture")
        self._restore(learner, env, staging)
        steps = setup.build_steps(learner, staging, c.run.capture_device_steps, startup, closing)
        tc["device_steps"] = steps.mode
        if c.run.checkpoint_every and c.run.background_checkpoints:
            self.writer.reserve_ring(tuple(learner.ring.storage.shape), learner.ring.storage.dtype)
        collector = setup.start_collector(
            env, staging, c, self.collector_timeout_s, startup, closing
        )
        tc["env_step"] = collector.mode
        tc["env_overlap"] = (
            collector.overlap if isinstance(collector, DeviceCollector) else "collector_thread"
        )
        t = time.perf_counter()
        self.records.open_logger()  # TensorBoard, W&B (a resumed run continues its W&B run)
        startup["logger_open_s"] = time.perf_counter() - t
        closing.callback(self.records.scalars.close)
        lifecycle.report_start(self.records, self.threshold)
        return Parts(env, learner, staging, steps, collector)

    def _restore(
        self, learner: FlashSACLearner, env: VecEnv | DeviceVecEnv, staging: Staging | DeviceStaging
    ) -> None:
        """Continue from run.resume's checkpoint, if any (then drop it: the learner, ring and
        env hold copies)."""
        payload, self._resume_payload = self._resume_payload, None
        if payload is not None:
            lifecycle.restore(payload, learner, env, staging, self.records, self.threshold)

    def _close_env(self, env: VecEnv | DeviceVecEnv) -> None:
        # A hung collector thread may still be inside env.step: leave the env to the exit.
        if self.parts is None or not self.parts.collector.hung:
            lifecycle.close_env(env)

    # ------------------------------------------------------------------ the loop
    def _train(self, p: Parts, stopping: Stopping, progress: Progress) -> None:
        """Iterations until run.iterations or until `stopping` ends the run (steps 1-4 above)."""
        c, st, rec = self.cfg, self.state, self.records
        learner, collector, steps, staging = p.learner, p.collector, p.steps, p.staging
        ring, iterations = learner.ring, c.run.iterations
        st.status = "running"
        rec.write_summary()
        rec.loop_t0 = time.perf_counter()
        # Wall seconds from the runner's start to its first iteration: what "since start"
        # adds to the loop's time_s (the startup parts above leave out the small steps between).
        rec.setup_s = rec.loop_t0 - self._run_t0
        parts = sum(v for k, v in self.info.startup.items() if k != "cold_start_s")
        self.info.startup["other_s"] = max(rec.setup_s - parts, 0.0)
        for k in range(st.done_iterations, iterations):
            if stopping.due(k):
                break
            start = time.perf_counter()
            learning = ring.count >= self.threshold
            # 1. act (the one sync per iteration)
            if learning or st.policy_refill:
                steps.act()
            else:
                steps.act_random()
            acted = time.perf_counter()
            # 2. collect: the collector steps the envs ...
            released = time.perf_counter()
            collector.submit(k, want_metrics=reads_env_metrics(k, c.run.log_every, iterations))
            # 3. ... while iteration k-1's late values are read (the hand-off synced past its
            # update; this update overwrites them), the learner updates from the ring, and
            # iteration k-1's row and the window's TensorBoard point are built.
            late = self._late_values(p)
            update_start = time.perf_counter()
            if learning:
                steps.update()
            update_end = time.perf_counter()
            rec.record_deferred(late, progress)
            stopping.saw(rec.flush_due())
            # 4. store: join the collector, tick k into the ring (after this update, on one
            # stream: the next update sees it)
            tick = collector.wait()
            joined = time.perf_counter()
            ring.advance(c.run.num_envs)  # host mirror: tick k counts from k+1 on
            steps.store(staging.slab_t)
            stored = time.perf_counter()
            marks = IterationMarks(start, acted, released, update_start, update_end, joined, stored)
            insert_ms = (stored - joined) * 1e3
            rec.defer(DeferredRow(k, learning, tick, marks, insert_ms, ring.count))
            st.done_iterations = k + 1
            every = c.run.checkpoint_every
            if every and st.done_iterations % every == 0 and st.done_iterations < iterations:
                self._checkpoint(p, background=c.run.background_checkpoints)
            elif self.writer.busy:
                lifecycle.collect_checkpoint(rec, self.writer, wait=False)
        st.stopped_by = stopping.reason
        self._record_waiting_row(p, progress)
        stopping.saw_last(rec.flush_window())  # the last (partial) window is judged too

    def _record_waiting_row(self, p: Parts, progress: Progress | None) -> None:
        """Build the last iteration's row, its late values read after a device sync (between
        iterations: at a checkpoint and the loop's end)."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.records.record_deferred(self._late_values(p), progress)

    def _late_values(self, p: Parts) -> tuple[float | None, dict[str, float] | None] | None:
        """The waiting row's learner time and losses, if its iteration learned (read after a
        sync past its update: the next action hand-off, or a device synchronize)."""
        d = self.records.deferred
        return p.steps.late_values() if d is not None and d.learning else None

    # ------------------------------------------------------------------ checkpoints, ending
    def _checkpoint(self, p: Parts, *, background: bool = False) -> None:
        """Snapshot the run and write it (runner.lifecycle), once the waiting row is built."""
        t = time.perf_counter()
        # One write at a time; a failed background write raises here.
        lifecycle.collect_checkpoint(self.records, self.writer, wait=True)
        self._record_waiting_row(p, self._progress)
        lifecycle.write_checkpoint(
            self.records, self.writer, p.learner, p.env, p.staging, background=background, t0=t
        )

    def _finish(self, p: Parts, signals: lifecycle.Signals) -> None:
        lifecycle.end_status(self.state, self.cfg.run.iterations, signals)
        self._checkpoint(p)
        lifecycle.report_end(self.records, signals)
