"""Everything a run builds before its first iteration (`build_parts`), each part timed into
summary.json's `startup`: the envs, the learner (built, then compiled / captured: the cold
start), the act / store steps, and the collection that fits the env: a collector thread with
host staging for a VecEnv (MuJoCo on the CPU), or the device collector with staging on the
learner's device for a DeviceVecEnv (MuJoCo Warp). Whatever holds CUDA graphs is released by
`closing` at the run's end, not whenever the garbage collector finds it (learner/graphs.py: a
late release would break a later run's graphs).

`startup`'s parts are disjoint and sum to setup_s (`other_s` is what lies between them);
cold_start_s is the total of the compile / capture parts (learner_warmup_s,
device_steps_capture_s, env_capture_s). summary.json's `compile` says what torch's compiler did
in the learner's warmup: Dynamo's tracing, the backend (AOTAutograd and Inductor, loading from
their caches or compiling) and the caches' hits and misses, and the compiled updates saved by
an earlier process (learner.compile_store): loaded or compiled, and whether the warmup skipped
tracing altogether (`tracing_skipped`).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from flashsac_bench.config.backend import MujocoConfig, WarpOptions
from flashsac_bench.config.root import Config
from flashsac_bench.envs.contract.api import DeviceVecEnv, VecEnv
from flashsac_bench.learner.compile_store import summarize
from flashsac_bench.learner.learner import Dims, FlashSACLearner
from flashsac_bench.runner import training_config
from flashsac_bench.runner.collector import DEFAULT_TIMEOUT_S, Collector, Staging
from flashsac_bench.runner.device_collector import DeviceCollector, DeviceStaging
from flashsac_bench.runner.device_steps import DeviceSteps
from flashsac_bench.runner.env_factory import EnvFactory, build_env, warn_oversubscription
from flashsac_bench.runner.env_lane import make_lane
from flashsac_bench.runner.records import RunInfo
from flashsac_bench.runner.signals import phase
from flashsac_bench.runner.summary import device_info

log = logging.getLogger("flashsac_bench.runner")

# Continue from run.resume's checkpoint (runner.run_dir.RunDir.restore): called once the envs
# are reset, before the act / store steps are captured.
Restore = Callable[[FlashSACLearner, VecEnv | DeviceVecEnv, Staging | DeviceStaging, int], None]


@dataclass(frozen=True)
class Parts:
    """What setup builds for the loop."""

    env: VecEnv | DeviceVecEnv
    learner: FlashSACLearner
    staging: Staging | DeviceStaging
    steps: DeviceSteps
    collector: Collector | DeviceCollector


def build_parts(
    c: Config,
    info: RunInfo,
    closing: ExitStack,
    *,
    env_factory: EnvFactory | None,
    restore: Restore,
    collector_timeout_s: float | None = None,
) -> Parts:
    """The run's parts, in the order their costs overlap best (the env's workers start while
    the learner compiles), each undone by `closing`; `info` gets what each took."""
    startup, tc = info.startup, info.training_config
    device = torch.device(c.hardware.resolved_device())
    torch.set_float32_matmul_precision(c.hardware.matmul_precision)
    if c.hardware.torch_threads > 0:
        torch.set_num_threads(c.hardware.torch_threads)
    cuda = device.type == "cuda"
    built: list[Parts] = []  # the parts, once all are built (closing the env asks the collector)

    # An env may return while its workers still start (the G1 env does): they build their
    # shards while this process builds and compiles the learner; env_ready_s is the wait
    # that is left at the first reset.
    t = time.perf_counter()
    phase("env build")  # what an interrupt and the progress lines name
    env = build_env(env_factory, c.task, c.backend, c.run.num_envs, c.run.seed)
    closing.callback(_close_env_unless_hung, env, built)
    startup["env_build_s"] = time.perf_counter() - t
    describe_env(env, tc, cuda)
    dims = Dims(env.obs_dim, env.critic_obs_dim, env.action_dim)

    phase("learner build")
    learner = build_learner(c, dims, device, startup, closing)
    tc.update(training_config.learner_fields(learner, dims))
    info.device = device_info(device)

    staging = build_staging(env, learner, c.run.num_envs)

    phase("compile and capture")
    info.compile = cold_start(learner, startup)
    tc["executor"] = training_config.executor_name(learner)

    t = time.perf_counter()
    phase("env worker start")
    obs, critic_obs = env.reset()
    startup["env_ready_s"] = time.perf_counter() - t
    if isinstance(env, DeviceVecEnv) and env.background_build_s is not None:
        info.beside["env_build_s"] = env.background_build_s
    staging.set_current(obs, critic_obs, np.zeros(c.run.num_envs, dtype=np.float32))
    phase("checkpoint restore and step capture")
    restore(learner, env, staging, training_config.learning_starts_rows(c))
    steps = build_steps(learner, staging, startup, closing)
    tc["device_steps"] = steps.mode
    timeout_s = DEFAULT_TIMEOUT_S if collector_timeout_s is None else collector_timeout_s
    collector = start_collector(env, staging, c, timeout_s, startup, closing)
    tc["env_step"] = collector.mode
    tc["env_overlap"] = collector.overlap
    built.append(Parts(env, learner, staging, steps, collector))
    return built[0]


def build_learner(
    c: Config, dims: Dims, device: torch.device, startup: dict[str, float], closing: ExitStack
) -> FlashSACLearner:
    """The learner of config `c` for envs of `dims` (not compiled yet: `cold_start`)."""
    if device.type == "cuda":  # the CUDA context on its own line, apart from the learner build
        t = time.perf_counter()
        torch.empty(1, device=device)
        startup["cuda_init_s"] = time.perf_counter() - t
    t = time.perf_counter()
    learner = FlashSACLearner.from_config(c, dims)
    startup["learner_build_s"] = time.perf_counter() - t
    closing.callback(release_quietly, learner.release_graphs, "the update cycle's CUDA graph")
    return learner


def cold_start(learner: FlashSACLearner, startup: dict[str, float]) -> dict[str, Any]:
    """Compile / capture the update cycle before any timing (every path runs, then undoes, one
    untimed cycle): learner_warmup_s, which starts cold_start_s. Returns what torch's compiler
    did meanwhile (summary.json's `compile`)."""
    before = compile_facts()
    t = time.perf_counter()
    learner.warmup()
    if learner.device.type == "cuda":
        torch.cuda.synchronize(learner.device)
    startup["learner_warmup_s"] = startup["cold_start_s"] = time.perf_counter() - t
    facts = compile_delta(before, compile_facts())
    if facts and learner.path.compiled:
        facts = with_saved_compiles(facts, summarize(learner.path.compiled))
    return facts


# torch's compile-time metrics (torch._dynamo.utils.compilation_time_metrics): Dynamo's whole
# compile of a frame, and the backend's part of it (AOTAutograd + Inductor); a backward
# compiled on its first call (no AOTAutograd cache hit) is timed apart.
_DYNAMO = "_compile.compile_inner"
_BACKEND = ("OutputGraph.call_user_compiler", "compile_fx.<locals>.bw_compiler")
# torch._dynamo.utils.counters: (group, counter) -> our name
_CACHE_COUNTERS = {
    ("inductor", "fxgraph_cache_hit"): "fx_graph_cache_hits",
    ("inductor", "fxgraph_cache_miss"): "fx_graph_cache_misses",
    ("inductor", "fxgraph_cache_bypass"): "fx_graph_cache_bypasses",
    ("aot_autograd", "autograd_cache_hit"): "aot_autograd_cache_hits",
    ("aot_autograd", "autograd_cache_miss"): "aot_autograd_cache_misses",
    ("aot_autograd", "autograd_cache_bypass"): "aot_autograd_cache_bypasses",
}


def compile_facts() -> dict[str, float] | None:
    """The process's compile totals so far (seconds and cache counts); None where torch's
    compiler was never loaded (an eager run: nothing compiled, and no import to pay for)."""
    if "torch._dynamo.utils" not in sys.modules:
        return None
    from torch._dynamo.utils import compilation_time_metrics, counters

    def total(key: str) -> float:
        return float(sum(compilation_time_metrics.get(key, ())))

    facts = {"dynamo_total_s": total(_DYNAMO), "backend_s": sum(total(k) for k in _BACKEND)}
    facts["frames_traced"] = float(len(compilation_time_metrics.get(_DYNAMO, ())))
    for (group, name), ours in _CACHE_COUNTERS.items():
        facts[ours] = float(counters[group][name])
    return facts


def compile_delta(
    before: dict[str, float] | None, after: dict[str, float] | None
) -> dict[str, Any]:
    """What happened between two `compile_facts`: seconds, counts, and whether torch's caches
    for compiled graphs are on (Inductor's FX graph cache, AOTAutograd's cache); {} where
    nothing was compiled."""
    if after is None:
        return {}
    from torch._functorch import config as functorch_config
    from torch._inductor import config as inductor_config

    before = before or dict.fromkeys(after, 0.0)
    d = {k: after[k] - before[k] for k in after}
    backend = d.pop("backend_s")
    dynamo_total = d.pop("dynamo_total_s")
    return {
        "dynamo_s": round(max(dynamo_total - backend, 0.0), 3),
        "backend_s": round(backend, 3),
        **{k: int(v) for k, v in d.items()},
        "fx_graph_cache": bool(inductor_config.fx_graph_cache),
        "aot_autograd_cache": bool(functorch_config.enable_autograd_cache),
    }


def with_saved_compiles(facts: dict[str, Any], saved: dict[str, Any]) -> dict[str, Any]:
    """`facts` with what the learner's saved compiles (learner.compile_store) did: their
    tracing and compiling counted into dynamo_s / backend_s, their loads and saves, and
    `tracing_skipped`: the warmup loaded every compiled update and Dynamo traced nothing."""
    out = {**facts, **saved}
    out["dynamo_s"] = round(facts["dynamo_s"] + out.pop("artifacts_trace_s"), 3)
    out["backend_s"] = round(facts["backend_s"] + out.pop("artifacts_backend_s"), 3)
    out["tracing_skipped"] = (
        saved["artifacts_loaded"] > 0
        and saved["artifacts_compiled"] == 0
        and facts["frames_traced"] == 0
    )
    return out


def describe_env(env: VecEnv | DeviceVecEnv, tc: dict[str, Any], cuda: bool) -> None:
    """What the env really runs on, into training_config (a custom factory may ignore
    backend.mode); on a CPU learner, warn when the env's threads and torch's oversubscribe."""
    if isinstance(env, DeviceVecEnv):
        tc.update(env_mode="device", env_workers=0, env_threads=0)
        return
    tc["env_workers"] = int(env.workers)
    if not cuda:
        warn_oversubscription(tc["env_workers"] or tc["env_threads"])


def same_device(a: torch.device, b: torch.device) -> bool:
    """Whether two torch devices are one ("cuda" is the current CUDA device, e.g. cuda:0)."""
    if a.type != b.type:
        return False
    if a.type != "cuda":
        return True
    current = torch.cuda.current_device() if a.index is None or b.index is None else None
    return (current if a.index is None else a.index) == (current if b.index is None else b.index)


def build_staging(
    env: VecEnv | DeviceVecEnv, learner: FlashSACLearner, num_envs: int
) -> Staging | DeviceStaging:
    """Host staging (pinned for a CUDA learner), or staging on the device for a device env."""
    layout = learner.ring.layout
    if isinstance(env, DeviceVecEnv):
        if not same_device(env.device, learner.device):
            raise ValueError(f"the env runs on {env.device}, the learner on {learner.device}")
        return DeviceStaging(layout, num_envs, learner.device)
    return Staging(layout, num_envs, pin=learner.device.type == "cuda")


def start_collector(
    env: VecEnv | DeviceVecEnv,
    staging: Staging | DeviceStaging,
    c: Config,
    timeout_s: float,
    startup: dict[str, float],
    closing: ExitStack,
) -> Collector | DeviceCollector:
    """The collector thread for a VecEnv; the device collector for a DeviceVecEnv, its env step
    and packing captured as CUDA graphs on CUDA (cold start), its tick beside the update where
    backend.warp.overlap asks (runner.env_lane)."""
    if isinstance(env, DeviceVecEnv):
        assert isinstance(staging, DeviceStaging)
        t = time.perf_counter()
        # backend.warp's stream options; a device env of a task without a backend: the defaults.
        opts = c.backend.warp_options() if c.backend is not None else WarpOptions()
        lane = make_lane(staging.device, opts.overlap)
        device = DeviceCollector(env, staging, lane)
        closing.callback(release_quietly, device.release, "the device env's CUDA graphs")
        closing.callback(device.close)  # before the env closes (a tick may still run)
        device.start(capture=True)
        startup["env_capture_s"] = time.perf_counter() - t
        startup["cold_start_s"] += startup["env_capture_s"]
        return device
    assert isinstance(staging, Staging) and isinstance(env, VecEnv)
    # A worker process that hangs is reported by the env itself (naming the worker), so the
    # collector's generic timeout must not fire first.
    if env.workers and isinstance(c.backend, MujocoConfig):
        timeout_s = max(timeout_s, c.backend.worker_timeout_s + 5.0)
    thread = Collector(env, staging, timeout_s)
    thread.start()
    closing.callback(thread.close)
    return thread


def build_steps(
    learner: FlashSACLearner,
    staging: Staging | DeviceStaging,
    startup: dict[str, float],
    closing: ExitStack,
) -> DeviceSteps:
    """Act and store, captured as CUDA graphs now (on CUDA), so that this too counts as cold
    start."""
    t = time.perf_counter()
    steps = DeviceSteps(learner, staging)
    closing.callback(release_quietly, steps.release, "the act / store CUDA graphs")
    steps.capture()
    startup["device_steps_capture_s"] = time.perf_counter() - t
    startup["cold_start_s"] += startup["device_steps_capture_s"]
    return steps


def release_quietly(release: Callable[[], None], what: str) -> None:
    """Release a run's CUDA graphs at its end; a failed device must not hide the run's error."""
    try:
        release()
    except Exception as err:  # noqa: BLE001
        log.warning("could not release %s: %s", what, err)


def _close_env_unless_hung(env: VecEnv | DeviceVecEnv, built: list[Parts]) -> None:
    """Close the env at the run's end; a hung collector thread may still be inside env.step:
    then the env is left to the process's exit."""
    if built and built[0].collector.hung:
        return
    try:
        env.close()
    except Exception:  # noqa: BLE001
        log.exception("env.close() failed")
