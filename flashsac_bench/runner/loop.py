"""The one training loop, for every path / update / hardware combination.

Iteration k (one env step of every env):
  1. action hand-off: the learner acts on the current obs (random actions before learning
     starts) and the actions are copied to a pinned host buffer, then the stream is
     synchronized: the only per-iteration host<->device sync (act and store are small CUDA
     graphs on CUDA, see runner.device_steps). It also guarantees that iteration k-1's
     update, metric copy and CUDA events are complete, so
  2. iteration k-1's late values (learner GPU time, loss metrics) are read without waiting;
  3. the collector thread is released to step the envs with those actions (packing tick k
     into one of two pinned slabs) ...
  4. ... while the main thread stores tick k-1 from the other slab (run.overlap_store: its
     copy, replay insert and reward statistics), then launches the update cycle on the ring
     -- in that order on one stream, so the update sees every earlier tick -- and copies its
     metric buffer asynchronously into pinned host memory;
  5. join the collector (without overlap_store, store tick k now).
Transitions are packed with next_obs = the true final obs.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from flashsac_bench.checks import check_runtime
from flashsac_bench.cli_errors import debug_enabled
from flashsac_bench.config.backend import EnvPlan
from flashsac_bench.config.root import Config
from flashsac_bench.envs.api import VecEnv
from flashsac_bench.learner.learner import Dims, FlashSACLearner
from flashsac_bench.runner.checkpoint import checkpoint_path, is_learner_only, save_checkpoint
from flashsac_bench.runner.collector import DEFAULT_TIMEOUT_S, Collector, Staging, TickResult
from flashsac_bench.runner.device_steps import DeviceSteps
from flashsac_bench.runner.env_factory import EnvFactory, resolve_env_factory
from flashsac_bench.runner.liveness import (
    HEARTBEAT_EVERY_S,
    HEARTBEAT_NAME,
    Heartbeat,
    writer_identity,
)
from flashsac_bench.runner.progress import Progress
from flashsac_bench.runner.resume import ResumePlan, plan_resume, resume_command
from flashsac_bench.runner.scalars import Scalars
from flashsac_bench.runner.summary import (
    SUMMARY_FORMAT,
    SUMMARY_NAME,
    TIMING_SEMANTICS,
    device_info,
    git_info,
    load_summary,
    select_rows,
    timing_block,
    write_json,
)
from flashsac_bench.runner.timing import LearnerTimer
from flashsac_bench.runner.writes import write_error

log = logging.getLogger("flashsac_bench.runner")

# Finished episodes the running return / length means are taken over (UniLab uses 100).
EPISODE_WINDOW = 100
METRIC_KEYS = (
    "critic_loss",
    "actor_loss",
    "entropy",
    "temperature_loss",
    "temperature",
    "reward_scale",
    "q_mean",
    "critic_lr",
    "actor_lr",
    "critic_skipped",
    "actor_skipped",
)


class _Signals:
    """First SIGINT / SIGTERM: stop at the end of the current iteration (then checkpoint and a
    partial summary). A second one raises KeyboardInterrupt at once."""

    def __init__(self) -> None:
        self.requested: str | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if self.requested is None:
            self.requested = name
            log.warning("%s: stopping after this iteration (send again to abort at once)", name)
            return
        raise KeyboardInterrupt(name)

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


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
        self.composed = composed if composed is not None else asdict(config)
        self.command = command or {"argv": list(sys.argv), "cwd": os.getcwd()}
        self.env_factory = env_factory
        self.collector_timeout_s = collector_timeout_s
        n = config.run.num_envs
        self.num_envs = n
        self.threshold = max(config.replay.learning_starts * n, config.replay.batch_size)
        self.rows_all: list[dict[str, Any]] = []
        self.status, self.reason = "starting", None
        self.startup: dict[str, float] = {}
        self.start_iteration = self.done_iterations = 0
        self.resumed_from: str | None = None
        self.checkpoints: list[dict[str, Any]] = []  # written by this process
        self.env: VecEnv | None = None
        self.learner: FlashSACLearner | None = None
        self.collector: Collector | None = None
        self.scalars: Scalars | None = None
        self.returns: deque[float] = deque(maxlen=EPISODE_WINDOW)
        self.lengths: deque[float] = deque(maxlen=EPISODE_WINDOW)
        self.training_config = self._static_training_config()
        self._pending: dict[str, Any] | None = None
        self._pending_store: int | None = None  # staging slab whose tick is not stored yet
        self._window: list[dict[str, Any]] = []
        self._window_terms: list[dict[str, float]] = []
        self._env_metrics: dict[str, float] = {}
        self._loop_t0: float | None = None
        self._run_t0 = time.perf_counter()
        self.stopped_by: str | None = None  # set when run.time_limit_s ends the loop early
        # Resumed from a learner-only checkpoint: the loaded policy acts while the replay refills.
        self.policy_refill = False
        self.device = torch.device(config.hardware.resolved_device())
        self._device_info: dict[str, Any] = {"device": str(self.device)}
        self._git: dict[str, Any] = {}
        self._resume: ResumePlan | None = None
        self.heartbeat: Heartbeat | None = None
        self.writer = {**writer_identity(), "started_unix": time.time()}

    # ------------------------------------------------------------------ entry
    def run(self) -> dict[str, Any]:
        self._run_t0 = time.perf_counter()  # run.time_limit_s counts from here (incl. setup)
        # Everything that can refuse the run does so before the run dir exists.
        check_runtime(self.cfg, self.env_factory)
        if self._prepare_resume():
            return self._existing_summary()
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise write_error(err, self.run_dir, "run dir") from err
        self._git = git_info()
        with _Signals() as signals:
            try:
                self.heartbeat = Heartbeat(self.run_dir, lambda: self.done_iterations).start()
                self._write_summary()  # status "starting": readers see the run (and its writer)
                self._setup()
                with Progress(self.cfg.run.progress, self.cfg.run.log_every) as progress:
                    self._train(signals, progress)
                self._finish(signals)
            except BaseException as err:
                self._record_failure(err)
                raise
            finally:
                self._teardown()
        return self.summary()

    def _prepare_resume(self) -> bool:
        """Load and check run.resume's checkpoint (ResumeError before any work); True when
        run.resume=auto finds this run already complete."""
        t = time.perf_counter()
        plan = plan_resume(self.cfg, self.run_dir, self.training_config)
        for note in plan.notes:
            log.warning(note)
        if plan.skip:
            return True
        if plan.payload is not None:
            self._resume = plan
            self.resumed_from = str(plan.path)
            self.startup["resume_load_s"] = time.perf_counter() - t
        return False

    def _existing_summary(self) -> dict[str, Any]:
        try:
            return load_summary(self.run_dir)
        except (OSError, ValueError):
            return self.summary()

    # ------------------------------------------------------------------ setup
    def _static_training_config(self) -> dict[str, Any]:
        c = self.cfg
        return {
            "iterations": c.run.iterations,
            "summary_last": c.run.summary_last,
            "skip_first": c.run.skip_first,
            "num_envs": c.run.num_envs,
            "batch_size": c.replay.batch_size,
            "replay_buffer_n": c.replay.replay_buffer_n,
            "replay_capacity": c.replay_capacity,
            "learning_starts": c.replay.learning_starts,
            "learning_starts_rows": self.threshold,
            "update": c.update.name,
            "updates_per_step": c.update.updates_per_step,
            "policy_frequency": c.update.policy_frequency,
            "target_frequency": c.update.target_frequency,
            "policy_before_critic": c.update.policy_before_critic,
            "path": c.path.name,
            "compile_mode": c.path.compile_mode,
            "inductor_cudagraphs": c.path.resolved_inductor_cudagraphs(
                c.hardware.resolved_device()
            ),
            "hardware": c.hardware.name,
            "device": c.hardware.resolved_device(),
            "dtype": c.hardware.resolved_dtype(),
            "matmul_precision": c.hardware.matmul_precision,
            "gemm_align": c.hardware.resolved_gemm_align(),
            "torch_threads": c.hardware.torch_threads,
            "backend": c.backend.name,
            **_env_plan_fields(c.backend.plan(c.run.num_envs)),
            "task": c.task.name,
            "seed": c.run.seed,
            "time_limit_s": c.run.time_limit_s,
            "capture_device_steps": c.run.capture_device_steps,
            "overlap_store": c.run.overlap_store,
        }

    def _setup(self) -> None:
        c = self.cfg
        torch.set_float32_matmul_precision(c.hardware.matmul_precision)
        if c.hardware.torch_threads > 0:
            torch.set_num_threads(c.hardware.torch_threads)
        ckpt = self._resume.payload if self._resume is not None else None
        cuda = self.device.type == "cuda"

        t = time.perf_counter()
        factory = resolve_env_factory(self.env_factory)
        env = factory(c.task, c.backend, c.run.num_envs, c.run.seed)
        if not isinstance(env, VecEnv):
            raise TypeError(f"the env factory returned {type(env).__name__}, not a VecEnv")
        self.env = env
        self.startup["env_build_s"] = time.perf_counter() - t
        # What the env really runs on (a custom factory may ignore backend.mode).
        self.training_config["env_workers"] = int(getattr(env, "workers", 0))
        self._warn_oversubscription()
        dims = Dims(env.obs_dim, env.critic_obs_dim, env.action_dim)

        t = time.perf_counter()
        self.learner = learner = FlashSACLearner(
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
        self.startup["learner_build_s"] = time.perf_counter() - t
        self._update_training_config(dims)
        self._device_info = device_info(self.device)

        # Compile / capture before any timing; reported on its own as cold_start_s.
        t = time.perf_counter()
        learner.warmup()  # every path runs (and then undoes) one untimed cycle
        if cuda:
            torch.cuda.synchronize(self.device)
        self.startup["cold_start_s"] = time.perf_counter() - t
        self.training_config["executor"] = self._executor_name()

        self.staging = Staging(learner.ring.layout, c.run.num_envs, pin=cuda)
        obs, critic_obs = env.reset()
        self.staging.set_current(obs, critic_obs, np.zeros(c.run.num_envs, dtype=np.float32))
        if ckpt is not None:
            self._restore(ckpt)
            assert self._resume is not None
            self._resume.payload = ckpt = None  # the learner / ring hold copies now
        # Act and store: captured as CUDA graphs now, so that this too is cold start.
        t = time.perf_counter()
        self.steps = DeviceSteps(learner, self.staging, c.run.capture_device_steps)
        self.steps.capture()
        self.startup["device_steps_capture_s"] = time.perf_counter() - t
        self.startup["cold_start_s"] += self.startup["device_steps_capture_s"]
        self.training_config["device_steps"] = self.steps.mode
        self.metrics_host = torch.zeros(len(learner.metric_names), pin_memory=cuda)
        self.timer = LearnerTimer(self.device)
        # A worker process that hangs is reported by the env itself (naming the worker), so the
        # collector's generic timeout must not fire first.
        timeout = self.collector_timeout_s
        if self.training_config["env_workers"]:
            timeout = max(timeout, c.backend.worker_timeout_s + 5.0)
        self.collector = Collector(env, self.staging, timeout)
        self.collector.start()
        tb = self.run_dir / "tb" if c.run.tensorboard else None
        self.scalars = Scalars(tb, c.run.num_envs)
        log.info(
            "flashsac_bench: %s %s on %s (%s), %d envs, batch %d, %d iterations; "
            "learning starts at %d replay rows; cold start %.2f s; run dir %s",
            c.update.name,
            self.training_config["executor"],
            self._device_info.get("gpu", self.device),
            self.training_config["dtype"],
            c.run.num_envs,
            c.replay.batch_size,
            c.run.iterations,
            self.threshold,
            self.startup["cold_start_s"],
            self.run_dir,
        )

    def _warn_oversubscription(self) -> None:
        if self.device.type != "cpu":
            return
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        learner = torch.get_num_threads()
        env = self.training_config["env_workers"] or self.training_config["env_threads"]
        if cores and learner + env > cores:
            log.warning(
                "learner threads (%d) + env threads (%d) exceed the %d cores this process may "
                "use; OpenMP spin-waits then slow update cycles many-fold while the collector "
                "runs. Set hardware.torch_threads and backend.num_threads to split the cores.",
                learner,
                env,
                cores,
            )

    def _update_training_config(self, dims: Dims) -> None:
        learner = self.learner
        assert learner is not None
        critic_ops = [op for op in learner.ops if op.kind == "critic"]
        self.training_config.update(
            critic_updates_per_iteration=learner.n_critic,
            actor_updates_per_iteration=learner.n_actor,
            # The temperature is updated together with every actor update.
            temperature_updates_per_iteration=learner.n_actor,
            target_updates_per_iteration=sum(op.update_target for op in critic_ops),
            obs_dim=dims.obs,
            critic_obs_dim=dims.critic_obs,
            action_dim=dims.action,
            parameters=learner.num_parameters(),
        )

    def _executor_name(self) -> str:
        ex = self.learner.executor if self.learner else None
        if ex is None:
            return self.cfg.path.name
        if getattr(ex, "fallback", False):
            return "compile (cudagraph capture failed)"
        return str(ex.name)

    def _restore(self, ckpt: dict[str, Any]) -> None:
        assert self.learner is not None
        self.learner.load_state_dict(ckpt["learner"])
        if is_learner_only(ckpt):
            # No replay / env state (a checkpoint converted from unilab-rl, which saves none):
            # the envs start fresh episodes and the ring refills to learning_starts rows with
            # the loaded policy acting before updates continue -- as UniLab's own resume does.
            self.start_iteration = self.done_iterations = int(ckpt["iteration"])
            self.policy_refill = True
            log.warning(
                "resumed from the learner-only checkpoint %s at iteration %d: it holds no "
                "replay or env state, so the replay refills to %d rows (loaded policy acting) "
                "before updates continue",
                self.resumed_from,
                self.start_iteration,
                self.threshold,
            )
            return
        self.learner.ring.load_state_dict(ckpt["replay"])
        self.env.set_state(ckpt["env"])
        self.staging.load_state_dict(ckpt["staging"])
        self.returns.extend(ckpt["episodes"]["returns"])
        self.lengths.extend(ckpt["episodes"]["lengths"])
        self.rows_all = list(ckpt["rows_all"])
        self.start_iteration = self.done_iterations = int(ckpt["iteration"])
        log.info("resumed from %s at iteration %d", self.resumed_from, self.start_iteration)

    # ------------------------------------------------------------------ the loop
    def _train(self, signals: _Signals, progress: Progress) -> None:
        c, learner, collector, steps = self.cfg, self.learner, self.collector, self.steps
        assert learner is not None and collector is not None
        cuda = self.device.type == "cuda"
        ring = learner.ring
        iterations, log_every = c.run.iterations, c.run.log_every
        limit = c.run.time_limit_s
        overlap = c.run.overlap_store
        self.status = "running"
        self._write_summary()
        self._loop_t0 = time.perf_counter()
        for k in range(self.start_iteration, iterations):
            if signals.requested:
                break
            if limit is not None and time.perf_counter() - self._run_t0 >= limit:
                self.stopped_by = f"run.time_limit_s={limit:g} reached after {k} iterations"
                log.info("%s: stopping", self.stopped_by)
                break
            t0 = time.perf_counter()
            learning = ring.count >= self.threshold
            # 1. action hand-off (the one sync per iteration)
            if learning or self.policy_refill:
                steps.act()
            else:
                steps.act_random()
            t1 = time.perf_counter()
            # 2. iteration k-1's late values are complete now
            self._finalize_pending()
            # 3. collector steps the envs ...
            self.staging.select(k % Staging.SLABS if overlap else 0)
            collector.submit(k, want_metrics=(k + 1) % log_every == 0 or k == iterations - 1)
            # 4. ... while tick k-1 is stored (run.overlap_store) and the learner updates from
            # the ring, in that order on one stream: the update sees every earlier tick.
            insert_ms = self._flush_store()
            t2 = time.perf_counter()
            if learning:
                self.timer.start()
                learner.update()
                self.metrics_host.copy_(learner.metrics_tensor(), non_blocking=True)
                self.timer.stop()
            t3 = time.perf_counter()
            # 5. join; store now, or (overlap) in the next iteration while the envs step
            tick = collector.wait()
            t4 = time.perf_counter()
            ring.advance(self.num_envs)  # host mirror: tick k counts from the next iteration on
            self._pending_store = self.staging.index
            if not overlap:
                insert_ms += self._flush_store()
            t5 = time.perf_counter()

            row = self._row(k, learning, tick, insert_ms, t0, t1, t2, t3, t4)
            self.rows_all.append(row)
            if learning:
                self._pending = row  # learner time and losses arrive next iteration
            else:
                self._window.append(row)
            self._log(tick, progress, row)
            t6 = time.perf_counter()
            row["bookkeeping_ms"] = (t6 - t5) * 1e3  # set last: it covers _log, too
            row["iter_ms"] = (t6 - t0) * 1e3
            self.done_iterations = k + 1
            every = c.run.checkpoint_every
            if every and self.done_iterations % every == 0 and self.done_iterations < iterations:
                self._checkpoint()
        self._flush_store()
        if cuda:
            torch.cuda.synchronize(self.device)
        self._finalize_pending()
        self._flush_window()

    def _flush_store(self) -> float:
        """Store the tick waiting in a staging slab, if any; returns the host ms it took."""
        if self._pending_store is None:
            return 0.0
        t = time.perf_counter()
        self.steps.store(self.staging.slabs_t[self._pending_store])
        self._pending_store = None
        return (time.perf_counter() - t) * 1e3

    def _row(
        self, k: int, learning: bool, tick: TickResult, insert_ms: float, *t: float
    ) -> dict[str, Any]:
        t0, t1, t2, t3, t4 = t
        for ret, length in zip(tick.episode_returns, tick.episode_lengths, strict=True):
            self.returns.append(float(ret))
            self.lengths.append(float(length))
        ms = 1e3
        row: dict[str, Any] = {
            "iteration": k,
            "env_steps": (k + 1) * self.num_envs,
            "learning": learning,
            "iter_ms": None,
            "learner_train_ms": None,
            "collector_cycle_ms": tick.cycle_ms,
            "env_step_ms": tick.env_step_ms,
            "action_ms": (t1 - t0) * ms,
            "learner_host_ms": (t3 - t2) * ms if learning else None,
            "collector_wait_ms": (t4 - t3) * ms,
            "insert_ms": insert_ms,
            "bookkeeping_ms": None,
            "replay_rows": self.learner.ring.count if self.learner else None,
            "reward_mean": tick.reward_mean,
            "episodes_done": len(tick.episode_returns),
            "episode_return_mean": float(np.mean(self.returns)) if self.returns else None,
            "episode_length_mean": float(np.mean(self.lengths)) if self.lengths else None,
            "time_s": time.perf_counter() - (self._loop_t0 or t0),
        }
        row.update({key: None for key in METRIC_KEYS})
        self._window_terms.append(tick.reward_terms)
        if tick.env_metrics is not None:
            self._env_metrics = tick.env_metrics
        return row

    def _finalize_pending(self) -> None:
        """Fill the pending row's learner time and losses (their copies are complete)."""
        row, self._pending = self._pending, None
        if row is None or self.learner is None:
            return
        row["learner_train_ms"] = self.timer.read()
        metrics = self.learner.metrics_from(self.metrics_host)
        row.update({key: metrics[key] for key in METRIC_KEYS})
        self._window.append(row)

    def _log(self, tick: TickResult, progress: Progress, row: dict[str, Any]) -> None:
        if len(self._window) >= self.cfg.run.log_every:
            self._flush_window()
        last = self.rows_all[-2] if len(self.rows_all) > 1 else None
        done_rows = [r for r in self.rows_all[-self.cfg.run.log_every - 1 : -1]]
        iter_vals = [r["iter_ms"] for r in done_rows if r.get("iter_ms")]
        iter_ms = float(np.mean(iter_vals)) if iter_vals else None
        learner_ms = next(
            (r["learner_train_ms"] for r in reversed(self.rows_all) if r["learner_train_ms"]),
            None,
        )
        progress.update(
            {
                "iteration": row["iteration"],
                "iterations": self.cfg.run.iterations,
                "learning": row["learning"],
                "reward_mean": row["reward_mean"],
                "episode_return_mean": row["episode_return_mean"],
                "learner_train_ms": learner_ms,
                "collector_cycle_ms": tick.cycle_ms,
                "iter_ms": last["iter_ms"] if last else None,
                "env_steps_per_s": self.num_envs * 1e3 / iter_ms if iter_ms else None,
            }
        )

    def _flush_window(self) -> None:
        if self.scalars is None or not self._window:
            self._window = []
            return
        extra: dict[str, float] = {}
        terms = self._window_terms
        for name in terms[-1] if terms else {}:
            vals = [t[name] for t in terms if name in t]
            extra[f"Reward/{name}"] = float(np.mean(vals))
        for name, value in self._env_metrics.items():
            extra[f"Env/{name}"] = float(value)
        self.scalars.write(self._window, extra)
        self._window, self._window_terms = [], []

    # ------------------------------------------------------------------ checkpoints
    def _checkpoint(self) -> Path:
        assert self.learner is not None
        t = time.perf_counter()
        self._flush_store()  # the checkpoint's ring holds every finished tick
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self._finalize_pending()
        path = checkpoint_path(self.run_dir, self.done_iterations)
        save_checkpoint(
            path,
            {
                "iteration": self.done_iterations,
                "learner": self.learner.state_dict(),
                "replay": self.learner.ring.state_dict(),
                "env": self.env.get_state(),
                "staging": self.staging.state_dict(),
                "episodes": {"returns": list(self.returns), "lengths": list(self.lengths)},
                "rows_all": self.rows_all,
                "training_config": self.training_config,
                "config": self.composed,
            },
        )
        self.checkpoints.append(
            {"iteration": self.done_iterations, "path": str(path), "s": time.perf_counter() - t}
        )
        self._write_summary()
        return path

    # ------------------------------------------------------------------ ending
    def _finish(self, signals: _Signals) -> None:
        if self.done_iterations >= self.cfg.run.iterations or (
            self.stopped_by and not signals.requested
        ):
            self.status, self.reason = "complete", None
        else:
            self.status = "interrupted"
            self.reason = (
                f"interrupted by {signals.requested} after {self.done_iterations} of "
                f"{self.cfg.run.iterations} iterations (checkpoint written)"
            )
        self._checkpoint()
        s = self.summary()
        log.info(
            "%s: learner %s ms, collector %s ms, iter %s ms (medians of %d), overlap %s; %s",
            self.status,
            _r(s["learner_train_ms"]["median"]),
            _r(s["collector_cycle_ms"]["median"]),
            _r(s["iter_ms"]["median"]),
            s["num_samples"],
            _r(s["overlap_efficiency"], 3),
            self.run_dir / SUMMARY_NAME,
        )
        if signals.requested:
            log.warning(
                "%s; continue with: %s", self.reason, resume_command(self.command, self.run_dir)
            )
            raise SystemExit(128 + int(getattr(signal, signals.requested)))

    def _record_failure(self, err: BaseException) -> None:
        if isinstance(err, SystemExit) and self.status == "interrupted":
            return  # _finish already wrote everything
        if isinstance(err, KeyboardInterrupt):
            self.status = "interrupted"
            self.reason = (
                f"KeyboardInterrupt ({err or 'SIGINT'}) during iteration {self.done_iterations}; "
                "no checkpoint (state was mid-iteration)"
            )
        else:
            self.status = "failed"
            self.reason = f"{type(err).__name__}: {err}"
        try:
            self._write_summary()
        except Exception as write_err:  # noqa: BLE001 - never mask the original error
            if debug_enabled():
                log.exception("could not write the partial summary")
            else:
                log.error("could not write the partial summary: %s", write_err)

    def _teardown(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.stop()
        if self.collector is not None:
            self.collector.drain()
            self.collector.stop()
        if self.env is not None and not (self.collector and self.collector.hung):
            try:
                self.env.close()
            except Exception:  # noqa: BLE001
                log.exception("env.close() failed")
        if self.scalars is not None:
            self.scalars.close()

    # ------------------------------------------------------------------ summary
    def summary(self) -> dict[str, Any]:
        c = self.cfg
        rows = select_rows(self.rows_all, c.run.skip_first, c.run.summary_last)
        learning = [r for r in self.rows_all if r.get("learning")]
        last_metrics = next(
            (r for r in reversed(learning) if r.get("critic_loss") is not None), None
        )
        return {
            "format": SUMMARY_FORMAT,
            "complete": self.status == "complete",
            "status": self.status,
            "incomplete_reason": None if self.status == "complete" else self.reason,
            "command": self.command,
            "resume_command": resume_command(self.command, self.run_dir),
            "writer": {
                **self.writer,
                "heartbeat_unix": time.time(),  # when this summary was written
                "heartbeat_file": HEARTBEAT_NAME,
                "heartbeat_every_s": HEARTBEAT_EVERY_S,
            },
            "run_dir": str(self.run_dir),
            "config": self.composed,
            "device": self._device_info,
            "git": self._git,
            "cold_start_s": self.startup.get("cold_start_s"),
            "startup": self.startup,
            "training_config": self.training_config,
            "iterations_planned": c.run.iterations,
            "iterations_done": self.done_iterations,
            "time_limit_s": c.run.time_limit_s,
            "stopped_by": self.stopped_by,
            "warmup_iterations": len(self.rows_all) - len(learning),
            "first_learning_iteration": learning[0]["iteration"] if learning else None,
            "resumed_from": self.resumed_from,
            "resume_iteration": self.start_iteration if self.resumed_from else None,
            "resumed_learner_only": self.policy_refill,
            "last_checkpoint": self.checkpoints[-1]["path"] if self.checkpoints else None,
            "checkpoints": self.checkpoints,
            "num_samples": len(rows),
            "num_samples_all": len(self.rows_all),
            "skip_first": c.run.skip_first,
            "summary_last": c.run.summary_last,
            "summary_first_iteration": rows[0]["iteration"] if rows else None,
            "summary_last_iteration": rows[-1]["iteration"] if rows else None,
            **timing_block(rows, self.num_envs),
            "wall_s": time.perf_counter() - self._loop_t0 if self._loop_t0 else None,
            "final_metrics": (
                {k: last_metrics[k] for k in (*METRIC_KEYS, "reward_mean", "episode_return_mean")}
                if last_metrics
                else None
            ),
            "timing_semantics": TIMING_SEMANTICS,
            "rows": rows,
            "rows_all": self.rows_all,
        }

    def _write_summary(self) -> None:
        write_json(self.run_dir / SUMMARY_NAME, self.summary(), "summary")


def _env_plan_fields(plan: EnvPlan) -> dict[str, Any]:
    return {
        "env_mode": plan.mode,
        "env_workers": plan.workers,
        "env_threads": plan.threads,
    }


def _r(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
