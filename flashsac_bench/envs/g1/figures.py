"""Figures of the Unitree G1 29-DoF (rev 1.0) as a Python table, for `g1.model`.

Transcribed from UniLab's MuJoCo description of the robot (`g1.xml` / `scene_flat.xml`,
Apache-2.0, derived from Unitree's BSD-3-Clause `unitree_mujoco` model; see NOTICE): the
kinematic tree, explicit inertials, joint axes and ranges, primitive collision geoms, IMU and foot
sites, position-actuator gains and the `stand` keyframe. Visual meshes are deliberately absent:
every body has an explicit inertial, so no physics depends on them. Bodies are listed in the
file's depth-first order, and geoms in their file order, so the compiled arrays line up with the
reference model element by element: the pelvis here, then the legs (`g1.figures_legs`), then the
waist, torso and arms (`g1.figures_upper_body`), in the records of `g1.figure_types`.
"""

from __future__ import annotations

from flashsac_bench.envs.g1.figure_types import Body, Inertial, Vec3, sphere
from flashsac_bench.envs.g1.figures_legs import LEGS
from flashsac_bench.envs.g1.figures_upper_body import UPPER_BODY

TIMESTEP = 0.006666666666666667  # 1/150 s; integrator implicitfast
# Defaults of the "g1" class (every hinge joint).
JOINT_ARMATURE = 0.01
JOINT_FRICTIONLOSS = 0.3
# Foot contact (their radii: `g1.figure_types`).
FOOT_FRICTION = 0.6
FOOT_SPHERE_PRIORITY = 1
FLOOR_SIZE: Vec3 = (0.0, 0.0, 0.05)

# The pelvis carries the free joint; every other body one hinge.
PELVIS = Body(
    "pelvis",
    "world",
    pos=(0.0, 0.0, 0.793),
    quat=None,
    inertial=Inertial(
        pos=(0.0, 0.0, -0.07605),
        quat=(1.0, 0.0, -0.000399148, 0.0),
        mass=3.813,
        diaginertia=(0.010549, 0.0093089, 0.0079184),
    ),
    geoms=(sphere("pelvis_collision", 0.07, pos=(0.0, 0.0, -0.08)),),
    sites=(("imu_in_pelvis", (0.04525, 0.0, -0.08339)),),
)
BODIES: tuple[Body, ...] = (PELVIS, *LEGS, *UPPER_BODY)

# Position servos: (kp, kv, |force| limit) per motor type.
MOTOR_88 = (40.179, 2.558, 88.0)
MOTOR_139 = (99.098, 6.309, 139.0)
MOTOR_50 = (28.501, 1.814, 50.0)
MOTOR_25 = (14.251, 0.907, 25.0)
MOTOR_5 = (16.778, 1.068, 5.0)
_LEG = (MOTOR_88, MOTOR_139, MOTOR_88, MOTOR_139, MOTOR_50, MOTOR_50)
_WAIST = (MOTOR_88, MOTOR_50, MOTOR_50)
_ARM = (MOTOR_25, MOTOR_25, MOTOR_25, MOTOR_25, MOTOR_25, MOTOR_5, MOTOR_5)
# One actuator per hinge, in body order (the canonical joint order of the task).
JOINT_NAMES: tuple[str, ...] = tuple(b.joint.name for b in BODIES if b.joint is not None)
MOTORS: tuple[tuple[float, float, float], ...] = _LEG + _LEG + _WAIST + _ARM + _ARM

CONTACT_EXCLUDES: tuple[tuple[str, str], ...] = (
    ("left_elbow_link", "left_wrist_pitch_link"),
    ("right_elbow_link", "right_wrist_pitch_link"),
    ("pelvis", "right_hip_roll_link"),
    ("pelvis", "left_hip_roll_link"),
)

_LEG_STAND = (-0.312, 0.0, 0.0, 0.669, -0.363, 0.0)
_WAIST_STAND = (0.0, 0.0, 0.0)
_LEFT_ARM_STAND = (0.2, 0.2, 0.0, 0.6, 0.0, 0.0, 0.0)
_RIGHT_ARM_STAND = (0.2, -0.2, 0.0, 0.6, 0.0, 0.0, 0.0)
# `stand` keyframe: the joint targets equal the joint positions.
STAND_JOINTS: tuple[float, ...] = (
    _LEG_STAND + _LEG_STAND + _WAIST_STAND + _LEFT_ARM_STAND + _RIGHT_ARM_STAND
)
STAND_ROOT: tuple[float, ...] = (0.0, 0.0, 0.754, 1.0, 0.0, 0.0, 0.0)
