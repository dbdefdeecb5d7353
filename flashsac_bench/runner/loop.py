"""The training loop, for every path / update / hardware combination: `Runner.learn`.

Iteration k (one env step of every env):
  act:     the learner acts on the current obs (random actions before learning starts) and the
           actions reach the pinned host buffer: the iteration's one host <-> device
           synchronization (act and store are small CUDA graphs on CUDA, runner.device_steps).
           It also completes iteration k-1's update and the copy of its learner time and
           losses;
  collect: the collector thread is released to step the envs with those actions and pack
           tick k's transitions (next_obs = the true final obs) ...
  update:  ... while the learner updates from the ring (every earlier tick is in it), once
           iteration k-1's learner values are read (this update overwrites them);
  log:     iteration k-1's row is built and, when a log window is full, its point written and
           judged (runner.stopping), still while the envs step;
  store:   join the collector and store tick k (replay insert, reward statistics): the
           iteration's serial part ends here;
  checkpoint: every run.checkpoint_every iterations, written while training goes on.
Rows are built one iteration late by design: off the serial path, and complete at once (the
next act has synchronized past the update's values; runner.records). A checkpoint, the loop's
end and a failure build the pending row first.

A device env (envs.contract.api.DeviceVecEnv, the MuJoCo Warp backend) runs the same steps with the
device collector (runner.device_collector): its step and the tick's packing are queued in
collect on a stream of their own that runs beside the update (runner.env_lane; or on the
learner's stream before it), the store is ordered after both, and nothing leaves the device but
the tick's statistics; the actions stay on the device (act synchronizes only so that iteration
k-1's learner values can be read).

Everything the run keeps in its run dir (checkpoints, resume, the writer lock, the heartbeat,
summary.json, the logger's files) goes through one object, runner.run_dir.RunDir: runner.records
makes the rows and the summary's content, and writes no file.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from flashsac_bench.runner import training_config
from flashsac_bench.runner.progress import Progress
from flashsac_bench.runner.records import (
    IterationRecord,
    IterationTimes,
    LearnerValues,
    Records,
    RunInfo,
    RunState,
)
from flashsac_bench.runner.run_dir import RunDir
from flashsac_bench.runner.setup import EnvFactory, Parts, build_parts
from flashsac_bench.runner.stopping import Stop, Stopping

if TYPE_CHECKING:
    from flashsac_bench.config import Config

now = time.perf_counter


class Runner:
    def __init__(
        self,
        config: Config,
        run_dir: Path,
        *,
        composed: dict[str, Any] | None = None,
        command: dict[str, Any] | None = None,
        env_factory: EnvFactory | None = None,
        collector_timeout_s: float | None = None,
    ) -> None:
        self.cfg = config
        self.run_dir = Path(run_dir)
        self.env_factory = env_factory
        self.collector_timeout_s = collector_timeout_s  # None: the collector's default
        self.threshold = training_config.learning_starts_rows(config)
        self.info = RunInfo(
            composed=composed if composed is not None else asdict(config),
            command=command or {"argv": list(sys.argv), "cwd": os.getcwd()},
            training_config=training_config.static(config),
            device={"device": str(torch.device(config.hardware.resolved_device()))},
        )
        self.state = RunState()
        self.records = Records(config, self.run_dir, self.info, self.state)
        self.dir = RunDir(self.records)  # everything the run keeps in its run dir
        self.parts: Parts | None = None  # built by run()
        self._run_t0 = now()
        self._progress: Progress | None = None  # the loop's, while it runs

    # ------------------------------------------------------------------ entry
    def run(self) -> dict[str, Any]:
        self._run_t0 = now()  # run.time_limit_s counts from here (setup included)
        # The config is checked (flashsac_bench.cli); what the run itself can refuse (its
        # resume checkpoint) it refuses before the run dir exists.
        if self.dir.plan(self.env_factory):  # run.resume=auto: this run is complete
            return self.dir.existing_summary()
        with self.dir.held() as (signals, closing):
            self.parts = parts = self._setup(closing)
            stopping = Stopping(self.cfg, self._run_t0, signals)
            with Progress(self.cfg.run.progress, self.cfg.run.log_every) as progress:
                self._progress = progress
                self.learn(parts, stopping, progress)
            self._progress = None
            self.dir.settle_status(signals)  # complete, or interrupted by a signal
            self.save(parts)  # the final checkpoint, inline
            self.dir.report_end(signals)
        return self.records.summary()

    def _setup(self, closing: ExitStack) -> Parts:
        """Build the run's parts (runner.setup; each undone by `closing`) and open its logger."""
        startup = self.info.startup
        # the run dir, its lock, the resume plan (resume_load_s apart), git, the first summary
        startup["before_setup_s"] = now() - self._run_t0 - startup.get("resume_load_s", 0.0)
        parts = build_parts(
            self.cfg,
            self.info,
            closing,
            env_factory=self.env_factory,
            restore=self.dir.restore,
            collector_timeout_s=self.collector_timeout_s,
        )
        self.dir.reserve(parts.learner)  # the host buffer of periodic checkpoints
        t = now()
        self.dir.open_logger(closing)  # TensorBoard, W&B (a resumed run continues its W&B run)
        startup["logger_open_s"] = now() - t
        self.records.report_start(self.threshold)
        return parts

    # ------------------------------------------------------------------ the loop
    def learn(self, p: Parts, stopping: Stopping, progress: Progress) -> None:
        """Iterations until run.iterations, or until `stopping` gives a reason to stop (module
        docstring: act, collect, update, log, store, checkpoint)."""
        learner, steps, collector, records = p.learner, p.steps, p.collector, self.records
        self._start_loop()
        stop: Stop | None = None
        for k in range(self.state.done_iterations, self.cfg.run.iterations):
            if (stop := stopping.check(k)) is not None:
                break
            t = IterationTimes()
            learning = learner.ring.count >= self.threshold
            # act (the one sync per iteration)
            if learning or self.state.policy_refill:
                steps.act()
            else:
                steps.act_random()
            t.acted = now()
            # collect: the collector steps the envs ...
            t.released = now()
            collector.submit(k, want_metrics=records.wants_env_metrics(k))
            # update: ... while the learner updates from the ring
            previous = self._learner_values(p)  # iteration k-1's, before this update
            t.update_start = now()
            if learning:
                with steps.timed_update():
                    learner.update()
            t.update_end = now()
            # log: iteration k-1's row, and the window's point when one is full
            stopping.judge(records.log(previous, progress))
            # store: tick k into the ring (after this update, on one stream: the next sees it)
            tick = collector.wait()
            t.joined = now()
            learner.ring.advance(self.cfg.run.num_envs)  # host mirror: tick k counts from k+1
            steps.store(p.staging.slab_t)
            t.stored = now()
            records.keep(
                IterationRecord(
                    iteration=k,
                    learning=learning,
                    tick=tick,
                    times=t,
                    replay_rows=learner.ring.count,
                )
            )
            self.state.done_iterations = k + 1
            # checkpoint
            if self._checkpoint_due():
                self.save(p, background=True)
            else:
                self.dir.poll()  # a background checkpoint written meanwhile
        if stop is not None and stop.failed:
            raise stop.error()
        self.state.stopped_by = stop.message if stop is not None and stop.complete else None
        self._build_pending_row(p, progress)
        last = stopping.check_last(records.flush_window())  # the last (partial) window too
        if last is not None:
            raise last.error()

    def _start_loop(self) -> None:
        rec = self.records
        self.dir.running()  # status "running", in summary.json
        rec.loop_t0 = now()
        # Wall seconds from the runner's start to its first iteration: what "since start"
        # adds to the loop's time_s (the startup parts leave out the small steps between).
        rec.setup_s = rec.loop_t0 - self._run_t0
        parts = sum(v for k, v in self.info.startup.items() if k != "cold_start_s")
        self.info.startup["other_s"] = max(rec.setup_s - parts, 0.0)

    def _checkpoint_due(self) -> bool:
        every, done = self.cfg.run.checkpoint_every, self.state.done_iterations
        return bool(every) and done % every == 0 and done < self.cfg.run.iterations

    def _learner_values(self, p: Parts) -> LearnerValues | None:
        """The pending row's learner time and losses, if its iteration learned (read after a
        sync past its update: the next action hand-off, or a device synchronize)."""
        pending = self.records.pending
        return p.steps.late_values() if pending is not None and pending.learning else None

    def _build_pending_row(self, p: Parts, progress: Progress | None) -> None:
        """Build the last iteration's row, its learner values read after a device sync
        (between iterations: at a checkpoint and the loop's end)."""
        if p.learner.device.type == "cuda":
            torch.cuda.synchronize(p.learner.device)
        self.records.build_row(self._learner_values(p), progress)

    # ------------------------------------------------------------------ checkpoints, ending
    def save(self, p: Parts, *, background: bool = False) -> None:
        """Checkpoint the run (runner.run_dir) once every row is built."""
        t0 = now()
        self.dir.wait_for_write()  # one write at a time; a failed background write raises here
        self._build_pending_row(p, self._progress)
        self.dir.checkpoint(p.learner, p.env, p.staging, background=background, t0=t0)
