"""What the wheel installs: the product (flashsac_bench, its config tree, the SLURM launcher
plugin) and nothing else. The lab (lab/) stays in the clone; a product subpackage missing from
pyproject's explicit package list would install a package that fails on import."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What the build reads; the copy keeps the build's own files (build/, *.egg-info) out of the clone.
SOURCES = (
    "pyproject.toml",
    "README.md",
    "NOTICE",
    "flashsac_bench",
    "conf",
    "hydra_plugins",
    "lab",
)


def _shipped(tree: Path, prefix: str) -> set[str]:
    """The wheel paths of the files under `tree` (relative to the repository) as `prefix`/..."""
    files = [p for p in tree.rglob("*") if p.suffix in (".py", ".yaml") and p.is_file()]
    return {f"{prefix}/{p.relative_to(tree).as_posix()}" for p in files}


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not installed: the wheel is built without build isolation")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, src / name)
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + ["-w", str(tmp / "dist"), str(src)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = (tmp / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


@pytest.mark.slow
def test_the_wheel_ships_the_product_and_not_the_lab(wheel_names: list[str]) -> None:
    top = {n.split("/")[0] for n in wheel_names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"flashsac_bench", "hydra_plugins"}


@pytest.mark.slow
def test_the_wheel_holds_every_product_module_and_config(wheel_names: list[str]) -> None:
    want = _shipped(ROOT / "flashsac_bench", "flashsac_bench")
    want |= _shipped(ROOT / "conf", "flashsac_bench/conf")
    want |= _shipped(ROOT / "hydra_plugins", "hydra_plugins")
    assert sorted(want - set(wheel_names)) == []
