"""G1 Walk Flat on MuJoCo Warp: the task of `g1.cpu.walk_flat` with every env on the GPU.

The `mjwarp` backend. The contract (observations, rewards, terminations, truncations, resets,
commands, randomization, the penalty curriculum) is `g1.cpu.walk_flat`'s, computed by the same
functions (`g1.task`, `g1.rewards`) on torch float64 tensors on the physics' device, read from
zero-copy views of MuJoCo Warp's float32 state (`g1.warp.physics`). Random numbers come from the
same per-env counter streams (`g1.warp.env_rng_torch`, equal bit for bit to the CPU backend's), so a
seed gives both backends the same resets, commands and noise; they differ by their physics
(float32 here, float64 there; tests/envs/test_g1_warp.py states by how much).

No step synchronizes with the host. A control step is five parts in a fixed order
(`g1.warp.step`, whose WarpWalkStep this env is): three of the task's torch ops around Warp's
physics substeps and the reset worlds' stages. `capture` records the three torch parts as torch
CUDA graphs and the physics replays Warp's own graphs between them (g1.warp.physics says why Warp
work stays out of torch captures): a step is then five graph launches on the current stream. On
Warp's CPU device (testing only) the physics replays Warp graphs and the task runs as torch ops.

The build (MuJoCo Warp's model and data, its kernels loaded by a first undone step) may run on a
background thread (`backend.warp.background_build`) while the caller builds and compiles its
learner; the first call that needs the env waits for it.

What is global (the curriculum scale, the mean episode length, the metric sums) lives on the
device too, as 0-d tensors; `metrics()` reads them (one explicit copy and event wait, at log
time).
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from typing import Any

import numpy as np
import torch

from flashsac_bench.config.backend import MjwarpConfig
from flashsac_bench.config.task import TaskConfig
from flashsac_bench.envs.contract.api import DeviceEnvStep, DeviceVecEnv
from flashsac_bench.envs.g1 import task as T
from flashsac_bench.envs.g1.cpu.shard import build_task_model
from flashsac_bench.envs.g1.layout import G1Layout
from flashsac_bench.envs.g1.task import (
    CRITIC_OBS_DIM,
    NUM_JOINTS,
    OBS_DIM,
    REWARD_TERMS,
)
from flashsac_bench.envs.g1.warp.env_rng_torch import TorchEnvStreams
from flashsac_bench.envs.g1.warp.physics import WarpPhysics
from flashsac_bench.envs.g1.warp.step import F64, WarpWalkStep

log = logging.getLogger(__name__)

# Version of get_state's layout.
STATE_FORMAT = 1
# The task's per-env state (besides physics), float64 / int64 on the device.
_TASK_STATE = ("action", "last_action", "command", "phase", "episode_step", "episode_return")
# The global state: 0-d tensors (curriculum) and the metric sums.
_GLOBAL_STATE = ("penalty_scale", "mean_episode_length", "sums")
# Metric sums: every term's per-step mean, the reward's, then episode counts and sums.
_SUMS = (*(f"reward/{t}" for t in REWARD_TERMS), "reward/total", "steps")
_EPISODE_SUMS = ("episodes", "terminated", "return", "length")


class G1WalkWarp(WarpWalkStep, DeviceVecEnv):
    """`num_envs` G1 Walk Flat envs on MuJoCo Warp, autoresetting; `g1.cpu.walk_flat`'s contract."""

    obs_dim = OBS_DIM
    critic_obs_dim = CRITIC_OBS_DIM
    action_dim = NUM_JOINTS

    def __init__(
        self, task_cfg: TaskConfig, backend_cfg: MjwarpConfig, num_envs: int, seed: int
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        backend_cfg.check_available()  # the missing extra, in one line, before anything is built
        opts = backend_cfg.warp
        device = opts.resolved_device()
        if device == "cpu":
            log.warning(
                "backend=mjwarp runs on Warp's CPU device: for testing only (slow; the first "
                "step compiles the kernels, cached in ~/.cache/warp)"
            )
        self.cfg = task_cfg
        self.num_envs = num_envs
        self.seed = int(seed)
        self.max_episode_steps = task_cfg.max_episode_steps
        self._device = torch.device(device)
        self._graphs: dict[str, torch.cuda.CUDAGraph] = {}  # act / score / begin (capture)
        self._retired: list[torch.cuda.CUDAGraph] = []  # a failed capture's, kept until close
        self._graph_actions: torch.Tensor | None = None
        self._mode = "eager"
        self.capture_error: str | None = None  # why `capture` fell back, if it did
        self._built = threading.Event()
        self.background_build_s: float | None = None  # the thread's wall time, once done
        self._build_error: BaseException | None = None
        self._builder: threading.Thread | None = None
        if opts.background_build:
            self._builder = threading.Thread(
                target=self._build_beside, args=(opts,), name="mjwarp-build", daemon=True
            )
            self._builder.start()
        else:
            self._build(opts)
            self._built.set()

    # -- the build ------------------------------------------------------------------------------

    def _build_beside(self, opts: Any) -> None:
        t = time.perf_counter()
        try:
            with contextlib.ExitStack() as scope:
                if self._device.type == "cuda":
                    scope.enter_context(torch.cuda.device(self._device))
                self._build(opts)
                if self._device.type == "cuda":  # queued on this thread's stream: done before use
                    torch.cuda.current_stream(self._device).synchronize()
        except BaseException as err:  # noqa: BLE001 - raised where the env is first used
            self._build_error = err
        finally:
            self.background_build_s = time.perf_counter() - t
            self._built.set()

    def _ready(self) -> None:
        """Wait for the build (the background thread's, if any); raise its error."""
        if self._builder is not None:
            self._built.wait()
            self._builder.join()
            self._builder = None
            if self._build_error is not None:
                raise self._build_error
            self._capture_physics()  # on the caller's thread: no capture beside its work

    def _build(self, opts: Any) -> None:
        """The model, MuJoCo Warp's data, the task's tensors, a first reset, and the kernels
        loaded by an undone step (then captured as Warp graphs, here or in `_ready`)."""
        task_cfg, n = self.cfg, self.num_envs
        model = build_task_model(task_cfg)
        self.layout = layout = G1Layout.from_model(model)
        self._physics = WarpPhysics(
            model, n, str(self._device), opts.nconmax, opts.njmax, deterministic=opts.deterministic
        )
        dev = self._device

        def to(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(a, device=dev)

        self._idx = T.TaskIndex.from_layout(layout, to)
        self._ranges = T.ResetRanges.of(layout, model.nv, task_cfg.commands, to)
        actuators = T.as_slice(layout.actuators)  # a view where contiguous (the built-in's)
        self._actuators = actuators if isinstance(actuators, slice) else to(actuators)
        weights, is_penalty = T.reward_weights(task_cfg)
        self._weights, self._is_penalty = to(weights), to(is_penalty)
        self._pose_weights = to(np.asarray(task_cfg.pose_weights, dtype=np.float64))
        self._noise_scale = to(T.noise_scale(task_cfg.obs))
        self._phase_delta = 2.0 * math.pi * task_cfg.gait.frequency * task_cfg.ctrl_dt
        self._min_up_z = math.cos(math.radians(task_cfg.termination_tilt_deg))
        self._window = max(1, int(task_cfg.curriculum.window * n / 4096))
        self.rng = TorchEnvStreams(self.seed, np.arange(n), 2, dev)

        def zeros(*shape: int, dtype: torch.dtype = F64) -> torch.Tensor:
            return torch.zeros(shape, dtype=dtype, device=dev)

        self._alive = torch.ones(n, dtype=F64, device=dev)
        self._all = torch.ones(n, dtype=torch.bool, device=dev)
        self._done = zeros(n, dtype=torch.bool)  # the envs of this step that ended (a step's parts)
        self.action, self.last_action = zeros(n, NUM_JOINTS), zeros(n, NUM_JOINTS)
        self.command, self.phase = zeros(n, 3), zeros(n, 2)
        self.episode_step = zeros(n, dtype=torch.int64)
        self.episode_return = zeros(n)
        cur = task_cfg.curriculum
        self.penalty_scale = torch.tensor(cur.initial_scale, dtype=F64, device=dev)
        self.mean_episode_length = zeros()
        self.sums = zeros(len(_SUMS) + len(_EPISODE_SUMS))
        self._last_episode = {"episode/return": 0.0, "episode/length": 0.0}
        f32 = torch.float32
        self._terms = zeros(n, len(REWARD_TERMS), dtype=f32)
        self._out = DeviceEnvStep(
            obs=zeros(n, OBS_DIM, dtype=f32),
            critic_obs=zeros(n, CRITIC_OBS_DIM, dtype=f32),
            final_obs=zeros(n, OBS_DIM, dtype=f32),
            final_critic_obs=zeros(n, CRITIC_OBS_DIM, dtype=f32),
            reward=zeros(n, dtype=f32),
            terminated=zeros(n, dtype=torch.bool),
            truncated=zeros(n, dtype=torch.bool),
            reward_terms={name: self._terms[:, i] for i, name in enumerate(REWARD_TERMS)},
            episode_return=zeros(n, dtype=f32),
            episode_length=zeros(n, dtype=torch.int32),
        )
        self._reset_all()  # the outputs hold first observations, as the CPU env's do
        # The kernels load on a first step, undone.
        state = self._get_state()
        self._step(torch.zeros(n, NUM_JOINTS, device=dev))
        self._set_state(state)
        if self._builder is None:
            self._capture_physics()

    # -- the contract ---------------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return self._device

    @property
    def step_mode(self) -> str:
        self._ready()
        return self._mode

    def reset(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Reset every env (fresh randomization); returns the (obs, critic_obs) outputs."""
        self._ready()
        return self._reset_all()

    def _reset_all(self) -> tuple[torch.Tensor, torch.Tensor]:
        self._done.fill_(True)
        self._reset_draw()
        self._physics.stages()
        self._reset_observe()
        out = self._out
        out.final_obs.copy_(out.obs)
        out.final_critic_obs.copy_(out.critic_obs)
        return out.obs, out.critic_obs

    def step(self, actions: torch.Tensor) -> DeviceEnvStep:
        if tuple(actions.shape) != (self.num_envs, NUM_JOINTS):
            raise ValueError(f"actions must be {(self.num_envs, NUM_JOINTS)}, got {actions.shape}")
        self._ready()
        if self._graphs and actions is self._graph_actions:
            g, p, nsub = self._graphs, self._physics, self.cfg.decimation
            g["act"].replay()
            p.step(nsub)
            g["score"].replay()
            p.stages()
            g["begin"].replay()
        else:
            self._step(actions)
        return self._out

    def capture(self, actions: torch.Tensor) -> bool:
        """On CUDA, where the physics replays Warp graphs: the step's three torch parts as torch
        CUDA graphs (their private memory pools), replayed by `step(actions)` around the Warp
        graphs, all on the current stream. A step runs first, eagerly (torch's lazy state) and
        is undone. False, with the reason in `capture_error` and a warning, where it cannot."""
        self._ready()
        if not self._physics.wp_device.is_cuda:
            return False
        if not self._physics.captured:
            self.capture_error = f"the physics did not capture ({self._physics.capture_error})"
            log.warning("the MuJoCo Warp step is not captured: %s", self.capture_error)
            return False
        state = self._get_state()
        graphs: dict[str, torch.cuda.CUDAGraph] = {}
        try:
            self._step(actions)
            self._set_state(state)
            torch.cuda.synchronize(self._device)
            # One memory pool for the three: they replay in this order, on one stream.
            pool = None
            for name, part in (
                ("act", lambda: self._act(actions)),
                ("score", self._score),
                ("begin", self._begin),
            ):
                graphs[name] = _capture(part, pool)
                pool = graphs[name].pool()
        except Exception as err:  # noqa: BLE001 - any capture failure falls back, loudly
            self.capture_error = f"{type(err).__name__}: {err}"
            log.warning(
                "CUDA graph capture of the MuJoCo Warp step's task failed (%s); stepping with "
                "Warp graphs for the physics and the task's ops eagerly",
                self.capture_error,
            )
            torch.cuda.synchronize(self._device)
            self._retired = list(graphs.values())  # destroyed at close, after the device is done
            self._set_state(state)
            return False
        self._graphs, self._graph_actions = graphs, actions
        self._mode = "cuda_graph"
        return True

    def metrics(self) -> dict[str, float]:
        """Means since the previous call (episode stats: of the episodes finished meanwhile).
        The one read of the device in a loop iteration that asks for it: an explicit copy and an
        event wait (no stream synchronization: a CUDA loop allows none)."""
        self._ready()
        curriculum = torch.stack((self.penalty_scale, self.mean_episode_length))
        device_values = torch.cat((self.sums, curriculum))
        cuda = self._device.type == "cuda"
        host = torch.empty(device_values.shape, dtype=F64, pin_memory=cuda)
        host.copy_(device_values, non_blocking=True)
        self.sums.zero_()
        if cuda:
            copied = torch.cuda.Event()
            copied.record(torch.cuda.current_stream(self._device))
            copied.synchronize()
        *sums, scale, mean = host.tolist()
        values = dict(zip((*_SUMS, *_EPISODE_SUMS), sums, strict=True))
        steps = max(values.pop("steps"), 1.0)
        result = {k: v / steps for k, v in values.items() if k.startswith("reward/")}
        episodes = values["episodes"]
        if episodes:
            self._last_episode = {
                "episode/return": values["return"] / episodes,
                "episode/length": values["length"] / episodes,
            }
        result.update(self._last_episode)
        result["episode/count"] = episodes
        result["episode/terminated_frac"] = values["terminated"] / episodes if episodes else 0.0
        result["curriculum/penalty_scale"] = scale
        result["curriculum/mean_episode_length"] = mean
        return result

    def get_state(self) -> dict[str, Any]:
        """Everything needed to continue bit-identically on the same device (host copies)."""
        self._ready()
        return self._get_state()

    def _get_state(self) -> dict[str, Any]:
        def host(t: torch.Tensor) -> np.ndarray:
            return t.detach().cpu().numpy().copy()

        state: dict[str, Any] = {
            "format": STATE_FORMAT,
            "backend": "mjwarp",
            "num_envs": self.num_envs,
            "seed": self.seed,
            "physics": self._physics.get_state(),
            "rng_counters": host(self.rng.counters),
            "obs": host(self._out.obs),
            "critic_obs": host(self._out.critic_obs),
            "last_episode": dict(self._last_episode),
        }
        state.update({k: host(getattr(self, k)) for k in (*_TASK_STATE, *_GLOBAL_STATE)})
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        if state.get("backend") != "mjwarp" or state.get("format") != STATE_FORMAT:
            raise ValueError(
                "this env state was not saved by the mjwarp backend's G1 env of this version; "
                "resume it with the backend that wrote it"
            )
        if state["num_envs"] != self.num_envs:
            raise ValueError(f"state is for {state['num_envs']} envs, this env has {self.num_envs}")
        self._ready()
        self._set_state(state)

    def _set_state(self, state: dict[str, Any]) -> None:
        if int(state["seed"]) != self.seed:
            self.seed = int(state["seed"])
            self.rng.reseed(self.seed)  # in place: captured graphs read these tensors

        def load(target: torch.Tensor, value: Any) -> None:
            target.copy_(torch.as_tensor(np.asarray(value)).to(target.dtype))

        self._physics.set_state(state["physics"])
        load(self.rng.counters, state["rng_counters"])
        load(self._out.obs, state["obs"])
        load(self._out.critic_obs, state["critic_obs"])
        for name in (*_TASK_STATE, *_GLOBAL_STATE):
            load(getattr(self, name), state[name])
        self._last_episode = dict(state["last_episode"])

    @property
    def physics(self) -> WarpPhysics:
        self._ready()
        return self._physics

    def close(self) -> None:
        if self._builder is not None:  # a build still running: let it end first
            self._built.wait()
            self._builder.join()
            self._builder = None
        physics = getattr(self, "_physics", None)
        if physics is None:  # the build failed before the physics existed
            return
        if self._graphs or self._retired or physics.captured:
            # no graph is destroyed while the device may replay it
            if self._device.type == "cuda":
                torch.cuda.synchronize(self._device)
        self._graphs, self._retired, self._graph_actions = {}, [], None
        physics.close()

    # -- the physics graphs -----------------------------------------------------------------------

    def _capture_physics(self) -> None:
        """The physics as Warp graphs (on Warp's CPU device its C++ replay of the same kernels,
        on CUDA CUDA graphs), the task as torch ops: how a step runs unless `capture` records
        the task too. The kernels have loaded on the build's undone step."""
        if self._physics.capture(self.cfg.decimation):
            self._mode = "warp_graph"


def _capture(part: Any, pool: Any) -> torch.cuda.CUDAGraph:
    """`part()` as a torch CUDA graph (in `pool`, if given)."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool, capture_error_mode="thread_local"):
        part()
    return graph
