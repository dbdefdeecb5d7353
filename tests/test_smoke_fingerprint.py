"""The defaults compute the same numbers: a 200-iteration `+experiment=smoke` run on the CPU
(eager and compile path) ends with exactly the checkpoint tensors recorded in
tests/data/smoke_fingerprint.json.

A refactor of the learner, the runner or the env that changes one bit of training fails here.
A change that is meant to change the numbers rewrites the reference, and says why in its commit:

    python tests/test_smoke_fingerprint.py --write

Bits depend on the machine (Inductor's CPU kernels follow the vector ISA) and on the torch and
MuJoCo builds, so the reference records those; on a machine that differs the test skips and
says how.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REFERENCE = Path(__file__).parent / "data" / "smoke_fingerprint.json"
PATHS = ("eager", "compile")
ITERATIONS = 200


def machine() -> dict[str, str]:
    """What the bits of a CPU run depend on besides our code."""
    import mujoco
    import torch

    return {
        "torch": torch.__version__,
        "mujoco": mujoco.__version__,
        "machine": platform.machine(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def fingerprint(path: str) -> dict[str, str]:
    """sha256 (first 16 hex digits) of every learner tensor and of the replay ring after a
    200-iteration smoke run on `path`."""
    import torch

    with tempfile.TemporaryDirectory(prefix="smoke_fp_") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "flashsac_bench",
            "+experiment=smoke",
            f"run.iterations={ITERATIONS}",
            f"path={path}",
            "run.progress=plain",
            "logger=none",
            f"hydra.run.dir={tmp}",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        ckpt = sorted((Path(tmp) / "checkpoints").glob("iter_*.pt"))[-1]
        # Checkpoints load weights-only (tensors and plain values: runner.torch_files).
        payload = torch.load(ckpt, map_location="cpu", weights_only=True)
    tensors = dict(payload["learner"]["tensors"])
    tensors["replay.storage"] = payload["replay"]["storage"]
    assert payload["iteration"] == ITERATIONS

    def digest(t) -> str:
        return hashlib.sha256(t.detach().contiguous().numpy().tobytes()).hexdigest()[:16]

    return {name: digest(t) for name, t in sorted(tensors.items())}


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
def test_smoke_run_ends_with_the_recorded_tensors(path: str) -> None:
    ref = json.loads(REFERENCE.read_text())
    here = machine()
    if here != ref["machine"]:
        pytest.skip(
            f"the reference was recorded on {ref['machine']}, this machine is {here}; "
            "record one here with: python tests/test_smoke_fingerprint.py --write"
        )
    got = fingerprint(path)
    want = ref["paths"][path]
    changed = sorted(k for k in want if got.get(k) != want[k])
    assert set(got) == set(want), f"tensor names changed: {sorted(set(got) ^ set(want))}"
    assert not changed, f"path={path}: these tensors changed bits: {changed}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/test_smoke_fingerprint.py --write")
    REFERENCE.write_text(
        json.dumps({"machine": machine(), "paths": {p: fingerprint(p) for p in PATHS}}, indent=1)
        + "\n"
    )
    print(f"wrote {REFERENCE}")
