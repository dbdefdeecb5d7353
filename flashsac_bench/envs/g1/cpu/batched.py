"""Batched MuJoCo physics: one MjModel/MjData pair per env, stepped by a pool of native threads.

MuJoCo's Python bindings release the GIL inside its functions, so a handful of Python threads
that each take the next env index run the physics in parallel; the only GIL-held work per env
is a ctrl write, three calls and three row copies. In a worker process (`envs.g1.cpu.shards`)
the pool has one thread and the process is the unit of parallelism.

Each env owns its MjModel copy because the task randomizes kp/kd per env at reset.

The observation must describe the state the next action acts on, but `mj_step` leaves
sensordata describing the state *before* its last integration. So every MjData is kept with
its position and velocity stages computed for its CURRENT state (`mj_step1`), and a control
step of `nsub` physics steps is `mj_step2` (which finishes the first step from those stages),
`mj_step(nsub - 1)`, then `mj_step1` at the new state. That is bit for bit `mj_step(nsub)`
followed by a sensor refresh (mj_step = mj_step1 + mj_step2 for the Euler and implicit
integrators; `tests/envs/test_batched.py` compares), without computing the stages twice.

Outputs (float64, one row per env) are overwritten in place by every `step`; a caller may pass
its own arrays (views into shared memory) to receive them.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import mujoco
import numpy as np

# Everything mj_step reads (incl. the solver warm start): restoring it continues bit-identically.
STATE_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION


class BatchedMujoco:
    """`num_envs` copies of one model; `ctrl` in, `qpos`/`qvel`/`sensordata` out."""

    def __init__(
        self,
        model: mujoco.MjModel,
        num_envs: int,
        num_threads: int,
        outputs: dict[str, np.ndarray] | None = None,
    ) -> None:
        if num_envs < 1 or num_threads < 1:
            raise ValueError("num_envs and num_threads must be >= 1")
        if model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4:
            # mj_step2 integrates with Euler there, so the split step would change the physics.
            raise ValueError("the RK4 integrator is not supported (use implicitfast or Euler)")
        self.model = model
        self.num_envs = num_envs
        self.num_threads = min(num_threads, num_envs)
        self.models = [copy.copy(model) for _ in range(num_envs)]
        self.datas = [mujoco.MjData(m) for m in self.models]
        out = outputs or {}
        self.ctrl = np.zeros((num_envs, model.nu))
        self.qpos = self._output(out, "qpos", model.nq)
        self.qvel = self._output(out, "qvel", model.nv)
        self.sensordata = self._output(out, "sensordata", model.nsensordata)
        # Nominal servo gains (position actuators: gain kp, bias [0, -kp, -kv]).
        self._kp = model.actuator_gainprm[:, 0].copy()
        self._bias_kp = model.actuator_biasprm[:, 1].copy()
        self._bias_kv = model.actuator_biasprm[:, 2].copy()
        self.kp_scale = np.ones(num_envs)
        self.kd_scale = np.ones(num_envs)
        self._nsub = 1
        self._raw = False
        self._next_env: itertools.count[int] = itertools.count()
        # Per env: its MjData's ctrl / qpos / qvel / sensordata arrays and its rows of ours,
        # made once. Each attribute access on an MjData builds a new numpy view, GIL-held work
        # per env and step that these views save. The MjData objects live as long as this
        # object and are never replaced.
        self._io = [
            (
                d.ctrl,
                d.qpos,
                d.qvel,
                d.sensordata,
                self.ctrl[i],
                self.qpos[i],
                self.qvel[i],
                self.sensordata[i],
            )
            for i, d in enumerate(self.datas)
        ]
        for i in range(num_envs):
            self._publish(i)
        # The calling thread works too, so the pool holds num_threads - 1 helpers.
        self._pool = (
            ThreadPoolExecutor(self.num_threads - 1, thread_name_prefix="mj")
            if self.num_threads > 1
            else None
        )

    def _output(self, outputs: dict[str, np.ndarray], name: str, width: int) -> np.ndarray:
        arr = outputs.get(name)
        if arr is None:
            return np.zeros((self.num_envs, width))
        if arr.shape != (self.num_envs, width) or arr.dtype != np.float64:
            raise ValueError(f"output {name!r} must be float64 {(self.num_envs, width)}")
        return arr

    # -- stepping -----------------------------------------------------------------------------

    def _work(self) -> None:
        models, datas, io = self.models, self.datas, self._io
        n, rest, raw = self.num_envs, self._nsub - 1, self._raw
        step, step1, step2, counter = (
            mujoco.mj_step,
            mujoco.mj_step1,
            mujoco.mj_step2,
            self._next_env,
        )
        while (i := next(counter)) < n:  # next() on a count is atomic under the GIL
            m, d = models[i], datas[i]
            d_ctrl, d_qpos, d_qvel, d_sens, ctrl, qpos, qvel, sens = io[i]
            d_ctrl[:] = ctrl
            if raw:
                step(m, d, rest + 1)
                continue
            step2(m, d)
            if rest:
                step(m, d, rest)
            step1(m, d)
            qpos[:] = d_qpos
            qvel[:] = d_qvel
            sens[:] = d_sens

    def step(self, nsub: int, *, raw: bool = False) -> None:
        """Hold `self.ctrl` for `nsub` physics steps in every env and publish the outputs.

        raw=True: plain `mj_step(nsub)` and nothing else (no stages for the new state, no row
        copies): the physics-only ceiling for benchmarks. It leaves the outputs stale, so an env
        stepped raw is not for training.
        """
        self._nsub = nsub
        self._raw = raw
        self._next_env = itertools.count()
        pool = self._pool  # None with one thread: the calling thread does all the work
        futures = (
            [] if pool is None else [pool.submit(self._work) for _ in range(self.num_threads - 1)]
        )
        self._work()
        for f in futures:
            f.result()

    # -- per-env writes (reset, state restore): serial, only the envs concerned ------------------

    def _publish(self, i: int) -> None:
        m, d = self.models[i], self.datas[i]
        mujoco.mj_step1(m, d)  # the stages for the current state (see the module docstring)
        self.qpos[i] = d.qpos
        self.qvel[i] = d.qvel
        self.sensordata[i] = d.sensordata

    def set_gain_scales(
        self, ids: Sequence[int] | np.ndarray, kp_scale: np.ndarray, kd_scale: np.ndarray
    ) -> None:
        for i, kp, kd in zip(ids, kp_scale, kd_scale, strict=True):
            m = self.models[i]
            m.actuator_gainprm[:, 0] = self._kp * kp
            m.actuator_biasprm[:, 1] = self._bias_kp * kp
            m.actuator_biasprm[:, 2] = self._bias_kv * kd
            self.kp_scale[i] = kp
            self.kd_scale[i] = kd

    def reset_envs(
        self, ids: Sequence[int] | np.ndarray, qpos: np.ndarray, qvel: np.ndarray
    ) -> None:
        """Fresh MjData state (time 0, no warm start) at the given qpos/qvel."""
        for i, q, v in zip(ids, qpos, qvel, strict=True):
            m, d = self.models[i], self.datas[i]
            mujoco.mj_resetData(m, d)
            d.qpos[:] = q
            d.qvel[:] = v
            self._publish(i)

    def get_state(self) -> np.ndarray:
        size = mujoco.mj_stateSize(self.model, STATE_SPEC)
        state = np.empty((self.num_envs, size))
        for m, d, row in zip(self.models, self.datas, state, strict=True):
            mujoco.mj_getState(m, d, row, STATE_SPEC)
        return state

    def set_state(self, state: np.ndarray) -> None:
        for i, row in enumerate(np.asarray(state, dtype=np.float64)):
            mujoco.mj_setState(self.models[i], self.datas[i], row, STATE_SPEC)
            self._publish(i)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
