"""learner.compile_artifacts: the key that names a saved compile, and the file that holds it.
Nothing is compiled here (tests/learner/test_compile_store.py compiles)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from flashsac_bench.learner import compile_artifacts as artifacts
from tests.learner.helpers import tiny_learner

KEY = {"function": "m.f", "closure": ["tensor", "torch.float32", [3], [1], "cpu"], "args": []}
KEY["environment"] = {"torch": torch.__version__, "format": artifacts.FORMAT}


def _closure_structure(learner) -> object:
    cycle = learner.path.cycle
    return artifacts.structure({"statics": cycle.statics, "state": cycle.state})


def test_the_structure_is_the_config_not_the_history():
    """Two learners of one config describe alike, also after one of them drew random numbers
    (its RNG's cached draw constants are private); another width does not."""
    a, b = tiny_learner(), tiny_learner(seed=3)
    b.act_random(4)
    b.path.cycle.sample()
    assert _closure_structure(a) == _closure_structure(b)
    assert _closure_structure(a) != _closure_structure(tiny_learner(critic_hidden_dim=24))
    json.dumps(_closure_structure(a))  # JSON data: the key is hashed as JSON


def test_a_tensor_is_described_by_its_layout_not_its_values():
    x = torch.zeros(2, 3)
    assert artifacts.structure(x) == ["tensor", "torch.float32", [2, 3], [3, 1], "cpu"]
    assert artifacts.structure(x + 1) == artifacts.structure(x)
    assert artifacts.structure(x.t()) != artifacts.structure(x)


def test_a_file_reads_back_its_variants(tmp_path):
    path = tmp_path / artifacts.key_name(KEY)
    sources = artifacts.source_hashes(["flashsac_bench.learner.update"])
    artifacts.write(path, KEY, sources, [b"first", b"second variant"])
    assert artifacts.read(path, KEY) == [b"first", b"second variant"]
    assert path.name.startswith("f-") and list(tmp_path.iterdir()) == [path]  # no temp left


def _unusable(path, key=KEY) -> str:
    with pytest.raises(artifacts.UnusableError) as err:
        artifacts.read(path, key)
    return str(err.value)


def test_a_file_of_other_settings_is_unusable(tmp_path):
    path = tmp_path / "f.bin"
    artifacts.write(path, KEY, {}, [b"code"])
    other_torch = {**KEY, "environment": {**KEY["environment"], "torch": "2.11.0"}}
    assert f"torch {torch.__version__} (this is 2.11.0)" in _unusable(path, other_torch)
    other_closure = {**KEY, "closure": ["tensor", "torch.float32", [4], [1], "cpu"]}
    assert _unusable(path, other_closure) == "made for other settings: closure"


def test_a_file_whose_traced_sources_changed_is_unusable(tmp_path):
    path = tmp_path / "f.bin"
    stale = {"flashsac_bench.learner.update": "0" * 64}
    artifacts.write(path, KEY, stale, [b"code"])
    assert _unusable(path) == "traced sources changed since: flashsac_bench.learner.update"


@pytest.mark.parametrize("damage", ["flip", "truncate", "magic", "header"])
def test_a_damaged_file_is_unusable(tmp_path, damage):
    path = tmp_path / "f.bin"
    artifacts.write(path, KEY, {}, [b"compiled code", b"more"])
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[-6] ^= 1
    elif damage == "truncate":
        del data[-1]
    elif damage == "magic":
        data[0] ^= 1
    else:
        data[len(artifacts.MAGIC) + 1] = ord("!")
    path.write_bytes(bytes(data))
    reason = _unusable(path)
    expected = {
        "flip": "variant 0 is corrupt",
        "truncate": "variant 1 is corrupt",
        "magic": "not a saved compile",
        "header": "unreadable header",
    }[damage]
    assert reason.startswith(expected), reason


@pytest.mark.slow  # two fresh interpreters
def test_the_environment_is_the_same_in_every_process():
    """Process-independent (no set order, no addresses): a warm start finds the same key."""
    code = "import json; from flashsac_bench.learner import compile_artifacts as a; "
    code += "print(json.dumps(a.environment(['cpu']), sort_keys=True))"
    seen = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        seen.add(out.stdout)
    assert len(seen) == 1
