"""Paths the environment gives that cannot be used are one line before anything starts
(cli.environment, cli.preflight): a compiler cache folder that cannot be created, a run root
(`hydra.run.dir=${oc.env:VAR}/...`) that is a file or a variable that is not set."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from flashsac_bench.cli import preflight
from flashsac_bench.cli.environment import EnvironmentPathError, check_environment_paths
from flashsac_bench.cli.errors import UsageError
from flashsac_bench.cli.train import check_job
from flashsac_bench.config import register_configs
from tests.fakes.runs import cli_overrides, fake_env_environ


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "a_file"
    path.write_text("")
    return path


@pytest.mark.parametrize("var", ["TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"])
def test_a_cache_folder_that_cannot_be_created_is_named(var, a_file, tmp_path):
    with pytest.raises(EnvironmentPathError, match=rf"^{var}={a_file}/x \(.*is not a directory"):
        check_environment_paths({var: str(a_file / "x")})
    check_environment_paths({var: str(tmp_path / "new" / "cache")})  # can be created: passes
    assert not (tmp_path / "new").exists()  # and nothing was created


def _no_check(cfg, run_dir):
    raise AssertionError("the job's check ran: the refusal came too late")


def test_every_command_refuses_it_before_its_jobs(a_file, monkeypatch):
    register_configs()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(a_file / "x"))
    with pytest.raises(EnvironmentPathError, match="TORCHINDUCTOR_CACHE_DIR"):
        preflight.check_command(["run.num_envs=8"], "config", _no_check)


@pytest.mark.parametrize(
    ("root", "named"),
    [("file", "is not a directory"), (None, 'hydra.run.dir cannot be resolved: "Environment')],
)
def test_a_run_root_from_the_environment_that_cannot_be_used_is_one_line(
    root, named, a_file, monkeypatch
):
    register_configs()
    monkeypatch.setenv("FLASHSAC_BENCH_ENV_FACTORY", "tests.fakes.fake_env:make_env")
    monkeypatch.delenv("FLASHSAC_BENCH_RUN_ROOT", raising=False)
    if root:
        monkeypatch.setenv("FLASHSAC_BENCH_RUN_ROOT", str(a_file))
    argv = [*cli_overrides(8, 4), "hydra.run.dir=${oc.env:FLASHSAC_BENCH_RUN_ROOT}/run"]
    with pytest.raises(UsageError, match=named) as info:
        preflight.check_command(argv, "config", check_job)
    assert "\n" not in str(info.value)


def test_through_the_cli_one_line_and_no_run_dir(a_file, tmp_path):
    env = fake_env_environ(TORCHINDUCTOR_CACHE_DIR=str(a_file / "x"))
    proc = subprocess.run(
        [sys.executable, "-m", "flashsac_bench", *cli_overrides(8, 4),
         f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "invalid environment variable: TORCHINDUCTOR_CACHE_DIR=" in lines[0]
    assert not (tmp_path / "run").exists() and os.path.isfile(a_file)
