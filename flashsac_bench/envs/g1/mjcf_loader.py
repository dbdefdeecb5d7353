"""Load an external G1 MJCF (`task.model_file`) whose mesh files may be absent.

UniLab's G1 (and mjlab's, or MuJoCo Menagerie's) references STL meshes that a PyPI install does not
ship. A mesh geom that can neither collide (contype = conaffinity = 0) nor add mass is visual only:
when its file is missing it is stripped, together with the mesh asset. A missing file that the
physics needs (a collision mesh, a mesh that carries inertia, a height field) is an error that
names the file. Missing texture and skin files are visual only and stripped too.
"""

from __future__ import annotations

import math
import os

import mujoco


def _resolve(spec: mujoco.MjSpec, asset_dir: str, file: str) -> str:
    # Mirrors MuJoCo: absolute paths as given, otherwise model dir / asset dir / file.
    if os.path.isabs(file):
        return file
    if os.path.isabs(asset_dir):
        return os.path.join(asset_dir, file)
    return os.path.join(spec.modelfiledir, asset_dir, file)


def _adds_mass(spec: mujoco.MjSpec, geom: mujoco.MjsGeom) -> bool:
    lo, hi = spec.compiler.inertiagrouprange
    if not lo <= geom.group <= hi:
        return False
    from_geoms = spec.compiler.inertiafromgeom
    if from_geoms == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE:
        return False
    if from_geoms == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_AUTO:
        if geom.parent.explicitinertial:
            return False
    mass = geom.mass
    return (mass > 0) if not math.isnan(mass) else geom.density > 0


def _strip_missing_meshes(spec: mujoco.MjSpec) -> None:
    geoms_by_mesh: dict[str, list[mujoco.MjsGeom]] = {}
    for geom in spec.geoms:
        if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
            geoms_by_mesh.setdefault(geom.meshname, []).append(geom)
    for mesh in list(spec.meshes):
        if not mesh.file:
            continue  # vertices given inline
        path = _resolve(spec, spec.meshdir, mesh.file)
        if os.path.isfile(path):
            continue
        users = geoms_by_mesh.get(mesh.name, [])
        for geom in users:
            collides = geom.contype != 0 or geom.conaffinity != 0
            if collides or _adds_mass(spec, geom):
                role = "collides" if collides else "carries inertia"
                raise FileNotFoundError(
                    f"mesh file {path!r} (mesh {mesh.name!r}) is missing, and geom "
                    f"{geom.name or '<unnamed>'!r} on body {geom.parent.name!r} {role}, so the "
                    "physics needs it; provide the mesh files or use the built-in model "
                    "(task.model_file=null)"
                )
        for geom in users:
            spec.delete(geom)
        spec.delete(mesh)


def _strip_missing_textures(spec: mujoco.MjSpec) -> None:
    missing = set()
    for texture in list(spec.textures):
        files = [texture.file, *texture.cubefiles]
        paths = [_resolve(spec, spec.texturedir, f) for f in files if f]
        if any(not os.path.isfile(p) for p in paths):
            missing.add(texture.name)
            spec.delete(texture)
    if missing:
        for material in spec.materials:
            material.textures = ["" if t in missing else t for t in material.textures]


def _check_hfields(spec: mujoco.MjSpec) -> None:
    for hfield in spec.hfields:
        path = _resolve(spec, spec.meshdir, hfield.file) if hfield.file else ""
        if path and not os.path.isfile(path):
            raise FileNotFoundError(f"height field file {path!r} ({hfield.name!r}) is missing")


def load_mjcf_spec(model_file: str) -> mujoco.MjSpec:
    """Parse `model_file` and strip the visual-only assets whose files are missing."""
    path = os.path.abspath(os.path.expanduser(model_file))
    if os.path.isdir(path):
        raise IsADirectoryError(f"task.model_file {model_file!r} is a directory, not an MJCF file")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"task.model_file {model_file!r} does not exist ({path})")
    spec = mujoco.MjSpec.from_file(path)
    _strip_missing_meshes(spec)
    _strip_missing_textures(spec)
    for skin in list(spec.skins):
        if skin.file and not os.path.isfile(_resolve(spec, spec.meshdir, skin.file)):
            spec.delete(skin)
    _check_hfields(spec)
    return spec
