"""N worlds of one MuJoCo model on MuJoCo Warp, their state as torch views on the same device.

The physics of the `mjwarp` backend (`g1.warp.walk_warp`): `mujoco_warp` steps every world at once
on a Warp device ("cuda:N", or Warp's "cpu" device for testing), and every array the task reads or
writes (qpos, qvel, ctrl, sensordata, the solver's warm start, the per-world servo gains) is a
zero-copy torch view of Warp's memory (`wp.to_torch`), so no step copies state to the host.

A control step is `step2`, `step` (nsub - 1 times), `step1`: as in `envs.g1.cpu.batched`, the
data is kept with its position and velocity stages computed for its current state (so the sensors
describe the state the next action acts on), and the first physics step finishes from them.
Resets write the new states into the worlds that ended (every world is computed, the rows
selected: no data-dependent shapes) and recompute the stages of every world (`stages`).

The per-world servo gains (the task's kp / kd randomization) live in Warp's batched model
fields (`actuator_gainprm` / `actuator_biasprm`, one row per world). MuJoCo Warp computes in
float32: gains, states and sensors are rounded where the CPU backend keeps float64.

Graphs. `capture()` records the control step's physics and the stage recomputation as Warp
graphs: on Warp's CPU device an operation stream that Warp replays in C++ (the same kernels,
the same bits, without Python's launch overhead), on CUDA CUDA graphs that replay on the current
torch stream. Warp work is never recorded into a torch CUDA graph: MuJoCo Warp's solver loop is
a conditional graph node (`wp.capture_while`), which Warp inserts by ending the stream's capture
and beginning a new one; inside a torch capture that would leave torch's allocations of the rest
of that capture outside its graph's memory pool, and MuJoCo Warp's deterministic mode frees
temporary buffers that must outlive the graph. A caller that captures the task's torch work
does so around these Warp graphs (envs.g1.warp.walk_warp). Warp kernels launch on torch's
current stream, so Warp and torch work stay in order without synchronizing.

One thread at a time. Warp's current stream and its graph captures belong to the device, not to
a thread: `wp.ScopedStream` sets the stream every thread's launches go to, and a capture in
progress changes how any thread's allocations and deterministic launches behave. Every Warp call
of this module therefore holds `WARP_WORK`, so one env building on its thread (its
`background_build`) never queues kernels into another's stream or graph.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import threading
from collections.abc import Iterator
from typing import Any

import mujoco
import numpy as np
import torch

log = logging.getLogger(__name__)

INSTALL_HINT = 'pip install -e ".[mjwarp]"'

# Held by every Warp call of this process (the module docstring says why); reentrant: a capture
# holds it around the steps it records.
WARP_WORK = threading.RLock()


class MissingExtraError(ImportError):
    """backend=mjwarp without warp-lang / mujoco-warp installed."""


def import_warp() -> tuple[Any, Any]:
    """(warp, mujoco_warp), or MissingExtraError naming the install command."""
    try:
        import mujoco_warp
        import warp
    except ImportError as err:
        raise MissingExtraError(
            f"backend=mjwarp needs the [mjwarp] extra ({err.name} is not installed): {INSTALL_HINT}"
        ) from None
    # Warp logs every kernel module it loads at INFO: only its warnings and errors are kept.
    warp.config.log_level = warp.LOG_WARNING
    return warp, mujoco_warp


def warp_device_name(device: str) -> str:
    """The Warp device of a torch device string: "cpu", or "cuda:N" (plain "cuda" = cuda:0)."""
    return "cuda:0" if device == "cuda" else device


class WarpPhysics:
    """`num_worlds` copies of `model`, stepped together on `device`."""

    def __init__(
        self,
        model: mujoco.MjModel,
        num_worlds: int,
        device: str,
        nconmax: int,
        njmax: int,
        deterministic: bool = False,
    ) -> None:
        wp, mjw = import_warp()
        self._wp, self._mjw = wp, mjw
        m = copy.copy(model)
        # MuJoCo's own autoreset is disabled for the CPU backend (a diverged world must surface
        # as a non-finite state); MuJoCo Warp has none and refuses the flag.
        m.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_AUTORESET)
        self.model = m
        self.num_worlds = n = num_worlds
        self.wp_device = wp.get_device(warp_device_name(device))
        self.device = torch.device(device if device != "cuda" else "cuda:0")
        with WARP_WORK, wp.ScopedDevice(self.wp_device):
            batched = {"actuator_gainprm": n, "actuator_biasprm": n}
            self.m = mjw.put_model(m, batch_sizes=batched)
            if deterministic:  # read by the step's launches: set before the first one
                self.m.opt.deterministic = int(mjw.DeterminismType.ALL)
                # Its order-invariant atomics allocate scratch memory at launch, which CUDA
                # refuses inside a conditional graph node: the solver loop (`capture_while`)
                # runs its iterations unrolled instead, converged worlds idle (the same
                # kernels captured or not, so a replay computes the eager step's bits).
                self.m.opt.graph_conditional = False
            self.d = mjw.make_data(m, nworld=n, nconmax=nconmax, njmax=njmax)
        view = wp.to_torch
        d = self.d
        self.qpos, self.qvel, self.ctrl = view(d.qpos), view(d.qvel), view(d.ctrl)
        self.sensordata = view(d.sensordata)
        self.qacc_warmstart, self.time = view(d.qacc_warmstart), view(d.time)
        self._gainprm, self._biasprm = view(self.m.actuator_gainprm), view(self.m.actuator_biasprm)

        def nominal(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(a.copy(), dtype=torch.float64, device=self.device)

        # Nominal servo gains (position actuators: gain kp, bias [0, -kp, -kv]), float64.
        self._kp = nominal(m.actuator_gainprm[:, 0])
        self._bias_kp = nominal(m.actuator_biasprm[:, 1])
        self._bias_kv = nominal(m.actuator_biasprm[:, 2])
        self.kp_scale = torch.ones(n, dtype=torch.float64, device=self.device)
        self.kd_scale = torch.ones(n, dtype=torch.float64, device=self.device)
        self._nsub = 1
        self._graphs: dict[str, Any] = {}
        self.capture_error: str | None = None  # why `capture` failed, if it did
        self._streams: dict[int, Any] = {}  # CUDA stream handle -> its one Warp stream

    # -- stepping -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _scope(self) -> Iterator[Any]:
        """Warp's device, and on CUDA torch's current stream: Warp work queues behind torch's."""
        wp = self._wp
        with WARP_WORK, wp.ScopedDevice(self.wp_device):
            if not self.wp_device.is_cuda:
                yield None
                return
            stream = self._warp_stream()
            with wp.ScopedStream(stream, sync_enter=False):
                yield stream

    def _warp_stream(self) -> Any:
        """The one Warp stream of torch's current CUDA stream, kept while the physics lives.
        Warp knows a capture by its stream object (`wp.capture_if` inside a step looks it up)
        and forgets a CUDA stream when any wrapper of it is freed, so a fresh wrapper per call
        would break a capture in progress."""
        torch_stream = torch.cuda.current_stream(self.device)
        key = int(torch_stream.cuda_stream)
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = self._wp.stream_from_torch(torch_stream)
        return stream

    def _substeps(self) -> None:
        mjw, m, d = self._mjw, self.m, self.d
        mjw.step2(m, d)
        for _ in range(self._nsub - 1):
            mjw.step(m, d)
        mjw.step1(m, d)

    def _stages(self) -> None:
        self._mjw.step1(self.m, self.d)

    def _run(self, name: str, body: Any) -> None:
        with self._scope() as stream:
            graph = self._graphs.get(name)
            if graph is None:
                body()
            elif stream is None:
                self._wp.capture_launch(graph)
            else:
                self._wp.capture_launch(graph, stream=stream)

    def step(self, nsub: int) -> None:
        """Hold `ctrl` for `nsub` physics steps in every world; the stages of the new state."""
        if self._graphs and nsub != self._nsub:
            raise ValueError(f"the captured physics holds {self._nsub} substeps, not {nsub}")
        self._nsub = nsub
        self._run("substeps", self._substeps)

    def stages(self) -> None:
        """Recompute the position and velocity stages (sensors included) of every world."""
        self._run("stages", self._stages)

    def capture(self, nsub: int) -> bool:
        """Record `step(nsub)` and `stages()` as Warp graphs (their kernels must have run once:
        call after a step). False, with the reason logged, where Warp cannot."""
        wp = self._wp
        self._nsub = nsub
        graphs = {}
        try:
            with WARP_WORK, self._capture_stream():
                for name, body in (("substeps", self._substeps), ("stages", self._stages)):
                    with self._scope() as stream:
                        wp.capture_begin(device=self.wp_device, stream=stream)
                        try:
                            body()
                        finally:
                            graphs[name] = wp.capture_end(device=self.wp_device, stream=stream)
        except Exception as err:  # noqa: BLE001 - a failed capture leaves the eager launches
            self.capture_error = f"{type(err).__name__}: {err}"
            log.warning("MuJoCo Warp graph capture failed (%s); eager steps", self.capture_error)
            return False
        self._graphs = graphs
        return True

    @contextlib.contextmanager
    def _capture_stream(self) -> Iterator[None]:
        """On CUDA a side stream, ordered after the current one, is torch's current stream
        meanwhile: CUDA cannot capture on the default stream. The graphs replay on whichever
        stream is current then."""
        if not self.wp_device.is_cuda:
            yield
            return
        current = torch.cuda.current_stream(self.device)
        side = torch.cuda.Stream(self.device)
        side.wait_stream(current)
        with torch.cuda.stream(side):
            yield
        current.wait_stream(side)

    # -- per-world writes: every world computed, the rows of `mask` kept ------------------------

    def set_gain_scales(self, mask: torch.Tensor, kp: torch.Tensor, kd: torch.Tensor) -> None:
        """Where `mask`: the servo gains times kp (stiffness) and kd (damping), float64 scales."""
        self.kp_scale.copy_(torch.where(mask, kp, self.kp_scale))
        self.kd_scale.copy_(torch.where(mask, kd, self.kd_scale))
        self._write_gains(mask[:, None])

    def _write_gains(self, rows: torch.Tensor) -> None:
        kp, kd = self.kp_scale[:, None], self.kd_scale[:, None]
        g, b = self._gainprm, self._biasprm
        g[:, :, 0] = torch.where(rows, (self._kp * kp).to(torch.float32), g[:, :, 0])
        b[:, :, 1] = torch.where(rows, (self._bias_kp * kp).to(torch.float32), b[:, :, 1])
        b[:, :, 2] = torch.where(rows, (self._bias_kv * kd).to(torch.float32), b[:, :, 2])

    def reset_worlds(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        """Where `mask`: a fresh start at qpos / qvel (time 0, no solver warm start, as
        mj_resetData leaves it); then every world's stages."""
        self.write_worlds(mask, qpos, qvel)
        self.stages()

    def write_worlds(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        """`reset_worlds` without the stages (torch ops only: the caller runs `stages()`)."""
        rows = mask[:, None]
        self.qpos.copy_(torch.where(rows, qpos.to(torch.float32), self.qpos))
        self.qvel.copy_(torch.where(rows, qvel.to(torch.float32), self.qvel))
        self.qacc_warmstart.masked_fill_(rows, 0.0)
        self.time.masked_fill_(mask, 0.0)

    # -- checkpoints ----------------------------------------------------------------------------

    def get_state(self) -> dict[str, np.ndarray]:
        """Host copies of everything a step reads besides ctrl (set by every step)."""
        out = {
            "qpos": self.qpos,
            "qvel": self.qvel,
            "qacc_warmstart": self.qacc_warmstart,
            "time": self.time,
            "kp_scale": self.kp_scale,
            "kd_scale": self.kd_scale,
        }
        return {k: v.detach().cpu().numpy().copy() for k, v in out.items()}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        for name in ("qpos", "qvel", "qacc_warmstart", "time", "kp_scale", "kd_scale"):
            target = getattr(self, name)
            target.copy_(torch.as_tensor(np.asarray(state[name])).to(target.dtype))
        self._write_gains(torch.ones(self.num_worlds, 1, dtype=torch.bool, device=self.device))
        self.stages()

    @property
    def captured(self) -> bool:
        """Whether `step` and `stages` replay Warp graphs."""
        return bool(self._graphs)

    def close(self) -> None:
        self._graphs = {}
        self._streams = {}
