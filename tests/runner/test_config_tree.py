"""Configs come from the config tree only, and only listed classes are made from them
(cli.config_tree): a group option that leads out of the tree, and a `_target_` or logging class
off the project's list, are refused in one line by every command before anything runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flashsac_bench.cli import config_tree, preflight
from flashsac_bench.cli.errors import UsageError
from flashsac_bench.config import register_configs
from tests.fakes.runs import with_repo_on_path

COMMANDS = ("config", "evaluate", "export", "convert")


@pytest.fixture(autouse=True, scope="module")
def _registered():
    """The schemas every command's YAML starts from, as each command registers them."""
    from flashsac_bench.cli import convert, evaluate, export
    from flashsac_bench.cli.tool import register

    register_configs()
    for tool in (convert.TOOL, evaluate.TOOL, export.TOOL):
        register(tool)


def _outside(tmp_path: Path) -> str:
    """A path from conf/experiment/ to tmp_path/evil (its YAML would be composed as is)."""
    return os.path.relpath(tmp_path / "evil", preflight_conf() / "experiment")


def preflight_conf() -> Path:
    import flashsac_bench.conf

    return Path(next(iter(flashsac_bench.conf.__path__)))


@pytest.mark.parametrize(
    "argv",
    [
        ["+experiment=../../../../../../tmp/x"],
        ["learner=/tmp/x"],
        ["-m", "learner=tiny,../../x"],
        ["hydra/launcher=../../../x"],
        ["+experiment@run=../x"],
    ],
)
def test_a_group_option_that_leads_out_of_the_tree_is_refused(argv):
    with pytest.raises(UsageError, match=r"refused: a \S+ option names a config of .* leads out"):
        config_tree.refuse_options_outside(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["+experiment=smoke", "learner=tiny", "run.resume=../elsewhere/run"],
        ["checkpoint=../run/checkpoints", "out_dir=../../x"],  # values, not group options
        ["-m", "learner=glob(*)", "update=u2,u8"],
        ["~logger"],
    ],
)
def test_options_of_the_tree_and_values_with_dots_pass(argv):
    config_tree.refuse_options_outside(argv)


def _no_check(cfg, run_dir):
    raise AssertionError("the job's check ran: the refusal came too late")


# (command, override, what the refusal names): every command, every kind of entry.
OFF_THE_LIST = [
    ("config", "+hydra.callbacks.x._target_=builtins.open", "callbacks.x._target_='builtins.open'"),
    ("evaluate", "+hydra.callbacks.x._target_=${oc.env:HOME}", "${oc.env:HOME}"),
    ("export", "hydra.launcher._target_=os.system", "hydra.launcher._target_='os.system'"),
    ("convert", "++hydra.job_logging.handlers.x.class=x.Y", "handlers.x.class='x.Y'"),
    ("config", "++hydra.hydra_logging.handlers.x.stream=ext://os.system", "'ext://os.system'"),
]


@pytest.mark.parametrize(("command", "override", "named"), OFF_THE_LIST)
def test_a_class_off_the_list_is_refused_before_the_job(command, override, named):
    with pytest.raises(UsageError) as info:
        preflight.check_command([override], command, _no_check)
    assert named in str(info.value) and "is not a" in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


# (command, override, what the refusal names): a log file, Hydra's config copy or the job's
# environment elsewhere than the run dir's own.
WRITES_OR_SETS = [
    ("config", "hydra.job_logging.handlers.file.filename=/x/.bashrc", "filename='/x/.bashrc'"),
    ("convert", "++hydra.job_logging.handlers.f.filename=x.log", "handlers.f.filename='x.log'"),
    ("config", "hydra.output_subdir=../../x", "hydra.output_subdir='../../x'"),
    ("export", "hydra.output_subdir=/x", "hydra.output_subdir='/x'"),
    ("evaluate", "+hydra.job.env_set.LD_PRELOAD=/x/evil.so", "hydra.job.env_set.LD_PRELOAD"),
    ("config", "+hydra.job.env_set.PYTHONSTARTUP=/x/evil.py", "hydra.job.env_set.PYTHONSTARTUP"),
]


@pytest.mark.parametrize(("command", "override", "named"), WRITES_OR_SETS)
def test_a_log_file_config_copy_or_job_environment_elsewhere_is_refused(command, override, named):
    with pytest.raises(UsageError) as info:
        preflight.check_command([override], command, _no_check)
    assert named in str(info.value) and "refused" in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


def test_the_run_dirs_own_log_file_and_config_copy_pass():
    """Hydra's own values (the tree's): nothing is refused, a subdir of the run dir neither."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    overrides = ["hydra/job_logging=default", "hydra.output_subdir=.hydra_copy"]
    with initialize_config_module(config_module=config_tree.CONFIG_MODULE, version_base="1.3"):
        cfg = compose("config", overrides=overrides, return_hydra_config=True)
    config_tree.refuse_instantiated(cfg)
    logging = OmegaConf.to_container(cfg.hydra.job_logging, resolve=False)
    assert logging["handlers"]["file"]["filename"] in config_tree.LOGGING_FILENAMES


def test_a_logging_factory_off_the_list_is_refused():
    """A config file (not an override: its grammar has no `()` key) may name a factory."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"hydra": {"job_logging": {"formatters": {"x": {"()": "os.system"}}}}})
    with pytest.raises(UsageError, match=r"hydra.job_logging.formatters.x.\(\)='os.system'"):
        config_tree.refuse_instantiated(cfg)


@pytest.mark.parametrize(
    ("command", "launcher"),
    [
        *(("config", name) for name in ("basic", "submitit_local", "submitit_slurm")),
        *(("config", name) for name in ("slurm_cpu", "slurm_h200")),
        *((tool, "basic") for tool in COMMANDS[1:]),
    ],
)
def test_what_the_tree_composes_is_on_the_list(command, launcher):
    """Every command's config, with every launcher the docs use: nothing is refused."""
    from hydra import compose, initialize_config_module

    overrides = [f"hydra/launcher={launcher}", "hydra/job_logging=default"]
    with initialize_config_module(config_module=config_tree.CONFIG_MODULE, version_base="1.3"):
        cfg = compose(command, overrides=overrides, return_hydra_config=True)
    config_tree.refuse_instantiated(cfg)
    assert cfg.hydra.launcher._target_ in config_tree.TARGETS


EVIL = """# @package _global_
hydra:
  callbacks:
    evil:
      _target_: builtins.open
      _args_: ["{marker}", "w"]
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "command", ["flashsac_bench", *(f"flashsac_bench.{c}" for c in COMMANDS[1:])]
)
def test_a_config_from_outside_the_tree_runs_nothing_on_any_command(command, tmp_path):
    """Through the CLI: +experiment=<a path out of the tree> whose file names a callback that
    would create a marker file, and the same callback as an override: one line each, exit 2,
    no marker and no output."""
    marker = tmp_path / "callback_ran"
    (tmp_path / "evil.yaml").write_text(EVIL.format(marker=marker))
    env = with_repo_on_path(dict(os.environ))
    outputs = [f"hydra.run.dir={tmp_path / 'run'}"]
    for argv in (
        [f"+experiment={_outside(tmp_path)}"],
        [
            "+hydra.callbacks.evil._target_=builtins.open",
            f"+hydra.callbacks.evil._args_=[{marker},w]",
        ],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", command, *argv, *outputs],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr[-2000:]
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and " refused: " in lines[0], proc.stderr
        assert not marker.exists()
        assert not (tmp_path / "run").exists()
