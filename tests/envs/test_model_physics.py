"""The model's physics values are checked when it is built (g1.model.check_physics: every
keyframe, gravity and the other options, masses, inertias, joints, geoms, actuators), and what a
checkpoint carries of an external model (g1.model.model_record: the MJCF and every file it
reads) writes back into the very same model (materialize)."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import mujoco
import numpy as np
import pytest

from flashsac_bench.cli.runtime_checks import ModelFileError, check_model_file
from flashsac_bench.config import to_config
from flashsac_bench.envs.g1.model import check_physics, g1_spec, materialize, model_record
from tests.fakes.runs import cli_overrides, fake_env_environ, run_cli


def _g1_xml(edit) -> str:
    """The built-in G1 as MJCF text, edited by `edit(text) -> text`."""
    return edit(g1_spec().to_xml())


def _stand_qpos_nan(text: str) -> str:
    def nan_at_7(match: re.Match[str]) -> str:
        values = match.group(2).split()
        values[7] = "nan"
        return f'{match.group(1)}{" ".join(values)}"'

    return re.sub(r'(<key name="stand" qpos=")([^"]*)"', nan_at_7, text, count=1)


CASES = {
    "stand_keyframe_nan": (_stand_qpos_nan, "key 'stand' qpos"),
    "gravity_nan": (lambda t: t.replace("<option ", '<option gravity="0 0 nan" ', 1), "gravity"),
    "negative_mass": (
        lambda t: re.sub(r'mass="([0-9.]+)"', r'mass="-\1"', t, count=1),
        "mass",
    ),
    "inertia_inf": (
        lambda t: re.sub(r'diaginertia="[^"]*"', 'diaginertia="inf 0.01 0.01"', t, count=1),
        "inertia",
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_model_with_unsound_physics_is_refused_naming_the_value(case, tmp_path):
    edit, named = CASES[case]
    path = tmp_path / f"{case}.xml"
    path.write_text(_g1_xml(edit))
    with pytest.raises(ModelFileError) as info:
        check_model_file(to_config({"task": {"model_file": str(path)}}))
    text = str(info.value)
    assert text.startswith(f"task.model_file={path}: ") and named in text, text


def test_the_built_in_model_is_sound():
    check_physics(g1_spec().compile())
    check_model_file(to_config({}))


def test_the_cli_refuses_it_in_one_line_before_any_env(tmp_path):
    path = tmp_path / "nan_stand.xml"
    path.write_text(_g1_xml(_stand_qpos_nan))
    env = fake_env_environ()
    del env["FLASHSAC_BENCH_ENV_FACTORY"]  # the built-in G1 env reads task.model_file
    args = [*cli_overrides(8, 10), f"task.model_file={path}", f"hydra.run.dir={tmp_path}/run"]
    proc = run_cli(args, env=env, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "key 'stand' qpos" in lines[0] and "finite" in lines[0], lines
    assert not (tmp_path / "run").exists()


def _stl(path: Path) -> None:
    """A binary STL tetrahedron."""
    v = [(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1)]
    faces = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    data = bytearray(80) + struct.pack("<I", len(faces))
    for f in faces:
        data += struct.pack("<3f", 0, 0, 0)
        for i in f:
            data += struct.pack("<3f", *v[i])
        data += b"\0\0"
    path.write_bytes(bytes(data))


def test_the_record_carries_includes_and_meshes_and_writes_them_back(tmp_path):
    src = tmp_path / "robot"
    (src / "parts" / "meshes").mkdir(parents=True)
    _stl(src / "parts" / "meshes" / "tet.stl")
    (src / "parts" / "body.xml").write_text(
        '<mujoco><worldbody><body name="b" pos="0 0 1"><freejoint/>'
        '<geom type="mesh" mesh="tet" density="1234.5"/></body></worldbody></mujoco>'
    )
    (src / "main.xml").write_text(
        '<mujoco><compiler meshdir="parts/meshes"/><asset><mesh name="tet" file="tet.stl"/>'
        '</asset><include file="parts/body.xml"/></mujoco>'
    )
    record = model_record(str(src / "main.xml"))
    assert set(record["files"]) == {"main.xml", "parts/body.xml", "parts/meshes/tet.stl"}
    assert record["outside"] == []
    same = model_record(str(src / "main.xml"))
    assert same["sha256"] == record["sha256"]
    copy = materialize(record, tmp_path / "copy")
    a = mujoco.MjModel.from_xml_path(str(src / "main.xml"))
    b = mujoco.MjModel.from_xml_path(copy)
    for name in ("body_mass", "body_inertia", "mesh_vert", "geom_size"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    # any byte of any file it reads changes the hash
    _stl(src / "parts" / "meshes" / "tet.stl")
    data = bytearray((src / "parts" / "meshes" / "tet.stl").read_bytes())
    data[-3] ^= 1
    (src / "parts" / "meshes" / "tet.stl").write_bytes(bytes(data))
    assert model_record(str(src / "main.xml"))["sha256"] != record["sha256"]
