"""The Unitree G1 (29 DoF) on a flat floor, built in Python with `mujoco.MjSpec`.

`build_g1_model()` compiles the figures of `g1_figures` into the physics of UniLab's
`scene_flat.xml` without a single mesh: explicit inertials, hinge axes and ranges with armature
and friction loss, primitive collision geoms (foot contact spheres and capsules included), IMU and
foot sites, position servos with per-joint kp/kv/force limits, the `stand` keyframe and the
implicitfast integrator at 1/150 s. Only the sensors the task reads are added (see TASK_SENSORS);
the accelerometers and foot contact sensors of the reference are left out because nothing uses
them and acceleration-stage sensors cost time in every `mj_step`.

`task_spec()` returns either this model or an external MJCF (`mjcf_loader`), with the task
sensors ensured, ready for the env to compile.
"""

from __future__ import annotations

from typing import NamedTuple

import mujoco

from flashsac_bench.envs import g1_figures as fig
from flashsac_bench.envs.mjcf_loader import load_mjcf_spec

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


def _add_geom(body: mujoco.MjsBody, geom: fig.Geom) -> None:
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


def _add_body(parent: mujoco.MjsBody, body: fig.Body) -> mujoco.MjsBody:
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
