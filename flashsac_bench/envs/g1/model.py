"""The Unitree G1 (29 DoF) on a flat floor, built in Python with `mujoco.MjSpec`.

`build_g1_model()` compiles the figures of `g1.figures` into the physics of UniLab's
`scene_flat.xml` without a single mesh: explicit inertials, hinge axes and ranges with armature
and friction loss, primitive collision geoms (foot contact spheres and capsules included), IMU and
foot sites, position servos with per-joint kp/kv/force limits, the `stand` keyframe and the
implicitfast integrator at 1/150 s. Only the sensors the task reads are added (see TASK_SENSORS);
the accelerometers and foot contact sensors of the reference are left out because nothing uses
them and acceleration-stage sensors cost time in every `mj_step`.

`task_spec()` returns either this model or an external MJCF (`g1.mjcf_loader`), with the task
sensors ensured, ready for the env to compile. `check_physics()` refuses a compiled model whose
physics values are not finite or out of their domain (gravity, masses, inertias, keyframes, ...):
such a model steps into NaN on every step.

`model_record()` is what a checkpoint carries of the model its envs ran: an external MJCF's
bytes and the files it references (includes, meshes, textures, height fields, skins), with one
sha256 over all of them; the built-in model's hash. `materialize()` writes a record's files back
into a folder, laid out as they were, so that evaluation and export use exactly that model.
"""

from __future__ import annotations

import hashlib
import math
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, NamedTuple

import mujoco
import numpy as np

from flashsac_bench.envs.g1 import figures as fig
from flashsac_bench.envs.g1.figure_types import Body, Geom
from flashsac_bench.envs.g1.mjcf_loader import load_mjcf_spec

_COLLISION_GROUP = 3


class SensorSpec(NamedTuple):
    name: str
    type: mujoco.mjtSensor
    site: str
    cutoff: float = 0.0


# The sensors the task reads, named as in the reference model (torso_quat is new: the torso
# orientation gives both the projected gravity and the up vector).
TASK_SENSORS: tuple[SensorSpec, ...] = (
    SensorSpec("torso_gyro", mujoco.mjtSensor.mjSENS_GYRO, "imu_in_torso", cutoff=34.9),
    SensorSpec("torso_quat", mujoco.mjtSensor.mjSENS_FRAMEQUAT, "imu_in_torso"),
    SensorSpec("pelvis_local_linvel", mujoco.mjtSensor.mjSENS_VELOCIMETER, "imu_in_pelvis"),
    SensorSpec("left_foot_pos", mujoco.mjtSensor.mjSENS_FRAMEPOS, "left_foot"),
    SensorSpec("left_foot_quat", mujoco.mjtSensor.mjSENS_FRAMEQUAT, "left_foot"),
    SensorSpec("right_foot_pos", mujoco.mjtSensor.mjSENS_FRAMEPOS, "right_foot"),
    SensorSpec("right_foot_quat", mujoco.mjtSensor.mjSENS_FRAMEQUAT, "right_foot"),
)


def _add_geom(body: mujoco.MjsBody, geom: Geom) -> None:
    capsule = geom.kind in ("capsule", "foot_capsule")
    g = body.add_geom(
        name=geom.name,
        type=mujoco.mjtGeom.mjGEOM_CAPSULE if capsule else mujoco.mjtGeom.mjGEOM_SPHERE,
        group=_COLLISION_GROUP,
        contype=1,
        conaffinity=1,
    )
    g.size[0] = geom.radius
    if geom.fromto is not None:
        g.fromto = geom.fromto
    if geom.pos is not None:
        g.pos = geom.pos
    if geom.kind.startswith("foot"):
        g.friction[0] = fig.FOOT_FRICTION
        g.condim = 3
    if geom.kind == "foot_sphere":
        g.priority = fig.FOOT_SPHERE_PRIORITY


def _add_body(parent: mujoco.MjsBody, body: Body) -> mujoco.MjsBody:
    inertial = body.inertial
    b = parent.add_body(
        name=body.name,
        pos=body.pos,
        quat=body.quat or (1.0, 0.0, 0.0, 0.0),
        mass=inertial.mass,
        ipos=inertial.pos,
        iquat=inertial.quat,
        inertia=inertial.diaginertia,
        explicitinertial=True,
    )
    if body.joint is None:
        b.add_freejoint(name="floating_base_joint")
    else:
        b.add_joint(
            name=body.joint.name,
            type=mujoco.mjtJoint.mjJNT_HINGE,
            axis=body.joint.axis,
            range=body.joint.range,
            armature=fig.JOINT_ARMATURE,
            frictionloss=fig.JOINT_FRICTIONLOSS,
        )
    for geom in body.geoms:
        _add_geom(b, geom)
    for name, pos in body.sites:
        b.add_site(name=name, pos=pos, size=(0.01, 0.005, 0.005))
    return b


def add_task_sensors(spec: mujoco.MjSpec) -> None:
    """Make sure every TASK_SENSORS entry exists: reuse a same-named sensor of the right type on
    the right site, add a missing one, and fail clearly when its site is absent."""
    existing = {s.name: s for s in spec.sensors}
    sites = {s.name for s in spec.sites}
    for want in TASK_SENSORS:
        have = existing.get(want.name)
        if have is not None:
            if have.type != want.type or have.objname != want.site:
                raise ValueError(
                    f"model sensor {want.name!r} is a {have.type.name} on {have.objname!r}; "
                    f"the task needs a {want.type.name} on site {want.site!r}"
                )
            continue
        if want.site not in sites:
            raise ValueError(
                f"the G1 model has no site {want.site!r}, needed for the task sensor "
                f"{want.name!r} ({want.type.name})"
            )
        spec.add_sensor(
            name=want.name,
            type=want.type,
            objtype=mujoco.mjtObj.mjOBJ_SITE,
            objname=want.site,
            cutoff=want.cutoff,
        )


def g1_spec() -> mujoco.MjSpec:
    """The built-in G1 flat-floor scene as an (uncompiled) MjSpec."""
    spec = mujoco.MjSpec()
    spec.modelname = "g1_29dof_flat"
    spec.compiler.degree = False
    spec.compiler.autolimits = True
    spec.option.timestep = fig.TIMESTEP
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST

    floor = spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE)
    floor.size = fig.FLOOR_SIZE
    bodies = {"world": spec.worldbody}
    for body in fig.BODIES:
        bodies[body.name] = _add_body(bodies[body.parent], body)

    for body1, body2 in fig.CONTACT_EXCLUDES:
        spec.add_exclude(bodyname1=body1, bodyname2=body2)
    for joint, (kp, kv, force) in zip(fig.JOINT_NAMES, fig.MOTORS, strict=True):
        act = spec.add_actuator(name=joint, target=joint, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_position(kp=kp, kv=kv)
        act.forcerange = (-force, force)
    add_task_sensors(spec)
    spec.add_key(name="stand", qpos=fig.STAND_ROOT + fig.STAND_JOINTS, ctrl=fig.STAND_JOINTS)
    return spec


def build_g1_model() -> mujoco.MjModel:
    """The built-in G1 flat-floor scene, compiled."""
    return g1_spec().compile()


def task_spec(model_file: str | None) -> mujoco.MjSpec:
    """The built-in model (None) or an external G1 MJCF, with the task sensors ensured."""
    if model_file is None:
        return g1_spec()
    spec = load_mjcf_spec(model_file)
    add_task_sensors(spec)
    return spec


# ---------------------------------------------------------------------------- physics values
def _name(model: mujoco.MjModel, obj: mujoco.mjtObj, i: int) -> str:
    return mujoco.mj_id2name(model, obj, i) or f"#{i}"


# (model array, MuJoCo object type, what it is, lower bound or None): every row must be finite
# and at least the bound.
_PHYSICS_ARRAYS = (
    ("body_mass", mujoco.mjtObj.mjOBJ_BODY, "mass", 0.0),
    ("body_inertia", mujoco.mjtObj.mjOBJ_BODY, "inertia", 0.0),
    ("body_ipos", mujoco.mjtObj.mjOBJ_BODY, "inertial position", None),
    ("body_iquat", mujoco.mjtObj.mjOBJ_BODY, "inertial orientation", None),
    ("body_pos", mujoco.mjtObj.mjOBJ_BODY, "position", None),
    ("body_quat", mujoco.mjtObj.mjOBJ_BODY, "orientation", None),
    ("jnt_axis", mujoco.mjtObj.mjOBJ_JOINT, "axis", None),
    ("jnt_stiffness", mujoco.mjtObj.mjOBJ_JOINT, "stiffness", 0.0),
    ("dof_damping", mujoco.mjtObj.mjOBJ_DOF, "damping", 0.0),
    ("dof_armature", mujoco.mjtObj.mjOBJ_DOF, "armature", 0.0),
    ("dof_frictionloss", mujoco.mjtObj.mjOBJ_DOF, "friction loss", 0.0),
    ("geom_size", mujoco.mjtObj.mjOBJ_GEOM, "size", 0.0),
    ("geom_pos", mujoco.mjtObj.mjOBJ_GEOM, "position", None),
    ("geom_quat", mujoco.mjtObj.mjOBJ_GEOM, "orientation", None),
    ("geom_friction", mujoco.mjtObj.mjOBJ_GEOM, "friction", 0.0),
    ("actuator_gainprm", mujoco.mjtObj.mjOBJ_ACTUATOR, "gain parameters", None),
    ("actuator_biasprm", mujoco.mjtObj.mjOBJ_ACTUATOR, "bias parameters", None),
    ("actuator_gear", mujoco.mjtObj.mjOBJ_ACTUATOR, "gear", None),
    ("key_qpos", mujoco.mjtObj.mjOBJ_KEY, "qpos", None),
    ("key_qvel", mujoco.mjtObj.mjOBJ_KEY, "qvel", None),
    ("key_ctrl", mujoco.mjtObj.mjOBJ_KEY, "ctrl", None),
    ("key_act", mujoco.mjtObj.mjOBJ_KEY, "act", None),
)
# Ranges that count only where their limit is on.
_LIMITED_RANGES = (
    ("jnt_range", "jnt_limited", mujoco.mjtObj.mjOBJ_JOINT, "range"),
    ("actuator_ctrlrange", "actuator_ctrllimited", mujoco.mjtObj.mjOBJ_ACTUATOR, "ctrlrange"),
    ("actuator_forcerange", "actuator_forcelimited", mujoco.mjtObj.mjOBJ_ACTUATOR, "forcerange"),
)
_OPTION_VALUES = ("gravity", "wind", "magnetic", "density", "viscosity", "impratio", "o_margin")


def check_physics(model: mujoco.MjModel, where: str = "the model") -> None:
    """ValueError naming the first physics value of `model` that is not finite or is out of
    its domain: the options (gravity, timestep, ...), masses and inertias, joints, geoms,
    actuators and every keyframe (the `stand` keyframe is where every episode starts)."""
    opt = model.opt
    if not (math.isfinite(opt.timestep) and opt.timestep > 0):
        raise ValueError(f"{where}: option timestep={opt.timestep} must be a finite number > 0")
    for name in _OPTION_VALUES:
        value = np.asarray(getattr(opt, name), dtype=np.float64)
        if not np.isfinite(value).all():
            raise ValueError(f"{where}: option {name}={value.tolist()} is not finite")
    for array, obj, what, low in _PHYSICS_ARRAYS:
        values = np.asarray(getattr(model, array), dtype=np.float64)
        if values.size == 0:
            continue
        rows = values.reshape(values.shape[0], -1)
        bad = ~np.isfinite(rows).all(axis=1)
        if low is not None:
            bad |= (np.nan_to_num(rows, nan=low) < low).any(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            row = rows[i]
            wrong = ~np.isfinite(row) if low is None else ~(np.nan_to_num(row, nan=low - 1) >= low)
            j = int(np.flatnonzero(wrong)[0]) if wrong.any() else 0
            index = f"[{j}]" if row.size > 1 else ""
            kind = obj.name.removeprefix("mjOBJ_").lower()
            rule = "finite" if low is None else f"finite and >= {low:g}"
            raise ValueError(
                f"{where}: {kind} {_name(model, obj, i)!r} {what}{index}={row[j]} must be {rule}"
            )
    for array, limited, obj, what in _LIMITED_RANGES:
        values = np.asarray(getattr(model, array), dtype=np.float64)
        on = np.asarray(getattr(model, limited)).astype(bool)
        for i in map(int, np.flatnonzero(on)):
            lo, hi = values[i]
            if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
                kind = obj.name.removeprefix("mjOBJ_").lower()
                raise ValueError(
                    f"{where}: {kind} {_name(model, obj, int(i))!r} {what} [{lo}, {hi}] must be "
                    "finite with low <= high"
                )


# ---------------------------------------------------------------------------- the model a run used
BUILTIN = "built-in G1 (flashsac_bench.envs.g1.model)"


def _referenced_files(path: Path) -> list[Path]:
    """The files an MJCF reads besides itself: its includes (recursively) and every mesh,
    texture, height field and skin file that exists (missing visual-only ones are stripped by
    the loader)."""
    found: list[Path] = []
    pending = [path]
    while pending:
        current = pending.pop()
        try:
            root = ET.parse(current).getroot()
        except (ET.ParseError, OSError):
            continue  # MuJoCo's own parser names the problem when the model is built
        for element in root.iter("include"):
            file = element.get("file")
            if file:
                included = (current.parent / file).resolve()
                if included.is_file() and included not in found:
                    found.append(included)
                    pending.append(included)
    spec = load_mjcf_spec(str(path))
    for items, folder in (
        (spec.meshes, spec.meshdir),
        (spec.hfields, spec.meshdir),
        (spec.skins, spec.meshdir),
        (spec.textures, spec.texturedir),
    ):
        for item in items:
            files = [item.file, *getattr(item, "cubefiles", [])]
            for file in filter(None, files):
                full = Path(file) if os.path.isabs(file) else path.parent / folder / file
                if full.is_file() and full.resolve() not in found:
                    found.append(full.resolve())
    return found


def model_record(model_file: str | None) -> dict[str, Any]:
    """What a checkpoint carries of the task's model (see the module docstring): `sha256`
    identifies it; for an external MJCF, `files` maps each file's path relative to the MJCF's
    folder to its bytes (the MJCF itself under `main`). Files outside that folder are named in
    `outside` and not stored (they are read where they are)."""
    if model_file is None:
        xml = g1_spec().to_xml().encode()
        return {"model_file": None, "sha256": hashlib.sha256(xml).hexdigest(), "files": None}
    path = Path(model_file).expanduser().resolve()
    main = path.name
    files: dict[str, bytes] = {main: path.read_bytes()}
    outside: list[str] = []
    for file in _referenced_files(path):
        try:
            rel = file.relative_to(path.parent)
        except ValueError:
            outside.append(str(file))
            continue
        files[rel.as_posix()] = file.read_bytes()
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return {
        "model_file": str(model_file),
        "sha256": h.hexdigest(),
        "main": main,
        "files": files,
        "outside": outside,
    }


def materialize(record: dict[str, Any], folder: str | os.PathLike[str]) -> str:
    """Write a model_record's files into `folder`; the MJCF's path there."""
    root = Path(folder).resolve()
    for name, data in record["files"].items():
        target = (root / name).resolve()
        if root not in target.parents:
            raise ValueError(f"the stored model file {name!r} lies outside its folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(bytes(data))
    return str(root / record["main"])
