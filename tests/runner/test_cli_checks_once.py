"""A command's config is composed and checked once per process, by the CLI (cli.preflight with
the command's check), and the runner knows no CLI: a job that Hydra runs in the preflight's
process takes the preflight's checked Config; a job process started elsewhere checks its own
config, once, with the same function; code that trains a Config directly (cli.train.train) is
checked by the CLI's runtime checks before anything is created."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from flashsac_bench.cli import preflight
from flashsac_bench.cli import train as cli_train
from flashsac_bench.config import ConfigError, register_configs
from tests.fakes.runs import cli_overrides, fake_env_environ, read_summary, tiny_config

# Runs `python -m flashsac_bench` in a fresh process with its check functions counted.
COUNTING_MAIN = """
import atexit, sys
from flashsac_bench.cli import train
counts = {"check_job": 0, "check_runtime": 0, "to_config": 0}
def counted(name, fn):
    def wrapper(*args, **kwargs):
        counts[name] += 1
        return fn(*args, **kwargs)
    return wrapper
train.check_job = counted("check_job", train.check_job)
train.check_runtime = counted("check_runtime", train.check_runtime)
train.to_config = counted("to_config", train.to_config)
atexit.register(lambda: print("COUNTS", counts, file=sys.stderr))
sys.argv = ["flashsac_bench", *sys.argv[1:]]
from flashsac_bench.__main__ import main
main()
"""


def _counted_cli(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, dict]:
    """`python -m flashsac_bench *args` (fake env) and how often each check function ran."""
    proc = subprocess.run(
        [sys.executable, "-c", COUNTING_MAIN, *args],
        cwd=cwd,
        env=fake_env_environ(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("COUNTS "))
    return proc, ast.literal_eval(line.removeprefix("COUNTS "))


@pytest.mark.slow
def test_a_sweep_is_checked_once_per_job_in_one_process(tmp_path):
    sweep = tmp_path / "sweep"
    args = ["-m", *cli_overrides(8, 6), "update=u2,u8", f"hydra.sweep.dir={sweep}"]
    proc, counts = _counted_cli(args, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Two jobs: each composed, typed and checked once (in the preflight), none again.
    assert counts == {"check_job": 2, "check_runtime": 2, "to_config": 2}
    for run in ("0_u2_eager", "1_u8_eager"):
        assert read_summary(sweep / run)["complete"]


def test_a_bad_job_is_refused_before_any_job_is_checked_again(tmp_path):
    sweep = tmp_path / "sweep"
    args = ["-m", *cli_overrides(8, 6), "replay.batch_size=32,100000", f"hydra.sweep.dir={sweep}"]
    proc, counts = _counted_cli(args, tmp_path)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "1 of 2 sweep jobs are invalid" in proc.stderr
    assert counts["check_job"] == 2
    assert not sweep.exists()


@pytest.fixture
def planned(monkeypatch, tmp_path):
    """A 2-job sweep checked by the preflight in this process, with its check counted."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    monkeypatch.setenv("FLASHSAC_BENCH_ENV_FACTORY", "tests.fakes.fake_env:make_env")
    monkeypatch.setattr(preflight, "_checked", None)
    register_configs()
    calls: list[int] = []

    def check(cfg, run_dir):
        calls.append(1)
        return cli_train.check_job(cfg, run_dir)

    overrides = [*cli_overrides(8, 6), "update=u2,u8", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    GlobalHydra.instance().clear()
    plan = preflight.check_command(["-m", *overrides], "config", check)
    assert plan is not None and len(plan.jobs) == 2 and len(calls) == 2
    yield plan, check, calls, overrides
    HydraConfig.instance().cfg = None
    GlobalHydra.instance().clear()


def _as_hydra_job(overrides: list[str], num: int, output_dir: Path):
    """Hydra's view of sweep job `num` (what HydraConfig holds while the job runs), and the
    job's config without its `hydra` node."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import open_dict

    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="flashsac_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=overrides, return_hydra_config=True)
    with open_dict(cfg):
        cfg.hydra.mode = RunMode.MULTIRUN
        cfg.hydra.job.num = num
        cfg.hydra.runtime.output_dir = str(output_dir)
    HydraConfig.instance().set_config(cfg)
    task = cfg.copy()
    with open_dict(task):
        del task["hydra"]
    return task


def test_a_job_of_the_checked_process_takes_the_planned_config(planned):
    plan, check, calls, overrides = planned
    sweep = [o for o in overrides if not o.startswith("update=")]
    cfg = _as_hydra_job([*sweep[:-1], "update=u8"], 1, plan.jobs[1].run_dir)
    job = preflight.checked_job(cfg, "config", check)
    assert job is plan.jobs[1] and job.options.update.name == "u8"
    assert len(calls) == 2  # not checked again


def test_a_job_the_plan_does_not_know_is_checked_where_it_runs(planned):
    plan, check, calls, overrides = planned
    sweep = [o for o in overrides if not o.startswith("update=")]
    # Job 1's number with other overrides (as a process started elsewhere may see): checked.
    cfg = _as_hydra_job([*sweep[:-1], "update=u2", "run.seed=7"], 1, plan.jobs[1].run_dir)
    job = preflight.checked_job(cfg, "config", check)
    assert job is not plan.jobs[1] and len(calls) == 3
    assert job.options.run.seed == 7 and job.composed["run"]["seed"] == 7
    # No plan at all (a SLURM node's job process): checked there, by the same function.
    preflight._checked = None
    job = preflight.checked_job(cfg, "config", check)
    assert len(calls) == 4 and job.options.run.seed == 7


def test_training_a_config_directly_is_checked_before_anything_exists(tmp_path, monkeypatch):
    monkeypatch.setenv("FLASHSAC_BENCH_ENV_FACTORY", "no_such_module:make_env")
    run_dir = tmp_path / "run"
    with pytest.raises(ConfigError, match="FLASHSAC_BENCH_ENV_FACTORY"):
        cli_train.train(tiny_config(iterations=2), run_dir=run_dir)
    assert not run_dir.exists()
