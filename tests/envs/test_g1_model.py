"""The built-in G1 against UniLab's reference MJCF, and the external-model loader."""

from __future__ import annotations

import copy
from pathlib import Path

import mujoco
import numpy as np
import pytest

from flashsac_bench.envs.g1.mjcf_loader import load_mjcf_spec
from flashsac_bench.envs.g1.model import TASK_SENSORS, build_g1_model, task_spec


def _reference_without_meshes(scene: Path) -> mujoco.MjModel:
    """The reference scene with every mesh geom and mesh asset deleted (written independently of
    mjcf_loader, so the comparison does not test the loader with itself)."""
    spec = mujoco.MjSpec.from_file(str(scene))
    for geom in [g for g in spec.geoms if g.type == mujoco.mjtGeom.mjGEOM_MESH]:
        assert geom.contype == 0 and geom.conaffinity == 0, geom.name
        spec.delete(geom)
    for mesh in list(spec.meshes):
        spec.delete(mesh)
    return spec.compile()


@pytest.fixture(scope="module")
def ours() -> mujoco.MjModel:
    return build_g1_model()


@pytest.fixture
def reference(shared_reference: Path) -> mujoco.MjModel:
    return _reference_without_meshes(shared_reference / "g1_unilab" / "scene_flat.xml")


def _names(model: mujoco.MjModel, obj: mujoco.mjtObj, count: int) -> list[str]:
    return [mujoco.mj_id2name(model, obj, i) for i in range(count)]


def _at_stand(model: mujoco.MjModel) -> mujoco.MjData:
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("stand").id)
    mujoco.mj_forward(model, data)
    return data


def test_builtin_model_structure(ours: mujoco.MjModel) -> None:
    assert (ours.nq, ours.nv, ours.nu, ours.nbody) == (36, 35, 29, 31)
    assert ours.opt.timestep == pytest.approx(1 / 150, abs=1e-15)
    assert ours.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert ours.nmesh == 0 and mujoco.mjtGeom.mjGEOM_MESH not in ours.geom_type
    assert ours.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    # Eight foot contact spheres, fourteen foot capsules, all with friction 0.6.
    foot = [i for i in range(ours.ngeom) if "foot" in ours.geom(i).name]
    assert len(foot) == 22
    np.testing.assert_array_equal(ours.geom_friction[foot, 0], 0.6)
    for sensor in TASK_SENSORS:
        assert ours.sensor(sensor.name).type == sensor.type
    for site in ("imu_in_pelvis", "imu_in_torso", "left_foot", "right_foot"):
        ours.site(site)  # raises KeyError when missing


@pytest.mark.shared
def test_builtin_matches_reference_figures(ours: mujoco.MjModel, reference: mujoco.MjModel) -> None:
    assert _names(ours, mujoco.mjtObj.mjOBJ_BODY, ours.nbody) == _names(
        reference, mujoco.mjtObj.mjOBJ_BODY, reference.nbody
    )
    assert _names(ours, mujoco.mjtObj.mjOBJ_JOINT, ours.njnt) == _names(
        reference, mujoco.mjtObj.mjOBJ_JOINT, reference.njnt
    )
    tol = dict(rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours.body_mass.sum(), reference.body_mass.sum(), **tol)
    np.testing.assert_allclose(ours.body_mass, reference.body_mass, **tol)
    np.testing.assert_allclose(
        _at_stand(ours).xpos, _at_stand(reference).xpos, **tol, err_msg="body world positions"
    )
    np.testing.assert_allclose(ours.jnt_range, reference.jnt_range, **tol)
    np.testing.assert_allclose(ours.jnt_axis, reference.jnt_axis, **tol)
    np.testing.assert_allclose(ours.actuator_gainprm, reference.actuator_gainprm, **tol)
    np.testing.assert_allclose(ours.actuator_biasprm, reference.actuator_biasprm, **tol)
    np.testing.assert_allclose(ours.actuator_forcerange, reference.actuator_forcerange, **tol)
    np.testing.assert_array_equal(ours.actuator_trnid, reference.actuator_trnid)
    # The rest of what the physics reads, so the dynamics test below cannot pass by luck.
    for field in (
        "body_pos", "body_quat", "body_ipos", "body_iquat", "body_inertia",
        "dof_armature", "dof_frictionloss", "dof_damping",
        "geom_type", "geom_size", "geom_pos", "geom_quat", "geom_friction", "geom_condim",
        "geom_priority", "geom_contype", "geom_conaffinity", "geom_bodyid",
        "key_qpos", "key_ctrl",
    ):  # fmt: skip
        np.testing.assert_allclose(getattr(ours, field), getattr(reference, field), **tol)
    assert ours.nexclude == reference.nexclude == 4


@pytest.mark.shared
@pytest.mark.parametrize("actuated", [True, False], ids=["servos_hold_stand", "passive"])
def test_dynamics_match_reference(
    ours: mujoco.MjModel, reference: mujoco.MjModel, actuated: bool
) -> None:
    def rollout(model: mujoco.MjModel) -> np.ndarray:
        model = copy.copy(model)  # leave the fixtures' options alone
        if not actuated:
            model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ACTUATION
        data = _at_stand(model)
        states = []
        for _ in range(100):
            mujoco.mj_step(model, data)
            states.append(np.concatenate([data.qpos, data.qvel]))
        return np.array(states)

    a, b = rollout(ours), rollout(reference)
    assert np.abs(a - b).max() < 1e-9
    # The 100 steps really moved the robot (sagging under gravity), so the match means something.
    assert np.abs(a[-1, 2] - a[0, 2]) > 1e-3


# -- external models ----------------------------------------------------------------------------

_MJCF = """
<mujoco>
  <compiler meshdir="meshes"/>
  <asset><mesh name="shell" file="{file}"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 .1"/>
    <body name="link" pos="0 0 1">
      <freejoint/>
      {inertial}
      <geom name="box" type="box" size=".1 .1 .1"/>
      <geom name="shell_geom" type="mesh" mesh="shell" {collision}/>
    </body>
  </worldbody>
</mujoco>
"""
_VISUAL = 'contype="0" conaffinity="0" density="0"'
_INERTIAL = '<inertial pos="0 0 0" mass="1" diaginertia=".01 .01 .01"/>'
# A tetrahedron as a Wavefront OBJ.
_OBJ = "v 0 0 0\nv .1 0 0\nv 0 .1 0\nv 0 0 .1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


def _write_model(tmp_path: Path, *, collision: str, inertial: str = _INERTIAL) -> Path:
    path = tmp_path / "robot.xml"
    path.write_text(_MJCF.format(file="shell.obj", collision=collision, inertial=inertial))
    return path


def test_missing_visual_mesh_is_stripped(tmp_path: Path) -> None:
    model = load_mjcf_spec(str(_write_model(tmp_path, collision=_VISUAL))).compile()
    assert model.nmesh == 0
    assert [model.geom(i).name for i in range(model.ngeom)] == ["floor", "box"]
    assert model.body("link").mass[0] == pytest.approx(1.0)


def test_present_visual_mesh_is_kept(tmp_path: Path) -> None:
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "shell.obj").write_text(_OBJ)
    model = load_mjcf_spec(str(_write_model(tmp_path, collision=_VISUAL))).compile()
    assert model.nmesh == 1 and model.geom("shell_geom").type == mujoco.mjtGeom.mjGEOM_MESH


def test_missing_collision_mesh_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = _write_model(tmp_path, collision="")
    with pytest.raises(FileNotFoundError, match=r"meshes/shell\.obj.*shell_geom.*collides"):
        load_mjcf_spec(str(path))


def test_missing_mesh_that_carries_mass_is_an_error(tmp_path: Path) -> None:
    # Visual flags but no explicit inertial: the mesh geom would give the body its mass.
    path = _write_model(tmp_path, collision='contype="0" conaffinity="0"', inertial="")
    with pytest.raises(FileNotFoundError, match=r"shell\.obj.*carries inertia"):
        load_mjcf_spec(str(path))


def test_missing_model_file() -> None:
    with pytest.raises(FileNotFoundError, match="does-not-exist.xml"):
        load_mjcf_spec("does-not-exist.xml")


def test_external_model_without_task_sites_is_refused(tmp_path: Path) -> None:
    path = _write_model(tmp_path, collision=_VISUAL)
    with pytest.raises(ValueError, match="imu_in_torso"):
        task_spec(str(path))


@pytest.mark.shared
def test_reference_scene_loads_as_task_model(shared_reference: Path) -> None:
    scene = shared_reference / "g1_unilab" / "scene_flat.xml"
    model = task_spec(str(scene)).compile()
    assert model.nmesh == 0 and model.nu == 29
    # Reference sensors of the same name are reused, the missing torso_quat is added.
    assert model.sensor("torso_gyro").type == mujoco.mjtSensor.mjSENS_GYRO
    assert model.sensor("torso_quat").objid[0] == model.site("imu_in_torso").id
