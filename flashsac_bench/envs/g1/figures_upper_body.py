"""The G1's upper body: the waist (yaw, roll), the torso and the arms, left then right (shoulder
pitch, roll, yaw, elbow, wrist roll, pitch, yaw): their inertials, hinges, collision geoms and
sites, in the reference file's order (`g1.figures`)."""

from __future__ import annotations

from flashsac_bench.envs.g1.figure_types import Body, Inertial, Joint, capsule, sphere

UPPER_BODY: tuple[Body, ...] = (
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
            capsule("torso_collision", 0.09, fromto=(0.01, 0.0, 0.08, 0.01, 0.0, 0.2)),
            sphere("head_collision", 0.06, pos=(0.0, 0.0, 0.43)),
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
            capsule("left_shoulder_yaw_collision", 0.035, fromto=(0.0, 0.0, -0.08, 0.0, 0.0, 0.05)),
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
            capsule(
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
        geoms=(capsule("left_wrist_collision", 0.035, fromto=(-0.01, 0.0, 0.0, 0.06, 0.0, 0.0)),),
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
        geoms=(capsule("left_hand_collision", 0.035, fromto=(0.07, 0.0, 0.0, 0.15, -0.02, 0.0)),),
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
            capsule(
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
            capsule(
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
        geoms=(capsule("right_wrist_collision", 0.035, fromto=(-0.01, 0.0, 0.0, 0.06, 0.0, 0.0)),),
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
        geoms=(capsule("right_hand_collision", 0.035, fromto=(0.07, 0.0, 0.0, 0.15, 0.02, 0.0)),),
        sites=(("right_palm", (0.08, 0.0, 0.0)),),
    ),
)
