"""The G1's legs, left then right (hip pitch, hip roll, hip yaw, knee, ankle pitch, ankle
roll), each a child of the pelvis: their inertials, hinges, collision geoms, foot contact geoms
and foot sites, in the reference file's order (`g1.figures`)."""

from __future__ import annotations

from flashsac_bench.envs.g1.figure_types import (
    Body,
    Inertial,
    Joint,
    capsule,
    foot_capsule,
    foot_sphere,
)

LEGS: tuple[Body, ...] = (
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
        geoms=(capsule("left_hip_collision", 0.06, fromto=(0.02, 0.0, 0.0, 0.02, 0.0, -0.08)),),
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
            capsule("left_thigh_collision", 0.055, fromto=(-0.0, 0.0, -0.03, -0.06, 0.0, -0.17)),
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
            capsule("left_shin_collision", 0.045, fromto=(0.01, 0.0, 0.0, 0.01, 0.0, -0.15)),
            capsule(
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
            foot_sphere("left_foot_contact_0_geom", pos=(-0.05, 0.025, -0.03)),
            foot_sphere("left_foot_contact_1_geom", pos=(-0.05, -0.025, -0.03)),
            foot_sphere("left_foot_contact_2_geom", pos=(0.12, 0.03, -0.03)),
            foot_sphere("left_foot_contact_3_geom", pos=(0.12, -0.03, -0.03)),
            foot_capsule(
                "left_foot1_collision", fromto=(0.1, -0.026, -0.025, 0.05, -0.027, -0.025)
            ),
            foot_capsule(
                "left_foot2_collision", fromto=(-0.044, -0.018, -0.025, 0.123, -0.018, -0.025)
            ),
            foot_capsule(
                "left_foot3_collision", fromto=(-0.052, -0.01, -0.025, 0.13, -0.01, -0.025)
            ),
            foot_capsule("left_foot4_collision", fromto=(-0.054, 0.0, -0.025, 0.132, 0.0, -0.025)),
            foot_capsule("left_foot5_collision", fromto=(-0.052, 0.01, -0.025, 0.13, 0.01, -0.025)),
            foot_capsule(
                "left_foot6_collision", fromto=(-0.044, 0.018, -0.025, 0.123, 0.018, -0.025)
            ),
            foot_capsule("left_foot7_collision", fromto=(0.1, 0.026, -0.025, 0.05, 0.026, -0.025)),
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
        geoms=(capsule("right_hip_collision", 0.06, fromto=(0.02, 0.0, 0.0, 0.02, 0.0, -0.08)),),
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
            capsule("right_thigh_collision", 0.055, fromto=(-0.0, 0.0, -0.03, -0.06, 0.0, -0.17)),
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
            capsule("right_shin_collision", 0.045, fromto=(0.01, 0.0, 0.0, 0.01, 0.0, -0.15)),
            capsule(
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
            foot_sphere("right_foot_contact_0_geom", pos=(-0.05, 0.025, -0.03)),
            foot_sphere("right_foot_contact_1_geom", pos=(-0.05, -0.025, -0.03)),
            foot_sphere("right_foot_contact_2_geom", pos=(0.12, 0.03, -0.03)),
            foot_sphere("right_foot_contact_3_geom", pos=(0.12, -0.03, -0.03)),
            foot_capsule(
                "right_foot1_collision", fromto=(0.1, -0.026, -0.025, 0.05, -0.026, -0.025)
            ),
            foot_capsule(
                "right_foot2_collision", fromto=(-0.044, -0.018, -0.025, 0.123, -0.018, -0.025)
            ),
            foot_capsule(
                "right_foot3_collision", fromto=(-0.052, -0.01, -0.025, 0.13, -0.01, -0.025)
            ),
            foot_capsule("right_foot4_collision", fromto=(-0.054, 0.0, -0.025, 0.132, 0.0, -0.025)),
            foot_capsule(
                "right_foot5_collision", fromto=(-0.052, 0.01, -0.025, 0.13, 0.01, -0.025)
            ),
            foot_capsule(
                "right_foot6_collision", fromto=(-0.044, 0.018, -0.025, 0.123, 0.018, -0.025)
            ),
            foot_capsule("right_foot7_collision", fromto=(0.1, 0.026, -0.025, 0.05, 0.026, -0.025)),
        ),
        sites=(("right_foot", (0.04, 0.0, -0.037)),),
    ),
)
