"""Every bad input class through the real CLI: a non-zero exit, no traceback, a message
of at most 3 lines that names the key or file; inputs that are refused up front build no env
and leave no run dir behind. --debug / HYDRA_FULL_ERROR=1 still show the traceback."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from tests.fakes.runs import REPO, cli_overrides, fake_env_environ, run_cli

# Where a case's files live; "{tmp}" / "{ckpt}" in args are replaced per test.
TINY = cli_overrides(8, 10)


@dataclass
class Case:
    name: str
    args: list[str]
    expect: list[str]  # substrings of the message (the key / file / what to do)
    code: int = 2
    env: dict[str, str] = field(default_factory=dict)
    real_env: bool = False  # unset FLASHSAC_BENCH_ENV_FACTORY (the built-in G1 env)
    up_front: bool = True  # refused before anything runs: no env built, no run dir
    gpu_machine_skips: bool = False


BROKEN_XML = '<mujoco>\n<worldbody>\n<body name="a">\n<geom size="0.1"/>\n</wordbody>\n</mujoco>\n'
NO_SITES_XML = (
    '<mujoco>\n<worldbody>\n<body name="pelvis">\n<freejoint/>\n<geom size="0.1"/>\n'
    "</body>\n</worldbody>\n</mujoco>\n"
)

CASES = [
    # once accepted silently
    Case("plus_unknown_key", ["+run.iteratons=5"], ["run.iteratons", "run.iterations"]),
    Case("resume_nothing_to_do", ["run.resume={ckpt}", "run.iterations=5"],
         ["iteration 10", "run.iterations=N with N > 10"]),
    Case("resume_other_update", ["run.resume={ckpt}", "update=u8", "run.iterations=20"],
         ["update.updates_per_step (checkpoint 2, now 8)"]),
    # composition errors
    Case("unknown_key", ["update.no_such_key=1"], ["update.no_such_key"]),
    Case("removed_key", ["update.name=u16"], ["update.name (removed: the label is derived"]),
    Case("other_backends_key", ["backend=mjwarp", "backend.workers=2"],
         ["backend.workers (an option of backend=mujoco, not of backend=mjwarp)"]),
    Case("wrong_type", ["update.updates_per_step=abc"], ["update.updates_per_step", "abc"]),
    Case("no_such_option", ["update=u3"], ["update/u3", "u2, u8"]),
    Case("sweep_value_without_m", ["update=u2,u8"], ["update=u2,u8", "--multirun"]),
    Case("unparsable_override", ["run.iterations=[1"], ["cannot parse override"]),
    # typed validation
    Case("cudagraph_on_cpu", ["path=cudagraph", "hardware=cpu"], ["path=cudagraph"]),
    Case("batch_over_capacity", ["replay.batch_size=100000"], ["replay.batch_size=100000"]),
    Case("bad_progress", ["run.progress=fancy"], ["run.progress"]),
    Case("bad_device_name", ["hardware.device=cuda:x"], ["hardware.device", "cuda:x"]),
    # this machine / environment / files
    Case("cuda_on_cpu_torch", ["hardware.device=cuda"], ["hardware.device=cuda", "hardware=cpu"],
         gpu_machine_skips=True),
    Case("model_file_missing", ["task.model_file={tmp}/nope.xml"], ["nope.xml", "does not exist"],
         real_env=True),
    Case("model_file_is_a_directory", ["task.model_file={tmp}"], ["{tmp}", "is a directory"],
         real_env=True),
    Case("model_file_broken", ["task.model_file={tmp}/broken.xml"],
         ["broken.xml", "Line number=3"], real_env=True),
    Case("model_without_sites", ["task.model_file={tmp}/no_sites.xml"],
         ["no_sites.xml", "site 'imu_in_torso'"], real_env=True),
    Case("env_factory_module", [], ["FLASHSAC_BENCH_ENV_FACTORY", "no_such_module"],
         env={"FLASHSAC_BENCH_ENV_FACTORY": "no_such_module:make_env"}),
    Case("env_factory_attr", [], ["FLASHSAC_BENCH_ENV_FACTORY", "no attribute 'nope'"],
         env={"FLASHSAC_BENCH_ENV_FACTORY": "tests.fakes.fake_env:nope"}),
    Case("env_factory_syntax", [], ["FLASHSAC_BENCH_ENV_FACTORY", "module:callable"],
         env={"FLASHSAC_BENCH_ENV_FACTORY": "tests.fakes.fake_env"}),
    Case("env_factory_signature", [],
         ["FLASHSAC_BENCH_ENV_FACTORY='os:getcwd'", "factory(task, backend, num_envs, seed)"],
         env={"FLASHSAC_BENCH_ENV_FACTORY": "os:getcwd"}),
    Case("resume_missing", ["run.resume={tmp}/no/such/run"], ["{tmp}/no/such/run"]),
    Case("resume_truncated", ["run.resume={tmp}/truncated.pt"], ["truncated.pt", "truncated"]),
    Case("resume_not_a_checkpoint", ["run.resume={tmp}/notes.txt"],
         ["notes.txt", "not a flashsac_bench checkpoint"]),
    Case("resume_empty_dir", ["run.resume={tmp}/empty_run"], ["empty_run", "no checkpoint"]),
    Case("resume_other_shapes", ["run.resume={ckpt}", "learner.critic_hidden_dim=32",
                                 "run.iterations=20"],
         ["learner.critic_hidden_dim (checkpoint 16, now 32)"]),
    Case("unwritable_run_dir", ["hydra.run.dir={tmp}/notes.txt/run"], ["notes.txt"], code=1),
    Case("run_dir_dangling_symlink", ["hydra.run.dir={tmp}/dangling"],
         ["{tmp}/dangling is a dangling symlink"], code=1),
    Case("run_dir_in_a_symlink_loop", ["hydra.run.dir={tmp}/loop/run"],
         ["{tmp}/loop is a symlink loop"], code=1),
    Case("sweep_with_an_invalid_job", ["-m", "replay.batch_size=32,100000",
                                       "hydra.sweep.dir={tmp}/sweep"],
         ["1 of 2 sweep jobs", "job 1 (replay.batch_size=100000)"]),
    # faults during a run
    Case("disk_full", ["run.checkpoint_every=4"], ["no space left on device", "iter_0000004.pt"],
         code=1, env={"FAKE_ENV_DISK_FULL": "1"}, up_front=False),
    Case("second_ctrl_c", ["run.iterations=200"], ["aborted", "SIGINT", "no checkpoint"],
         code=130, env={"FAKE_ENV_SIGNAL_AT": "5:SIGINT:2"}, up_front=False),
]  # fmt: skip


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """The bad files, and a good u2 checkpoint at iteration 10 written by the same CLI."""
    tmp = tmp_path_factory.mktemp("bad_inputs")
    (tmp / "broken.xml").write_text(BROKEN_XML)
    (tmp / "no_sites.xml").write_text(NO_SITES_XML)
    (tmp / "notes.txt").write_text("not a checkpoint\n")
    (tmp / "empty_run").mkdir()
    (tmp / "dangling").symlink_to(tmp / "nowhere")
    (tmp / "loop").symlink_to(tmp / "loop")
    run = tmp / "good_run"
    proc = run_cli([*TINY, f"hydra.run.dir={run}"], cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ckpt = run / "checkpoints" / "iter_0000010.pt"
    data = ckpt.read_bytes()
    (tmp / "truncated.pt").write_bytes(data[: len(data) // 2])
    return {"tmp": tmp, "ckpt": run}


def _fill(args: list[str], files: dict[str, Path]) -> list[str]:
    return [
        a.replace("{tmp}", str(files["tmp"])).replace("{ckpt}", str(files["ckpt"])) for a in args
    ]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_fails_in_one_clear_line(case: Case, files, tmp_path):
    if case.gpu_machine_skips and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    marker = tmp_path / "env_built.txt"
    run_dir = tmp_path / "run"
    env = fake_env_environ(FAKE_ENV_MARKER=str(marker), **case.env)
    if case.real_env:
        env.pop("FLASHSAC_BENCH_ENV_FACTORY")
    extra = _fill(case.args, files)
    flags = [a for a in extra if a == "-m"]  # Hydra's flags go before the overrides
    args = [*flags, *TINY, f"hydra.run.dir={run_dir}", *(a for a in extra if a != "-m")]
    proc = run_cli(args, env=env, cwd=tmp_path)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == case.code, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert 1 <= len(lines) <= 3, lines
    message = "\n".join(lines)
    assert message.startswith("flashsac_bench: "), message
    for text in _fill(case.expect, files):
        assert text in message, (text, message)
    if case.up_front:
        assert not marker.exists(), "an env was built for a refused input"
        assert not run_dir.exists(), "a refused input left a run dir"
        assert not (files["tmp"] / "sweep").exists()
        assert not (files["tmp"] / "nowhere").exists()


def test_no_space_left_at_the_start_is_one_line_before_anything(tmp_path, monkeypatch):
    """0 bytes free where the run dir goes: refused by the preflight (Hydra would otherwise
    fail writing its own config into the run dir, with a traceback)."""
    from flashsac_bench.cli import preflight, train, writable
    from flashsac_bench.cli.errors import UsageError
    from flashsac_bench.config import register_configs

    monkeypatch.setenv("FLASHSAC_BENCH_ENV_FACTORY", "tests.fakes.fake_env:make_env")
    monkeypatch.setattr(writable, "_free_bytes", lambda folder: 0)
    register_configs()
    run_dir = tmp_path / "run"
    with pytest.raises(UsageError) as info:
        preflight.check_command([*TINY, f"hydra.run.dir={run_dir}"], "config", train.check_job)
    assert info.value.code == 1
    assert str(info.value).startswith(f"no space left on device: {tmp_path} has 0 bytes free")
    assert not run_dir.exists() and list(tmp_path.iterdir()) == []


def test_compare_script_on_a_missing_path(tmp_path):
    missing = tmp_path / "no_such_sweep"
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "compare.py"), str(missing)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"scripts/compare.py: {missing} does not exist"


@pytest.mark.parametrize("switch", [["--debug"], []], ids=["--debug", "HYDRA_FULL_ERROR=1"])
def test_debug_switch_shows_the_traceback(switch, tmp_path):
    env = fake_env_environ()
    if not switch:
        env["HYDRA_FULL_ERROR"] = "1"
    else:
        env.pop("HYDRA_FULL_ERROR", None)
    proc = run_cli([*switch, *TINY, "+run.iteratons=5"], env=env, cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr
    assert "ConfigError: unknown key run.iteratons" in proc.stderr
