"""Values from files go through the rules values from the command line go through.

A checkpoint whose CRCs are valid can still hold values no run wrote: counters out of range
(an iteration of -5 resumed to 45 iterations instead of 10), tensors of absurd size (actor
weights of 3e38), rows out of order, a stored config with an interpolation (`${oc.env:...}`
read the environment of whoever opened it), a stored model whose files lie outside its folder,
an encoded array its bytes do not fill, tensors of another shape, dtype or range than a run of
its config holds (CRAFTED_TENSORS). Each is refused when the checkpoint is read, naming the
value (runner.checkpoint.check_payload, runner.checkpoint_tensors, torch_files.from_plain); a
policy whose values pass all that but which cannot act is refused on its probe batch
(runner.checkpoint_probe) before evaluate, export, convert or a resume use it: one line, exit
status 2, nothing written.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch

from flashsac_bench.config import to_config
from flashsac_bench.runner.checkpoint import (
    CHECKPOINT_FORMAT,
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
)
from flashsac_bench.runner.checkpoint_probe import probe_payload
from flashsac_bench.runner.torch_files import to_plain
from tests.evaluation.test_file_safety import LOADERS, _loader, _refused
from tests.fakes.runs import cli_overrides, fake_env_environ, run_cli


def _tensors(p: dict[str, Any]) -> dict[str, torch.Tensor]:
    return p["learner"]["tensors"]


def _set(p: dict[str, Any], name: str, value: float) -> None:
    _tensors(p)[name].fill_(value)


def _outside_model(p: dict[str, Any]) -> None:
    files = {"m.xml": b"<mujoco/>", "../../x": b""}
    p["model"] = {"model_file": "m.xml", "sha256": "0", "main": "m.xml", "files": files}


def _interpolation(p: dict[str, Any]) -> None:
    p["config"]["task"]["model_file"] = "${oc.env:HOME}"


# (what is crafted, how, what the refusal names)
CRAFTED = [
    ("negative iteration", lambda p: p.update(iteration=-5), "iteration=-5 must be"),
    ("huge iteration", lambda p: p.update(iteration=2**60), "iteration=1152921504606846976"),
    ("rows past the iteration", lambda p: p.update(iteration=3), "do not end at iteration 3"),
    ("repeated rows", lambda p: p["rows_all"].insert(1, p["rows_all"][0]), "in order"),
    ("absurd actor weights", lambda p: _set(p, "actor.params", 3e38), "actor.params holds 3e+38"),
    ("absurd Adam moments", lambda p: _set(p, "critic.adam.exp_avg_sq", 1e30), "exp_avg_sq holds"),
    ("negative Adam step", lambda p: _set(p, "critic.adam.step", -3.0), "adam.step=-3 must be"),
    ("fractional counter", lambda p: _set(p, "actor.sched_step", 2.5), "actor.sched_step=2.5"),
    ("negative count", lambda p: _set(p, "reward.count", -1.0), "reward.count=-1 must be >= 0"),
    ("absurd dims", lambda p: p["learner"].update(dims=(10**9, 1, 1)), "learner dims"),
    ("replay count", lambda p: p["replay"].update(count=10**9), "replay count=1000000000"),
    ("interpolation", _interpolation, "model_file='${oc.env:HOME}' holds an interpolation"),
    ("model file outside", _outside_model, "'../../x' lies outside its folder"),
]


def _retype(p: dict[str, Any], name: str, dtype: torch.dtype) -> None:
    _tensors(p)[name] = _tensors(p)[name].to(dtype)


def _reshape(p: dict[str, Any], name: str, *shape: int) -> None:
    _tensors(p)[name] = _tensors(p)[name].reshape(*shape)


def _replay(p: dict[str, Any], column: int, value: float) -> None:
    p["replay"]["storage"][:, column] = value


# Tensors no run holds (runner.checkpoint_tensors): (what is crafted, how, what the refusal names)
CRAFTED_TENSORS = [
    ("replay rows of 1e30", lambda p: _replay(p, 0, 1e30), "replay rows 0..47 holds 1e+30"),
    (
        "replay actions past 1",
        lambda p: _replay(p, -5, 3.0),
        "(actions) holds 3, past any run's actions (|x| <= 1)",
    ),
    ("replay flags", lambda p: _replay(p, -1, 0.5), "flags other than 0 and 1"),
    ("replay width", lambda p: p["replay"].update(storage=p["replay"]["storage"][:, :-1]), "width"),
    ("reward stats 1e300", lambda p: _tensors(p)["reward.var"].fill_(1e300), "reward.var holds"),
    ("reward mean", lambda p: _tensors(p)["reward.mean"].fill_(-1e300), "reward.mean holds 1e+300"),
    ("int32 actor weights", lambda p: _retype(p, "actor.params", torch.int32), "int32"),
    ("2-d critic vector", lambda p: _reshape(p, "critic.params", -1, 1), "learner.critic.params"),
    (
        "noise of another width",
        lambda p: _tensors(p).update({"explore.noise": torch.zeros(4, 30)}),
        "does not match its learner tensors: learner.explore.noise is float32 [4, 30], its "
        "config's is float32 [4, 29]",
    ),
    ("noise of 1e6", lambda p: _tensors(p)["explore.noise"].fill_(1e6), "explore.noise holds"),
    ("negative moments", lambda p: _tensors(p)["critic.adam.exp_avg_sq"].fill_(-1.0), ">= 0"),
    ("log temp", lambda p: _tensors(p)["temperature.log_temp"].fill_(200.0), "log_temp holds 200"),
    ("repeat past zeta_max", lambda p: _tensors(p)["explore.repeat"].fill_(99), "explore.repeat"),
    ("missing tensor", lambda p: _tensors(p).pop("target.buffers"), "no target.buffers"),
    ("extra tensor", lambda p: _tensors(p).update(x=torch.ones(1)), "unexpected x"),
    ("env of 8 envs", lambda p: p["env"].update(num_envs=8), "env state is for num_envs=8 envs"),
    ("env obs rows", lambda p: p["env"].update(obs=p["env"]["obs"][:2]), "env.obs is float32"),
    ("env rows", lambda p: p["env"].update(action=p["env"]["action"][:2]), "env.action is float64"),
    ("staging rows", lambda p: p["staging"].update(dones=p["staging"]["dones"][:1]), "dones"),
]


@pytest.fixture(scope="module")
def payload(trained_run) -> dict[str, Any]:
    return load_checkpoint(trained_run.checkpoint)


@pytest.mark.parametrize(
    ("what", "craft", "named"),
    [*CRAFTED, *CRAFTED_TENSORS],
    ids=[c[0] for c in [*CRAFTED, *CRAFTED_TENSORS]],
)
def test_absurd_values_in_a_checkpoint_are_refused_naming_them(
    payload, tmp_path, what, craft, named
):
    crafted = copy.deepcopy(payload)
    craft(crafted)
    path = tmp_path / "crafted.pt"
    save_checkpoint(path, {k: v for k, v in crafted.items() if k != "format"})
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    text = str(info.value)
    assert text.startswith(str(path)) and named in text and "\n" not in text, text


@pytest.mark.parametrize(
    ("record", "named"),
    [
        ({"shape": [999, 999]}, "env.phase: 64 bytes do not fill shape (999, 999)"),
        ({"__ndarray__": "|O"}, "env.phase: dtype object is not one of plain numbers"),
        ({"__ndarray__": "not a dtype"}, "env.phase: 'not a dtype' is not a numpy dtype"),
        ({"data": torch.zeros(8)}, "env.phase: its data is not a 1-d byte tensor"),
        ({"shape": [-1]}, "env.phase: shape [-1] is not a list of sizes"),
    ],
)
def test_a_malformed_stored_array_is_refused_naming_it(payload, tmp_path, record, named):
    raw = {"format": CHECKPOINT_FORMAT, **copy.deepcopy(payload)}
    raw["env"], raw["staging"] = to_plain(raw["env"]), to_plain(raw["staging"])
    raw["env"]["phase"].update(record)
    torch.save(raw, tmp_path / "crafted.pt")
    with pytest.raises(
        CheckpointError,
        match="crafted.pt: " + named.replace("(", r"\(").replace(")", r"\)").replace("[", r"\["),
    ):
        load_checkpoint(tmp_path / "crafted.pt")


def _broken_statistics(p: dict[str, Any]) -> None:
    """Finite, small values that pass every range, yet the actor cannot act: BatchNorm running
    variances below zero (its normalization takes their square root)."""
    _set(p, "actor.buffers", -1.0)


def test_a_policy_that_cannot_act_is_refused_on_its_probe_batch(payload, tmp_path):
    from flashsac_bench.evaluation.trained import load_trained_learner

    assert probe_payload(payload, to_config(payload["config"]).learner) is None
    crafted = copy.deepcopy(payload)
    _broken_statistics(crafted)
    path = tmp_path / "run" / "checkpoints" / "iter_0000012.pt"
    save_checkpoint(path, {k: v for k, v in crafted.items() if k != "format"})
    loaded = load_checkpoint(path)  # every value is in range ...
    problem = probe_payload(loaded, to_config(loaded["config"]).learner)
    assert problem and "non-finite outputs for 64 of 64 probe observations" in problem
    with pytest.raises(CheckpointError, match="this policy cannot act"):  # ... yet it is refused
        load_trained_learner(path)


@pytest.fixture(scope="module")
def fake_run_checkpoint(tmp_path_factory) -> Path:
    """A checkpoint of the tiny CLI run that the resume loader continues (same config)."""
    tmp = tmp_path_factory.mktemp("fake_run")
    args = [*cli_overrides(8, 6), f"hydra.run.dir={tmp / 'run'}"]
    proc = run_cli(args, env=fake_env_environ(), cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return tmp / "run" / "checkpoints" / "iter_0000006.pt"


@pytest.mark.parametrize("loader", LOADERS)
def test_every_loader_refuses_a_policy_that_cannot_act(
    loader, trained_run, fake_run_checkpoint, tmp_path
):
    source = fake_run_checkpoint if loader == "resume" else trained_run.checkpoint
    crafted = load_checkpoint(source)
    _broken_statistics(crafted)
    path = tmp_path / "run" / "checkpoints" / source.name
    save_checkpoint(path, {k: v for k, v in crafted.items() if k != "format"})
    _refused(_loader(loader, path, tmp_path), str(path), "this policy cannot act")
    assert not (tmp_path / "out").exists() and not (tmp_path / "resumed").exists()


@pytest.mark.parametrize("loader", ["evaluate", "resume"])  # export, convert: load as evaluate
def test_a_stored_interpolation_is_refused_and_reads_no_environment(loader, trained_run, tmp_path):
    crafted = load_checkpoint(trained_run.checkpoint)
    crafted["config"]["task"]["model_file"] = "${oc.env:FLASHSAC_BENCH_SECRET}"
    path = tmp_path / "run" / "checkpoints" / trained_run.checkpoint.name
    save_checkpoint(path, {k: v for k, v in crafted.items() if k != "format"})
    line = _refused(_loader(loader, path, tmp_path), str(path), "holds an interpolation")
    assert "never resolved" in line
    assert not (tmp_path / "out").exists() and not (tmp_path / "resumed").exists()


NOT_A_G1 = b"<mujoco><worldbody><body><freejoint/><geom size='0.1'/></body></worldbody></mujoco>"


def _stored_model_not_a_g1(p: dict[str, Any]) -> None:
    p["model"] = {"model_file": "/elsewhere/m.xml", "sha256": "0" * 64, "main": "m.xml",
                  "files": {"m.xml": NOT_A_G1}, "outside": []}  # fmt: skip
    p["config"]["task"]["model_file"] = "/elsewhere/m.xml"


@pytest.mark.parametrize(
    ("loader", "craft", "named"),
    [
        ("evaluate", _stored_model_not_a_g1, "stored model (/elsewhere/m.xml) is not a usable G1"),
        ("export", _stored_model_not_a_g1, "site 'imu_in_torso'"),
        ("evaluate", _outside_model, "stored model file '../../x' lies outside its folder"),
        ("convert", "malformed array", "env.phase: 64 bytes do not fill shape (999, 999)"),
        ("convert", "unilab counter", "update_count=-5 must be a whole number in [0, "),
    ],
    ids=[
        "not_a_g1_evaluate",
        "not_a_g1_export",
        "files_outside",
        "malformed_array_convert",
        "unilab_counter_convert",
    ],
)
def test_crafted_stored_models_and_arrays_are_one_line_and_write_nothing(
    loader, craft, named, trained_run, tmp_path
):
    path = tmp_path / "run" / "checkpoints" / trained_run.checkpoint.name
    if craft == "unilab counter":  # a unilab-rl file whose iteration count is crafted
        from flashsac_bench.cli.convert import flashsac_to_unilab

        sd, _ = flashsac_to_unilab(trained_run.checkpoint, "cpu")
        sd["update_count"] = -5
        path = tmp_path / "model_5.pt"
        torch.save(sd, path)
    elif craft == "malformed array":
        raw = {"format": CHECKPOINT_FORMAT, **load_checkpoint(trained_run.checkpoint)}
        raw["env"], raw["staging"] = to_plain(raw["env"]), to_plain(raw["staging"])
        raw["env"]["phase"]["shape"] = [999, 999]
        path.parent.mkdir(parents=True)
        torch.save(raw, path)
    else:
        crafted = load_checkpoint(trained_run.checkpoint)
        craft(crafted)
        save_checkpoint(path, {k: v for k, v in crafted.items() if k != "format"})
    _refused(_loader(loader, path, tmp_path), str(path), named)
    assert not (tmp_path / "out").exists()
