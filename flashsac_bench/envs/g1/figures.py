"""Figures of the Unitree G1 29-DoF (rev 1.0) as a Python table, for `g1.model`.

Transcribed from UniLab's MuJoCo description of the robot (`g1.xml` / `scene_flat.xml`,
Apache-2.0, derived from Unitree's BSD-3-Clause `unitree_mujoco` model; see NOTICE): the
kinematic tree, explicit inertials, joint axes and ranges, primitive collision geoms, IMU and foot
sites, position-actuator gains and the `stand` keyframe. Visual meshes are deliberately absent:
every body has an explicit inertial, so no physics depends on them. Bodies are listed in the
file's depth-first order, and geoms in their file order, so the compiled arrays line up with the
reference model element by element.
"""

from __future__ import annotations

from typing import NamedTuple

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
FromTo = tuple[float, float, float, float, float, float]

TIMESTEP = 0.006666666666666667  # 1/150 s; integrator implicitfast
# Defaults of the "g1" class (every hinge joint).
JOINT_ARMATURE = 0.01
JOINT_FRICTIONLOSS = 0.3
# Foot contact: "foot" spheres and "foot_capsule" capsules.
FOOT_FRICTION = 0.6
FOOT_SPHERE_RADIUS = 0.005
FOOT_SPHERE_PRIORITY = 1
FOOT_CAPSULE_RADIUS = 0.01
FLOOR_SIZE: Vec3 = (0.0, 0.0, 0.05)


class Inertial(NamedTuple):
    pos: Vec3
    quat: Quat
    mass: float
    diaginertia: Vec3


class Joint(NamedTuple):
    name: str
    axis: Vec3
    range: tuple[float, float]


class Geom(NamedTuple):
    name: str
    # "sphere" / "capsule": class "collision"; "foot_sphere" / "foot_capsule": foot contact.
    kind: str
    radius: float
    pos: Vec3 | None = None
    fromto: FromTo | None = None


class Body(NamedTuple):
    name: str
    parent: str
    pos: Vec3
    quat: Quat | None
    inertial: Inertial
    joint: Joint | None = None
    geoms: tuple[Geom, ...] = ()
    sites: tuple[tuple[str, Vec3], ...] = ()


def _sphere(name: str, radius: float, *, pos: Vec3) -> Geom:
    return Geom(name, "sphere", radius, pos=pos)


def _capsule(name: str, radius: float, *, fromto: FromTo) -> Geom:
    return Geom(name, "capsule", radius, fromto=fromto)


def _foot_sphere(name: str, *, pos: Vec3) -> Geom:
    return Geom(name, "foot_sphere", FOOT_SPHERE_RADIUS, pos=pos)


def _foot_capsule(name: str, *, fromto: FromTo) -> Geom:
    return Geom(name, "foot_capsule", FOOT_CAPSULE_RADIUS, fromto=fromto)


# The pelvis carries the free joint; every other body one hinge.
BODIES: tuple[Body, ...] = (
    Body(
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
        geoms=(_sphere("pelvis_collision", 0.07, pos=(0.0, 0.0, -0.08)),),
        sites=(("imu_in_pelvis", (0.04525, 0.0, -0.08339)),),
    ),
    Body(
        "left_hip_pitch_link",
        "pelvis",
        pos=(0.0, 0.064452, -0.1027),
        quat=None,
        inertial=Inertial(
            pos=(0.002741, 0.047791, -0.02606),
            quat=(0.954862, 0.293964, 0.0302556, 0.030122),
            mass=1.35,
            diaginertia=(0.00181517, 0.00153422, 0.00116212),
        ),
        joint=Joint("left_hip_pitch_joint", axis=(0.0, 1.0, 0.0), range=(-2.5307, 2.8798)),
    ),
    Body(
        "left_hip_roll_link",
        "left_hip_pitch_link",
        pos=(0.0, 0.052, -0.030465),
        quat=(0.996179, 0.0, -0.0873386, 0.0),
        inertial=Inertial(
            pos=(0.029812, -0.001045, -0.087934),
            quat=(0.977808, -1.97119e-05, 0.205576, -0.0403793),
            mass=1.52,
            diaginertia=(0.00254986, 0.00241169, 0.00148755),
        ),
        joint=Joint("left_hip_roll_joint", axis=(1.0, 0.0, 0.0), range=(-0.5236, 2.9671)),
        geoms=(_capsule("left_hip_collision", 0.06, fromto=(0.02, 0.0, 0.0, 0.02, 0.0, -0.08)),),
    ),
    Body(
        "left_hip_yaw_link",
        "left_hip_roll_link",
        pos=(0.025001, 0.0, -0.12412),
        quat=None,
        inertial=Inertial(
            pos=(-0.057709, -0.010981, -0.15078),
            quat=(0.600598, 0.15832, 0.223482, 0.751181),
            mass=1.702,
            diaginertia=(0.00776166, 0.00717575, 0.00160139),
        ),
        joint=Joint("left_hip_yaw_joint", axis=(0.0, 0.0, 1.0), range=(-2.7576, 2.7576)),
        geoms=(
            _capsule("left_thigh_collision", 0.055, fromto=(-0.0, 0.0, -0.03, -0.06, 0.0, -0.17)),
        ),
    ),
    Body(
        "left_knee_link",
        "left_hip_yaw_link",
        pos=(-0.078273, 0.0021489, -0.17734),
        quat=(0.996179, 0.0, 0.0873386, 0.0),
        inertial=Inertial(
            pos=(0.005457, 0.003964, -0.12074),
            quat=(0.923418, -0.0327699, 0.0158246, 0.382067),
            mass=1.932,
            diaginertia=(0.0113804, 0.0112778, 0.00146458),
        ),
        joint=Joint("left_knee_joint", axis=(0.0, 1.0, 0.0), range=(-0.087267, 2.8798)),
        geoms=(
            _capsule("left_shin_collision", 0.045, fromto=(0.01, 0.0, 0.0, 0.01, 0.0, -0.15)),
            _capsule(
                "left_linkage_brace_collision", 0.03, fromto=(0.01, 0.0, -0.2, 0.01, 0.0, -0.28)
            ),
        ),
    ),
    Body(
        "left_ankle_pitch_link",
        "left_knee_link",
        pos=(0.0, -9.4445e-05, -0.30001),
        quat=None,
        inertial=Inertial(
            pos=(-0.007269, 0.0, 0.011137),
            quat=(0.603053, 0.369225, 0.369225, 0.603053),
            mass=0.074,
            diaginertia=(1.89e-05, 1.40805e-05, 6.9195e-06),
        ),
        joint=Joint("left_ankle_pitch_joint", axis=(0.0, 1.0, 0.0), range=(-0.87267, 0.5236)),
    ),
    Body(
        "left_ankle_roll_link",
        "left_ankle_pitch_link",
        pos=(0.0, 0.0, -0.017558),
        quat=None,
        inertial=Inertial(
            pos=(0.026505, 0.0, -0.016425),
            quat=(-0.000481092, 0.728482, -0.000618967, 0.685065),
            mass=0.608,
            diaginertia=(0.00167218, 0.0016161, 0.000217621),
        ),
        joint=Joint("left_ankle_roll_joint", axis=(1.0, 0.0, 0.0), range=(-0.2618, 0.2618)),
        geoms=(
            _foot_sphere("left_foot_contact_0_geom", pos=(-0.05, 0.025, -0.03)),
            _foot_sphere("left_foot_contact_1_geom", pos=(-0.05, -0.025, -0.03)),
            _foot_sphere("left_foot_contact_2_geom", pos=(0.12, 0.03, -0.03)),
            _foot_sphere("left_foot_contact_3_geom", pos=(0.12, -0.03, -0.03)),
            _foot_capsule(
                "left_foot1_collision", fromto=(0.1, -0.026, -0.025, 0.05, -0.027, -0.025)
            ),
            _foot_capsule(
                "left_foot2_collision", fromto=(-0.044, -0.018, -0.025, 0.123, -0.018, -0.025)
            ),
            _foot_capsule(
                "left_foot3_collision", fromto=(-0.052, -0.01, -0.025, 0.13, -0.01, -0.025)
            ),
            _foot_capsule("left_foot4_collision", fromto=(-0.054, 0.0, -0.025, 0.132, 0.0, -0.025)),
            _foot_capsule(
                "left_foot5_collision", fromto=(-0.052, 0.01, -0.025, 0.13, 0.01, -0.025)
            ),
            _foot_capsule(
                "left_foot6_collision", fromto=(-0.044, 0.018, -0.025, 0.123, 0.018, -0.025)
            ),
            _foot_capsule("left_foot7_collision", fromto=(0.1, 0.026, -0.025, 0.05, 0.026, -0.025)),
        ),
        sites=(("left_foot", (0.04, 0.0, -0.037)),),
    ),
    Body(
        "right_hip_pitch_link",
        "pelvis",
        pos=(0.0, -0.064452, -0.1027),
        quat=None,
        inertial=Inertial(
            pos=(0.002741, -0.047791, -0.02606),
            quat=(0.954862, -0.293964, 0.0302556, -0.030122),
            mass=1.35,
            diaginertia=(0.00181517, 0.00153422, 0.00116212),
        ),
        joint=Joint("right_hip_pitch_joint", axis=(0.0, 1.0, 0.0), range=(-2.5307, 2.8798)),
    ),
    Body(
        "right_hip_roll_link",
        "right_hip_pitch_link",
        pos=(0.0, -0.052, -0.030465),
        quat=(0.996179, 0.0, -0.0873386, 0.0),
        inertial=Inertial(
            pos=(0.029812, 0.001045, -0.087934),
            quat=(0.977808, 1.97119e-05, 0.205576, 0.0403793),
            mass=1.52,
            diaginertia=(0.00254986, 0.00241169, 0.00148755),
        ),
        joint=Joint("right_hip_roll_joint", axis=(1.0, 0.0, 0.0), range=(-2.9671, 0.5236)),
        geoms=(_capsule("right_hip_collision", 0.06, fromto=(0.02, 0.0, 0.0, 0.02, 0.0, -0.08)),),
    ),
    Body(
        "right_hip_yaw_link",
        "right_hip_roll_link",
        pos=(0.025001, 0.0, -0.12412),
        quat=None,
        inertial=Inertial(
            pos=(-0.057709, 0.010981, -0.15078),
            quat=(0.751181, 0.223482, 0.15832, 0.600598),
            mass=1.702,
            diaginertia=(0.00776166, 0.00717575, 0.00160139),
        ),
        joint=Joint("right_hip_yaw_joint", axis=(0.0, 0.0, 1.0), range=(-2.7576, 2.7576)),
        geoms=(
            _capsule("right_thigh_collision", 0.055, fromto=(-0.0, 0.0, -0.03, -0.06, 0.0, -0.17)),
        ),
    ),
    Body(
        "right_knee_link",
        "right_hip_yaw_link",
        pos=(-0.078273, -0.0021489, -0.17734),
        quat=(0.996179, 0.0, 0.0873386, 0.0),
        inertial=Inertial(
            pos=(0.005457, -0.003964, -0.12074),
            quat=(0.923439, 0.0345276, 0.0116333, -0.382012),
            mass=1.932,
            diaginertia=(0.011374, 0.0112843, 0.00146452),
        ),
        joint=Joint("right_knee_joint", axis=(0.0, 1.0, 0.0), range=(-0.087267, 2.8798)),
        geoms=(
            _capsule("right_shin_collision", 0.045, fromto=(0.01, 0.0, 0.0, 0.01, 0.0, -0.15)),
            _capsule(
                "right_linkage_brace_collision", 0.03, fromto=(0.01, 0.0, -0.2, 0.01, 0.0, -0.28)
            ),
        ),
    ),
    Body(
        "right_ankle_pitch_link",
        "right_knee_link",
        pos=(0.0, 9.4445e-05, -0.30001),
        quat=None,
        inertial=Inertial(
            pos=(-0.007269, 0.0, 0.011137),
            quat=(0.603053, 0.369225, 0.369225, 0.603053),
            mass=0.074,
            diaginertia=(1.89e-05, 1.40805e-05, 6.9195e-06),
        ),
        joint=Joint("right_ankle_pitch_joint", axis=(0.0, 1.0, 0.0), range=(-0.87267, 0.5236)),
    ),
    Body(
        "right_ankle_roll_link",
        "right_ankle_pitch_link",
        pos=(0.0, 0.0, -0.017558),
        quat=None,
        inertial=Inertial(
            pos=(0.026505, 0.0, -0.016425),
            quat=(0.000481092, 0.728482, 0.000618967, 0.685065),
            mass=0.608,
            diaginertia=(0.00167218, 0.0016161, 0.000217621),
        ),
        joint=Joint("right_ankle_roll_joint", axis=(1.0, 0.0, 0.0), range=(-0.2618, 0.2618)),
        geoms=(
            _foot_sphere("right_foot_contact_0_geom", pos=(-0.05, 0.025, -0.03)),
            _foot_sphere("right_foot_contact_1_geom", pos=(-0.05, -0.025, -0.03)),
            _foot_sphere("right_foot_contact_2_geom", pos=(0.12, 0.03, -0.03)),
            _foot_sphere("right_foot_contact_3_geom", pos=(0.12, -0.03, -0.03)),
            _foot_capsule(
                "right_foot1_collision", fromto=(0.1, -0.026, -0.025, 0.05, -0.026, -0.025)
            ),
            _foot_capsule(
                "right_foot2_collision", fromto=(-0.044, -0.018, -0.025, 0.123, -0.018, -0.025)
            ),
            _foot_capsule(
                "right_foot3_collision", fromto=(-0.052, -0.01, -0.025, 0.13, -0.01, -0.025)
            ),
            _foot_capsule(
                "right_foot4_collision", fromto=(-0.054, 0.0, -0.025, 0.132, 0.0, -0.025)
            ),
            _foot_capsule(
                "right_foot5_collision", fromto=(-0.052, 0.01, -0.025, 0.13, 0.01, -0.025)
            ),
            _foot_capsule(
                "right_foot6_collision", fromto=(-0.044, 0.018, -0.025, 0.123, 0.018, -0.025)
            ),
            _foot_capsule(
                "right_foot7_collision", fromto=(0.1, 0.026, -0.025, 0.05, 0.026, -0.025)
            ),
        ),
        sites=(("right_foot", (0.04, 0.0, -0.037)),),
    ),
    Body(
        "waist_yaw_link",
        "pelvis",
        pos=(0.0, 0.0, 0.0),
        quat=None,
        inertial=Inertial(
            pos=(0.003494, 0.000233, 0.018034),
            quat=(0.289697, 0.591001, -0.337795, 0.672821),
            mass=0.214,
            diaginertia=(0.000163531, 0.000107714, 0.000102205),
        ),
        joint=Joint("waist_yaw_joint", axis=(0.0, 0.0, 1.0), range=(-2.618, 2.618)),
    ),
    Body(
        "waist_roll_link",
        "waist_yaw_link",
        pos=(-0.0039635, 0.0, 0.044),
        quat=None,
        inertial=Inertial(
            pos=(0.0, 2.3e-05, 0.0),
            quat=(0.5, 0.5, -0.5, 0.5),
            mass=0.086,
            diaginertia=(8.245e-06, 7.079e-06, 6.339e-06),
        ),
        joint=Joint("waist_roll_joint", axis=(1.0, 0.0, 0.0), range=(-0.52, 0.52)),
    ),
    Body(
        "torso_link",
        "waist_roll_link",
        pos=(0.0, 0.0, 0.0),
        quat=None,
        inertial=Inertial(
            pos=(0.00203158, 0.000339683, 0.184568),
            quat=(0.999803, -6.03319e-05, 0.0198256, 0.00131986),
            mass=7.818,
            diaginertia=(0.121847, 0.109825, 0.0273735),
        ),
        joint=Joint("waist_pitch_joint", axis=(0.0, 1.0, 0.0), range=(-0.52, 0.52)),
        geoms=(
            _capsule("torso_collision", 0.09, fromto=(0.01, 0.0, 0.08, 0.01, 0.0, 0.2)),
            _sphere("head_collision", 0.06, pos=(0.0, 0.0, 0.43)),
        ),
        sites=(("imu_in_torso", (-0.03959, -0.00224, 0.14792)),),
    ),
    Body(
        "left_shoulder_pitch_link",
        "torso_link",
        pos=(0.0039563, 0.10022, 0.24778),
        quat=(0.990264, 0.139201, 1.38722e-05, -9.86868e-05),
        inertial=Inertial(
            pos=(0.0, 0.035892, -0.011628),
            quat=(0.654152, 0.0130458, -0.326267, 0.68225),
            mass=0.718,
            diaginertia=(0.000465864, 0.000432842, 0.000406394),
        ),
        joint=Joint("left_shoulder_pitch_joint", axis=(0.0, 1.0, 0.0), range=(-3.0892, 2.6704)),
    ),
    Body(
        "left_shoulder_roll_link",
        "left_shoulder_pitch_link",
        pos=(0.0, 0.038, -0.013831),
        quat=(0.990268, -0.139172, 0.0, 0.0),
        inertial=Inertial(
            pos=(-0.000227, 0.00727, -0.063243),
            quat=(0.701256, -0.0196223, -0.00710317, 0.712604),
            mass=0.643,
            diaginertia=(0.000691311, 0.000618011, 0.000388977),
        ),
        joint=Joint("left_shoulder_roll_joint", axis=(1.0, 0.0, 0.0), range=(-1.5882, 2.2515)),
    ),
    Body(
        "left_shoulder_yaw_link",
        "left_shoulder_roll_link",
        pos=(0.0, 0.00624, -0.1032),
        quat=None,
        inertial=Inertial(
            pos=(0.010773, -0.002949, -0.072009),
            quat=(0.716879, -0.0964829, -0.0679942, 0.687134),
            mass=0.734,
            diaginertia=(0.00106187, 0.00103217, 0.000400661),
        ),
        joint=Joint("left_shoulder_yaw_joint", axis=(0.0, 0.0, 1.0), range=(-2.618, 2.618)),
        geoms=(
            _capsule(
                "left_shoulder_yaw_collision", 0.035, fromto=(0.0, 0.0, -0.08, 0.0, 0.0, 0.05)
            ),
        ),
    ),
    Body(
        "left_elbow_link",
        "left_shoulder_yaw_link",
        pos=(0.015783, 0.0, -0.080518),
        quat=None,
        inertial=Inertial(
            pos=(0.064956, 0.004454, -0.010062),
            quat=(0.541765, 0.636132, 0.388821, 0.388129),
            mass=0.6,
            diaginertia=(0.000443035, 0.000421612, 0.000259353),
        ),
        joint=Joint("left_elbow_joint", axis=(0.0, 1.0, 0.0), range=(-1.0472, 2.0944)),
        geoms=(
            _capsule(
                "left_elbow_yaw_collision", 0.035, fromto=(-0.01, 0.0, -0.01, 0.08, 0.0, -0.01)
            ),
        ),
    ),
    Body(
        "left_wrist_roll_link",
        "left_elbow_link",
        pos=(0.1, 0.00188791, -0.01),
        quat=None,
        inertial=Inertial(
            pos=(0.0171394, 0.000537591, 4.8864e-07),
            quat=(0.575338, 0.411667, -0.574906, 0.411094),
            mass=0.085445,
            diaginertia=(5.48211e-05, 4.96646e-05, 3.57798e-05),
        ),
        joint=Joint("left_wrist_roll_joint", axis=(1.0, 0.0, 0.0), range=(-1.97222, 1.97222)),
    ),
    Body(
        "left_wrist_pitch_link",
        "left_wrist_roll_link",
        pos=(0.038, 0.0, 0.0),
        quat=None,
        inertial=Inertial(
            pos=(0.0229999, -0.00111685, -0.00111658),
            quat=(0.249998, 0.661363, 0.293036, 0.643608),
            mass=0.48405,
            diaginertia=(0.000430353, 0.000429873, 0.000164648),
        ),
        joint=Joint("left_wrist_pitch_joint", axis=(0.0, 1.0, 0.0), range=(-1.61443, 1.61443)),
        geoms=(_capsule("left_wrist_collision", 0.035, fromto=(-0.01, 0.0, 0.0, 0.06, 0.0, 0.0)),),
    ),
    Body(
        "left_wrist_yaw_link",
        "left_wrist_pitch_link",
        pos=(0.046, 0.0, 0.0),
        quat=None,
        inertial=Inertial(
            pos=(0.0708244, 0.000191745, 0.00161742),
            quat=(0.510571, 0.526295, 0.468078, 0.493188),
            mass=0.254576,
            diaginertia=(0.000646113, 0.000559993, 0.000147566),
        ),
        joint=Joint("left_wrist_yaw_joint", axis=(0.0, 0.0, 1.0), range=(-1.61443, 1.61443)),
        geoms=(_capsule("left_hand_collision", 0.035, fromto=(0.07, 0.0, 0.0, 0.15, -0.02, 0.0)),),
        sites=(("left_palm", (0.08, 0.0, 0.0)),),
    ),
    Body(
        "right_shoulder_pitch_link",
        "torso_link",
        pos=(0.0039563, -0.10021, 0.24778),
        quat=(0.990264, -0.139201, 1.38722e-05, 9.86868e-05),
        inertial=Inertial(
            pos=(0.0, -0.035892, -0.011628),
            quat=(0.68225, -0.326267, 0.0130458, 0.654152),
            mass=0.718,
            diaginertia=(0.000465864, 0.000432842, 0.000406394),
        ),
        joint=Joint("right_shoulder_pitch_joint", axis=(0.0, 1.0, 0.0), range=(-3.0892, 2.6704)),
    ),
    Body(
        "right_shoulder_roll_link",
        "right_shoulder_pitch_link",
        pos=(0.0, -0.038, -0.013831),
        quat=(0.990268, 0.139172, 0.0, 0.0),
        inertial=Inertial(
            pos=(-0.000227, -0.00727, -0.063243),
            quat=(0.712604, -0.00710317, -0.0196223, 0.701256),
            mass=0.643,
            diaginertia=(0.000691311, 0.000618011, 0.000388977),
        ),
        joint=Joint("right_shoulder_roll_joint", axis=(1.0, 0.0, 0.0), range=(-2.2515, 1.5882)),
    ),
    Body(
        "right_shoulder_yaw_link",
        "right_shoulder_roll_link",
        pos=(0.0, -0.00624, -0.1032),
        quat=None,
        inertial=Inertial(
            pos=(0.010773, 0.002949, -0.072009),
            quat=(0.687134, -0.0679942, -0.0964829, 0.716879),
            mass=0.734,
            diaginertia=(0.00106187, 0.00103217, 0.000400661),
        ),
        joint=Joint("right_shoulder_yaw_joint", axis=(0.0, 0.0, 1.0), range=(-2.618, 2.618)),
        geoms=(
            _capsule(
                "right_shoulder_yaw_collision", 0.035, fromto=(0.0, 0.0, -0.08, 0.0, 0.0, 0.05)
            ),
        ),
    ),
    Body(
        "right_elbow_link",
        "right_shoulder_yaw_link",
        pos=(0.015783, 0.0, -0.080518),
        quat=None,
        inertial=Inertial(
            pos=(0.064956, -0.004454, -0.010062),
            quat=(0.388129, 0.388821, 0.636132, 0.541765),
            mass=0.6,
            diaginertia=(0.000443035, 0.000421612, 0.000259353),
        ),
        joint=Joint("right_elbow_joint", axis=(0.0, 1.0, 0.0), range=(-1.0472, 2.0944)),
        geoms=(
            _capsule(
                "right_elbow_yaw_collision", 0.035, fromto=(-0.01, 0.0, -0.01, 0.08, 0.0, -0.01)
            ),
        ),
    ),
    Body(
        "right_wrist_roll_link",
        "right_elbow_link",
        pos=(0.1, -0.00188791, -0.01),
        quat=None,
        inertial=Inertial(
            pos=(0.0171394, -0.000537591, 4.8864e-07),
            quat=(0.411667, 0.575338, -0.411094, 0.574906),
            mass=0.085445,
            diaginertia=(5.48211e-05, 4.96646e-05, 3.57798e-05),
        ),
        joint=Joint("right_wrist_roll_joint", axis=(1.0, 0.0, 0.0), range=(-1.97222, 1.97222)),
    ),
    Body(
        "right_wrist_pitch_link",
        "right_wrist_roll_link",
        pos=(0.038, 0.0, 0.0),
        quat=None,
        inertial=Inertial(
            pos=(0.0229999, 0.00111685, -0.00111658),
            quat=(0.643608, 0.293036, 0.661363, 0.249998),
            mass=0.48405,
            diaginertia=(0.000430353, 0.000429873, 0.000164648),
        ),
        joint=Joint("right_wrist_pitch_joint", axis=(0.0, 1.0, 0.0), range=(-1.61443, 1.61443)),
        geoms=(_capsule("right_wrist_collision", 0.035, fromto=(-0.01, 0.0, 0.0, 0.06, 0.0, 0.0)),),
    ),
    Body(
        "right_wrist_yaw_link",
        "right_wrist_pitch_link",
        pos=(0.046, 0.0, 0.0),
        quat=None,
        inertial=Inertial(
            pos=(0.0708244, -0.000191745, 0.00161742),
            quat=(0.493188, 0.468078, 0.526295, 0.510571),
            mass=0.254576,
            diaginertia=(0.000646113, 0.000559993, 0.000147566),
        ),
        joint=Joint("right_wrist_yaw_joint", axis=(0.0, 0.0, 1.0), range=(-1.61443, 1.61443)),
        geoms=(_capsule("right_hand_collision", 0.035, fromto=(0.07, 0.0, 0.0, 0.15, 0.02, 0.0)),),
        sites=(("right_palm", (0.08, 0.0, 0.0)),),
    ),
)

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
