"""Where the task's quantities live in a compiled G1 model (built-in or external MJCF)."""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from flashsac_bench.envs.g1.figures import JOINT_NAMES
from flashsac_bench.envs.g1.model import TASK_SENSORS

ROOT_BODY = "pelvis"
KEYFRAME = "stand"


def _sensor_slice(model: mujoco.MjModel, name: str) -> slice:
    sensor = model.sensor(name)
    return slice(int(sensor.adr[0]), int(sensor.adr[0] + sensor.dim[0]))


@dataclass(frozen=True)
class G1Layout:
    """Indices into qpos / qvel / ctrl / sensordata, in the task's canonical joint order."""

    root_qpos: int  # free joint: qpos[root_qpos : +7] = position, quaternion
    root_qvel: int  # qvel[root_qvel : +6] = linear (world), angular (local)
    joint_qpos: np.ndarray  # (29,)
    joint_qvel: np.ndarray  # (29,)
    actuators: np.ndarray  # (29,) actuator driving each canonical joint
    sensors: dict[str, slice]
    stand_qpos: np.ndarray  # (nq,) the `stand` keyframe
    default_joint_pos: np.ndarray  # (29,)

    @classmethod
    def from_model(cls, model: mujoco.MjModel) -> G1Layout:
        root = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, ROOT_BODY)
        if root < 0 or model.body_jntnum[root] != 1:
            raise ValueError(f"the G1 model needs a body {ROOT_BODY!r} with one free joint")
        root_joint = model.body_jntadr[root]
        if model.jnt_type[root_joint] != mujoco.mjtJoint.mjJNT_FREE:
            raise ValueError(f"body {ROOT_BODY!r} must carry a free joint")
        if model.nu != len(JOINT_NAMES):
            raise ValueError(f"the G1 model has {model.nu} actuators, the task needs 29")

        joint_ids = []
        for name in JOINT_NAMES:
            jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
            if jid < 0 or model.jnt_type[jid] != mujoco.mjtJoint.mjJNT_HINGE:
                raise ValueError(f"the G1 model has no hinge joint {name!r}")
            joint_ids.append(jid)
        by_joint = {
            int(model.actuator_trnid[a, 0]): a
            for a in range(model.nu)
            if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT
        }
        actuators = []
        for name, jid in zip(JOINT_NAMES, joint_ids, strict=True):
            a = by_joint.get(jid)
            if a is None:
                raise ValueError(f"no actuator drives joint {name!r}")
            kp, bias = model.actuator_gainprm[a, 0], model.actuator_biasprm[a, :3]
            position_servo = (
                model.actuator_gaintype[a] == mujoco.mjtGain.mjGAIN_FIXED
                and model.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_AFFINE
                and bias[0] == 0.0
                and bias[1] == -kp
            )
            if not position_servo:
                raise ValueError(f"actuator of {name!r} is not a position servo (kp, kv)")
            actuators.append(a)

        key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, KEYFRAME)
        if key < 0:
            raise ValueError(f"the G1 model has no {KEYFRAME!r} keyframe")
        stand = model.key_qpos[key].copy()
        joint_qpos = model.jnt_qposadr[joint_ids].astype(np.intp)
        return cls(
            root_qpos=int(model.jnt_qposadr[root_joint]),
            root_qvel=int(model.jnt_dofadr[root_joint]),
            joint_qpos=joint_qpos,
            joint_qvel=model.jnt_dofadr[joint_ids].astype(np.intp),
            actuators=np.asarray(actuators, dtype=np.intp),
            sensors={s.name: _sensor_slice(model, s.name) for s in TASK_SENSORS},
            stand_qpos=stand,
            default_joint_pos=stand[joint_qpos].copy(),
        )
