"""Files we read never run code, and a file that changed after it was written is never used.

Every loader (resume, evaluate, export, convert) reads through runner.torch_files: a crafted
pickle whose payload would create a marker file is refused with one line and the marker never
appears; 256 flipped bytes inside a tensor are found by the archive's CRCs; a learner that is
not finite is refused, named; a checkpoint of the earlier format (pickled numpy) is refused as
such. Numpy state round-trips through the plain-value encoding bit for bit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from flashsac_bench.runner.checkpoint import (
    CHECKPOINT_FORMAT,
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
)
from flashsac_bench.runner.torch_files import from_plain, safe_load, to_plain
from tests.fakes.runs import cli_overrides, fake_env_environ, with_repo_on_path


class _Payload:
    """Unpickling this object would create `marker` (what a malicious checkpoint does)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _loader(name: str, path: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    """The command line of one loader, reading `path`."""
    if name == "resume":
        args = ["flashsac_bench", *cli_overrides(8, 10), f"run.resume={path}"]
        args.append(f"hydra.run.dir={tmp / 'resumed'}")
        env = fake_env_environ()
    else:
        key = "source" if name == "convert" else "checkpoint"
        args = [f"flashsac_bench.{name}", f"{key}={path}"]
        if name == "evaluate":
            args += ["render=false", "episodes=1", "num_envs=1", f"out_dir={tmp / 'out'}"]
        if name == "export":
            args += [f"out_dir={tmp / 'out'}", "onnx=false"]
        if name == "convert":
            args += [f"out={tmp / 'out' / 'converted.pt'}"]
        env = with_repo_on_path(dict(os.environ))
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=300
    )


LOADERS = ("resume", "evaluate", "export", "convert")


def _refused(proc: subprocess.CompletedProcess[str], *texts: str) -> str:
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for text in texts:
        assert text in lines[0], lines[0]
    return lines[0]


def _payload_of(checkpoint: Path) -> dict:
    return load_checkpoint(checkpoint)


# ---------------------------------------------------------------------------- no code from files
@pytest.mark.parametrize("loader", LOADERS)
def test_a_crafted_pickle_is_refused_by_every_loader_and_runs_nothing(
    loader, trained_run, tmp_path
):
    marker = tmp_path / "pwned"
    if loader == "convert":  # a "UniLab" file: what users download and convert
        from flashsac_bench.cli.convert import flashsac_to_unilab

        evil, _ = flashsac_to_unilab(trained_run.checkpoint, "cpu")
    else:
        evil = {"format": CHECKPOINT_FORMAT, **_payload_of(trained_run.checkpoint)}
        evil["env"] = to_plain(evil["env"])
        evil["staging"] = to_plain(evil["staging"])
    evil["extra"] = _Payload(marker)
    path = tmp_path / "evil.pt"
    torch.save(evil, path)
    line = _refused(_loader(loader, path, tmp_path), str(path), "refused", "pickled Python objects")
    assert "open" in line  # the object it would have called, named
    assert not marker.exists()
    assert not (tmp_path / "out").exists() and not (tmp_path / "resumed").exists()


def test_load_checkpoint_refuses_without_unpickling(tmp_path):
    marker = tmp_path / "pwned"
    torch.save({"format": CHECKPOINT_FORMAT, "x": _Payload(marker)}, tmp_path / "evil.pt")
    with pytest.raises(CheckpointError, match="refused: it holds pickled Python objects"):
        load_checkpoint(tmp_path / "evil.pt")
    assert not marker.exists()


def test_a_checkpoint_of_the_earlier_format_is_refused_as_such(tmp_path):
    """Format 1 stored the env state as pickled numpy arrays: loading those needs numpy's
    reconstructors, which weights-only loading does not run."""
    old = {"format": 1, "iteration": 3, "env": {"x": np.zeros(4)}, "learner": {}}
    torch.save(old, tmp_path / "old.pt")
    with pytest.raises(CheckpointError, match="earlier version of flashsac_bench .checkpoint "):
        load_checkpoint(tmp_path / "old.pt")


def test_plain_values_round_trip_bit_for_bit_and_objects_are_refused(tmp_path):
    state = {
        "f64": np.random.default_rng(0).normal(size=(3, 4)),
        "u64": np.array([[2**63 + 5, 1]], dtype=np.uint64),
        "b": np.array([True, False]),
        "f32_0d": np.float32(1.5),
        "i_scalar": np.int64(-7),
        "view": np.arange(12.0).reshape(3, 4)[:, 1],  # not contiguous
        "nested": [{"t": (np.ones(2, np.int32), 3)}],
        "rng": np.random.default_rng(1).bit_generator.state,
        "raw": b"\x00\x01bytes",
    }
    path = tmp_path / "c.pt"
    learner = {"dims": [1, 1, 1], "tensors": {"w": torch.ones(2)}}
    payload = {"iteration": 1, "learner": learner, "replay": None}
    save_checkpoint(path, {**payload, "env": state, "staging": None, "rows_all": []})
    # The file's encoding alone (no run holds this state: load_checkpoint would refuse it).
    back = from_plain(safe_load(path))["env"]
    for key in ("f64", "u64", "b", "view"):
        assert back[key].dtype == state[key].dtype and np.array_equal(back[key], state[key])
    assert type(back["f32_0d"]) is np.float32 and back["f32_0d"] == state["f32_0d"]
    assert type(back["i_scalar"]) is np.int64 and back["i_scalar"] == -7
    assert back["nested"][0]["t"][1] == 3 and back["nested"][0]["t"][0].dtype == np.int32
    assert back["rng"] == state["rng"] and back["raw"] == state["raw"]
    with pytest.raises(TypeError, match=r"checkpoint.env.gen is a numpy.random.*Generator"):
        to_plain({"env": {"gen": np.random.default_rng(0)}})
    assert from_plain(to_plain(state))["raw"] == state["raw"]


# ---------------------------------------------------------------------------- integrity
def _flip_inside_largest_tensor(src: Path, dst: Path) -> str:
    """dst = src with 256 bytes inverted in the middle of its largest tensor record."""
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as archive:
        info = max(
            (i for i in archive.infolist() if "/data/" in i.filename), key=lambda i: i.file_size
        )
    head = info.header_offset
    name_len = int.from_bytes(data[head + 26 : head + 28], "little")
    extra_len = int.from_bytes(data[head + 28 : head + 30], "little")
    start = head + 30 + name_len + extra_len + info.file_size // 2 - 128
    for k in range(start, start + 256):
        data[k] ^= 0xFF
    dst.write_bytes(bytes(data))
    return info.filename


@pytest.mark.parametrize("loader", LOADERS)
def test_flipped_bytes_are_found_by_every_loader(loader, trained_run, tmp_path):
    bad = tmp_path / "flipped.pt"
    record = _flip_inside_largest_tensor(trained_run.checkpoint, bad)
    _refused(_loader(loader, bad, tmp_path), str(bad), "corrupt", "CRC", record)
    assert not (tmp_path / "out").exists() and not (tmp_path / "resumed").exists()


def test_an_unchanged_checkpoint_is_verified_once_per_process(trained_run, monkeypatch):
    from flashsac_bench.runner import torch_files

    load_checkpoint(trained_run.checkpoint)
    calls = []
    monkeypatch.setattr(torch_files.zipfile, "ZipFile", lambda *a, **k: calls.append(a))
    load_checkpoint(trained_run.checkpoint)  # verified before: not read again
    assert calls == []


# ---------------------------------------------------------------------------- finite values
@pytest.fixture
def nan_actor(trained_run, tmp_path) -> Path:
    payload = _payload_of(trained_run.checkpoint)
    payload["learner"]["tensors"]["actor.params"][:] = float("nan")
    path = tmp_path / "run" / "checkpoints" / "iter_0000012.pt"
    save_checkpoint(path, {k: v for k, v in payload.items() if k != "format"})
    return path


@pytest.mark.parametrize("loader", LOADERS)
def test_a_non_finite_learner_is_refused_naming_the_tensor(loader, nan_actor, tmp_path):
    line = _refused(_loader(loader, nan_actor, tmp_path), "non-finite values in learner.actor")
    assert "values NaN" in line
    assert not (tmp_path / "out").exists() and not (tmp_path / "resumed").exists()


def test_a_non_finite_unilab_checkpoint_is_refused_naming_the_tensor(trained_run, tmp_path):
    from flashsac_bench.cli.convert import flashsac_to_unilab

    sd, _ = flashsac_to_unilab(trained_run.checkpoint, "cpu")
    name = next(k for k in sd["actor"] if sd["actor"][k].dim() == 2)
    sd["actor"][name].view(-1)[0] = float("inf")
    torch.save(sd, tmp_path / "model_5.pt")
    proc = _loader("convert", tmp_path / "model_5.pt", tmp_path)
    _refused(proc, f"non-finite values in actor.{name} (1 of", "inf")
    assert not (tmp_path / "out").exists()
