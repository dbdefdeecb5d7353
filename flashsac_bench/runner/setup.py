"""The device parts a run builds before its first iteration, each timed into summary.json's
`startup`: the learner (built, then compiled / captured: the cold start) and the act / store
steps. Whatever holds CUDA graphs is released by `closing` at the run's end, not whenever the
garbage collector finds it (learner/graphs.py: a late release would break a later run's graphs).
"""

from __future__ import annotations

import time
from contextlib import ExitStack

import torch

from flashsac_bench.config.root import Config
from flashsac_bench.learner.learner import Dims, FlashSACLearner
from flashsac_bench.runner.collector import Staging
from flashsac_bench.runner.device_steps import DeviceSteps
from flashsac_bench.runner.lifecycle import release_quietly


def build_learner(
    c: Config, dims: Dims, device: torch.device, startup: dict[str, float], closing: ExitStack
) -> FlashSACLearner:
    """The learner of config `c` for envs of `dims` (not compiled yet: `cold_start`)."""
    if device.type == "cuda":  # the CUDA context on its own line, apart from the learner build
        t = time.perf_counter()
        torch.empty(1, device=device)
        startup["cuda_init_s"] = time.perf_counter() - t
    t = time.perf_counter()
    learner = FlashSACLearner(
        c.learner,
        c.update,
        dims,
        num_envs=c.run.num_envs,
        batch_size=c.replay.batch_size,
        replay_capacity=c.replay_capacity,
        device=device,
        dtype=c.hardware.resolved_dtype(),
        path=c.path,
        seed=c.run.seed,
        gemm_align=c.hardware.resolved_gemm_align(),
    )
    startup["learner_build_s"] = time.perf_counter() - t
    closing.callback(release_quietly, learner.release_graphs, "the update cycle's CUDA graph")
    return learner


def cold_start(learner: FlashSACLearner, startup: dict[str, float]) -> None:
    """Compile / capture the update cycle before any timing (every path runs, then undoes, one
    untimed cycle); cold_start_s."""
    t = time.perf_counter()
    learner.warmup()
    if learner.device.type == "cuda":
        torch.cuda.synchronize(learner.device)
    startup["cold_start_s"] = time.perf_counter() - t


def build_steps(
    learner: FlashSACLearner,
    staging: Staging,
    capture: bool,
    startup: dict[str, float],
    closing: ExitStack,
) -> DeviceSteps:
    """Act and store, captured as CUDA graphs now (run.capture_device_steps), so that this too
    counts as cold start."""
    t = time.perf_counter()
    steps = DeviceSteps(learner, staging, capture)
    closing.callback(release_quietly, steps.release, "the act / store CUDA graphs")
    steps.capture()
    startup["device_steps_capture_s"] = time.perf_counter() - t
    startup["cold_start_s"] += startup["device_steps_capture_s"]
    return steps
