"""The records the G1's figures are written in (`g1.figures`): bodies with their inertial,
hinge, collision geoms and sites, and the constructors of the geoms the tables use."""

from __future__ import annotations

from typing import NamedTuple

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
FromTo = tuple[float, float, float, float, float, float]

# The foot contact geoms' radii: "foot" spheres and "foot_capsule" capsules (their friction and
# priority: `g1.figures`).
FOOT_SPHERE_RADIUS = 0.005
FOOT_CAPSULE_RADIUS = 0.01


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


def sphere(name: str, radius: float, *, pos: Vec3) -> Geom:
    return Geom(name, "sphere", radius, pos=pos)


def capsule(name: str, radius: float, *, fromto: FromTo) -> Geom:
    return Geom(name, "capsule", radius, fromto=fromto)


def foot_sphere(name: str, *, pos: Vec3) -> Geom:
    return Geom(name, "foot_sphere", FOOT_SPHERE_RADIUS, pos=pos)


def foot_capsule(name: str, *, fromto: FromTo) -> Geom:
    return Geom(name, "foot_capsule", FOOT_CAPSULE_RADIUS, fromto=fromto)
