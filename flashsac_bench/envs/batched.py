"""Batched MuJoCo physics: one MjModel/MjData pair per env, stepped by a pool of native threads.

MuJoCo's Python bindings release the GIL inside `mj_step`, so a handful of Python threads that
each take the next env index and call `mj_step(m, d, nsub)` run the physics in parallel; the
only GIL-held work per env is a ctrl write and three row copies. Raw physics throughput equals
`mujoco.rollout`'s (docs/benchmarks.md, "Environment stepping"), and the pool also keeps every
env's solver warm start across control steps and does the sensor refresh in the same parallel
pass, neither of which rollout offers.

Each env owns its MjModel copy because the task randomizes kp/kd per env at reset. After the
substeps the position and velocity stages are recomputed (`refresh`), because `mj_step`
leaves sensordata describing the state *before* its last integration; the observation must
describe the state the next action acts on.

Outputs (float64, one row per env) are overwritten in place by every `step`.
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


def refresh(m: mujoco.MjModel, d: mujoco.MjData) -> None:
    """Kinematics, velocities and position/velocity sensors at the current qpos/qvel."""
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)
    mujoco.mj_sensorPos(m, d)
    mujoco.mj_comVel(m, d)
    mujoco.mj_sensorVel(m, d)


class BatchedMujoco:
    """`num_envs` copies of one model; `ctrl` in, `qpos`/`qvel`/`sensordata` out."""

    def __init__(self, model: mujoco.MjModel, num_envs: int, num_threads: int) -> None:
        if num_envs < 1 or num_threads < 1:
            raise ValueError("num_envs and num_threads must be >= 1")
        self.model = model
        self.num_envs = num_envs
        self.num_threads = min(num_threads, num_envs)
        self.models = [copy.copy(model) for _ in range(num_envs)]
        self.datas = [mujoco.MjData(m) for m in self.models]
        self.ctrl = np.zeros((num_envs, model.nu))
        self.qpos = np.zeros((num_envs, model.nq))
        self.qvel = np.zeros((num_envs, model.nv))
        self.sensordata = np.zeros((num_envs, model.nsensordata))
        # Nominal servo gains (position actuators: gain kp, bias [0, -kp, -kv]).
        self._kp = model.actuator_gainprm[:, 0].copy()
        self._bias_kp = model.actuator_biasprm[:, 1].copy()
        self._bias_kv = model.actuator_biasprm[:, 2].copy()
        self.kp_scale = np.ones(num_envs)
        self.kd_scale = np.ones(num_envs)
        self._nsub = 1
        self._publish_outputs = True
        self._next_env: itertools.count[int] = itertools.count()
        # The calling thread works too, so the pool holds num_threads - 1 helpers.
        self._pool = (
            ThreadPoolExecutor(self.num_threads - 1, thread_name_prefix="mj")
            if self.num_threads > 1
            else None
        )

    # -- stepping -----------------------------------------------------------------------------

    def _work(self) -> None:
        models, datas, ctrl = self.models, self.datas, self.ctrl
        qpos, qvel, sens = self.qpos, self.qvel, self.sensordata
        n, nsub, publish = self.num_envs, self._nsub, self._publish_outputs
        step, counter = mujoco.mj_step, self._next_env
        while (i := next(counter)) < n:  # next() on a count is atomic under the GIL
            m, d = models[i], datas[i]
            d.ctrl[:] = ctrl[i]
            step(m, d, nsub)
            if publish:
                refresh(m, d)
                qpos[i] = d.qpos
                qvel[i] = d.qvel
                sens[i] = d.sensordata

    def step(self, nsub: int, *, publish: bool = True) -> None:
        """Hold `self.ctrl` for `nsub` physics steps in every env, then refresh the outputs
        (publish=False skips the refresh and the copies: raw physics, for benchmarks)."""
        self._nsub = nsub
        self._publish_outputs = publish
        self._next_env = itertools.count()
        futures = [self._pool.submit(self._work) for _ in range(self.num_threads - 1)]
        self._work()
        for f in futures:
            f.result()

    # -- per-env writes (reset, state restore): serial, only the envs concerned ------------------

    def _publish(self, i: int) -> None:
        m, d = self.models[i], self.datas[i]
        refresh(m, d)
        self.qpos[i] = d.qpos
        self.qvel[i] = d.qvel
        self.sensordata[i] = d.sensordata

    def set_gain_scales(
        self, ids: Sequence[int], kp_scale: np.ndarray, kd_scale: np.ndarray
    ) -> None:
        for i, kp, kd in zip(ids, kp_scale, kd_scale, strict=True):
            m = self.models[i]
            m.actuator_gainprm[:, 0] = self._kp * kp
            m.actuator_biasprm[:, 1] = self._bias_kp * kp
            m.actuator_biasprm[:, 2] = self._bias_kv * kd
            self.kp_scale[i] = kp
            self.kd_scale[i] = kd

    def reset_envs(self, ids: Sequence[int], qpos: np.ndarray, qvel: np.ndarray) -> None:
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
