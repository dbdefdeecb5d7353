"""One rule for the numbers of a config (config.values): every float field, nested ones and
lists of numbers included, refuses NaN and inf naming its key; each group's domain rules refuse
what would break a run after its env and learner are built; a run's memory is checked against
the machine before anything is allocated; the preflight never lets a job through unchecked."""

from __future__ import annotations

import dataclasses
import math
import re
import typing
from typing import Any

import pytest

from flashsac_bench.cli import preflight
from flashsac_bench.cli.errors import UsageError
from flashsac_bench.cli.runtime_checks import NotEnoughMemoryError, check_memory, memory_needs
from flashsac_bench.config import Config, ConfigError, register_configs, to_config
from flashsac_bench.evaluation.config import EvalConfig
from tests.fakes.runs import cli_overrides, fake_env_environ, run_cli


def _float_keys(obj: Any, prefix: str = "") -> list[tuple[str, int | None]]:
    """(dotted key, list index or None) of every float-typed field of a config dataclass."""
    found: list[tuple[str, int | None]] = []
    for f in dataclasses.fields(obj):
        value, key = getattr(obj, f.name), f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value):
            found += _float_keys(value, f"{key}.")
        elif "float" in str(f.type) and isinstance(value, list):
            found.append((key, 0))
        elif "float" in str(f.type):
            found.append((key, None))
    return found


def _nested(key: str, value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    node = out
    *parents, leaf = key.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    return out


CONFIG_FLOATS = _float_keys(Config())
EVAL_FLOATS = _float_keys(EvalConfig())


def test_the_walk_sees_the_fields_of_the_findings():
    keys = {k for k, _ in CONFIG_FLOATS}
    for key in ("learner.lr_peak", "learner.adam_eps", "learner.reward_g_max", "task.ctrl_dt",
                "task.rewards.alive", "task.pose_weights", "task.action_scale",
                "learner.temp_target_sigma", "run.time_limit_s"):  # fmt: skip
        assert key in keys, key
    assert len(CONFIG_FLOATS) > 50


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize(("key", "index"), CONFIG_FLOATS, ids=[k for k, _ in CONFIG_FLOATS])
def test_every_float_of_the_config_refuses_non_finite_values(key, index, bad):
    default = Config()
    for part in key.split("."):
        default = getattr(default, part)
    value: Any = bad
    if index is not None:
        value = list(default)
        value[index] = bad
    with pytest.raises(ConfigError, match=rf"^{key}(\[{index}\])?={bad}.*finite"):
        to_config(_nested(key, value))


@pytest.mark.parametrize(("key", "index"), EVAL_FLOATS, ids=[k for k, _ in EVAL_FLOATS])
def test_every_float_of_the_evaluate_options_refuses_nan(key, index):
    value: Any = math.nan
    if index is not None:
        value = list(getattr(EvalConfig(), key))
        value[index] = math.nan
    with pytest.raises(ConfigError, match=rf"^{key}.*must be a finite number"):
        EvalConfig(checkpoint="x", **{key: value})


def _number_keys(schema: type, prefix: str = "") -> list[tuple[str, str, bool]]:
    """(dotted key, "int" / "float", whether it holds a list) of every number-typed field of a
    config dataclass, nested ones and every option's own schema (backend) included."""
    found: list[tuple[str, str, bool]] = []
    for f in dataclasses.fields(schema):
        hint = typing.get_type_hints(schema)[f.name]
        nested = [a for a in (hint, *typing.get_args(hint)) if dataclasses.is_dataclass(a)]
        if nested and hasattr(nested[0], "schema_for"):
            options = [nested[0].schema_for(name) for name in nested[0].OPTIONS]
            walked = [k for option in options for k in _number_keys(option, f"{prefix}{f.name}.")]
            found += list(dict.fromkeys(walked))
            continue
        if nested:
            found += _number_keys(nested[0], f"{prefix}{f.name}.")
            continue
        args = typing.get_args(hint)
        inner = args[0] if typing.get_origin(hint) is list else None
        for kind in (int, float):
            if hint is kind or kind in args or inner is kind:
                found.append((f"{prefix}{f.name}", kind.__name__, inner is kind))
    return found


CONFIG_NUMBERS = _number_keys(Config)
EVAL_NUMBERS = _number_keys(EvalConfig)
ABSURD = {"int": (2**70, -1), "float": (1e30, -1e30)}


def _absurd_config(key: str, value: Any) -> dict[str, Any]:
    out = _nested(key, value)
    if key.startswith("backend.warp."):
        out["backend"]["name"] = "mjwarp"
    return out


def test_the_number_walk_sees_every_kind_of_field():
    keys = {k: (kind, is_list) for k, kind, is_list in CONFIG_NUMBERS}
    assert keys["run.seed"] == ("int", False) and keys["run.iterations"] == ("int", False)
    assert keys["backend.warp.nconmax"] == ("int", False)
    assert keys["task.pose_weights"] == ("float", True)
    assert keys["run.time_limit_s"] == ("float", False)  # float | None
    assert len(CONFIG_NUMBERS) > 80 and "seed" in {k for k, _, _ in EVAL_NUMBERS}


@pytest.mark.parametrize("sign", [0, 1], ids=["huge", "negative"])
@pytest.mark.parametrize(
    ("key", "kind", "is_list"), CONFIG_NUMBERS, ids=[k for k, *_ in CONFIG_NUMBERS]
)
def test_every_number_of_the_config_has_a_range(key, kind, is_list, sign):
    """Finite is not enough: every number (ints too: seeds, counts, sizes) refuses a value past
    any sense, naming the key, whatever group it is in."""
    bad = ABSURD[kind][sign]
    default: Any = Config()
    for part in key.split("."):
        default = getattr(default, part, None)
    value: Any = [bad, *list(default)[1:]] if is_list else bad
    with pytest.raises(ConfigError, match=rf"^{re.escape(key)}(\[0\])?={re.escape(str(bad))}"):
        to_config(_absurd_config(key, value))


@pytest.mark.parametrize("sign", [0, 1], ids=["huge", "negative"])
@pytest.mark.parametrize(
    ("key", "kind", "is_list"), EVAL_NUMBERS, ids=[k for k, *_ in EVAL_NUMBERS]
)
def test_every_number_of_the_evaluate_options_has_a_range(key, kind, is_list, sign):
    bad = ABSURD[kind][sign]
    value: Any = [bad, *getattr(EvalConfig(), key)[1:]] if is_list else bad
    with pytest.raises(ConfigError, match=rf"^{re.escape(key)}(\[0\])?={re.escape(str(bad))}"):
        EvalConfig(checkpoint="x", **{key: value})


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"learner": {"temp_target_sigma": 0.0}}, "learner.temp_target_sigma=0.0: must be in (0,"),
        ({"learner": {"adam_beta1": 1.0}}, "learner.adam_beta1=1.0: must be in [0, 1)"),
        ({"learner": {"adam_beta2": -0.1}}, "learner.adam_beta2=-0.1: must be in [0, 1)"),
        ({"learner": {"adam_eps": 0.0}}, "learner.adam_eps=0.0: must be in (0, 1]"),
        ({"learner": {"bn_eps": 0.0}}, "learner.bn_eps=0.0: must be in (0, 1]"),
        ({"learner": {"rms_eps": -1e-6}}, "learner.rms_eps=-1e-06: must be in (0, 1]"),
        ({"learner": {"bn_momentum": 1.5}}, "learner.bn_momentum=1.5: must be in [0, 1]"),
        ({"learner": {"critic_hidden_dim": 10**9}}, "learner.critic_hidden_dim=1000000000: must"),
        ({"run": {"num_envs": 10**9}}, "run.num_envs=1000000000: must be in [1, 16777216]"),
        ({"task": {"pose_weights": [-1.0] + [1.0] * 28}}, "task.pose_weights[0]=-1.0"),
        ({"task": {"obs": {"gyro_scale": 0.0}}}, "task.obs.gyro_scale=0.0: must be in (0,"),
        ({"task": {"decimation": 10**6}}, "task.decimation=1000000: must be in [1, 1000]"),
        ({"task": {"ctrl_dt": 1e-9}}, "task.episode_length_s / task.ctrl_dt must be <="),
        ({"update": {"updates_per_step": 10**6}}, "update.updates_per_step=1000000: must be in"),
        # finite, but past any sense
        ({"run": {"seed": 10**23}}, "run.seed=100000000000000000000000: must be in [0, "),
        ({"task": {"rewards": {"alive": 1e38}}}, "task.rewards.alive=1e+38: must be in [-10000,"),
    ],
)
def test_out_of_domain_values_are_refused(override, message):
    with pytest.raises(ConfigError) as info:
        to_config(override)
    assert message in str(info.value)


def test_a_run_that_cannot_fit_in_memory_is_refused_before_allocating(monkeypatch):
    from flashsac_bench.cli import runtime_checks
    from flashsac_bench.envs.g1.model import task_spec

    model = task_spec(None).compile()
    small = to_config({"hardware": {"device": "cpu"}, "run": {"num_envs": 64}})
    big = to_config({"hardware": {"device": "cpu"}, "run": {"num_envs": 65536}})
    need_small = sum(memory_needs(small, model)["host"].values())
    need_big = sum(memory_needs(big, model)["host"].values())
    # the replay ring (replay_buffer_n x num_envs rows of 430 floats) and its checkpoint copy
    assert need_big >= 2 * 512 * 65536 * 430 * 4
    monkeypatch.setattr(runtime_checks, "host_available", lambda: (need_small + need_big) // 2)
    check_memory(small, model)
    with pytest.raises(NotEnoughMemoryError, match=r"run.num_envs=65536 .* needs at least"):
        check_memory(big, model)


def test_a_check_that_fails_unexpectedly_is_that_jobs_one_line(tmp_path):
    """The preflight never crashes and never lets a job through unchecked."""

    def check(cfg: Any, run_dir: Any) -> Any:
        raise ZeroDivisionError("float division by zero")

    register_configs()
    args = [*cli_overrides(8, 10), f"hydra.run.dir={tmp_path / 'run'}"]
    with pytest.raises(UsageError, match="checking it failed with ZeroDivisionError: float div"):
        preflight.check_command(args, "config", check)


@pytest.mark.parametrize(
    ("args", "texts"),
    [
        (["task.ctrl_dt=nan"], ["task.ctrl_dt=nan", "finite"]),
        (["learner.temp_target_sigma=0"], ["learner.temp_target_sigma=0.0: must be in (0,"]),
        (["-m", "task.ctrl_dt=0.02,nan"], ["1 of 2 sweep jobs", "job 1 (task.ctrl_dt=nan)"]),
        (["hydra.run.dir="], ["hydra.run.dir is empty"]),
    ],
    ids=["nan", "domain", "sweep", "empty_run_dir"],
)
def test_the_cli_refuses_before_any_job_starts(args, texts, tmp_path):
    marker = tmp_path / "env_built.txt"
    dirs = [f"hydra.run.dir={tmp_path / 'run'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    if "hydra.run.dir=" in args:
        dirs = []
    flags = [a for a in args if a == "-m"]  # Hydra's flags come before the overrides
    overrides = [a for a in args if a != "-m"]
    proc = run_cli(
        [*flags, *cli_overrides(8, 10), *dirs, *overrides],
        env=fake_env_environ(FAKE_ENV_MARKER=str(marker)),
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    for text in texts:
        assert text in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no env, no run dir, nothing


def test_a_field_may_say_that_it_takes_non_finite_values():
    from flashsac_bench.config.values import NONFINITE, require_bounded

    @dataclasses.dataclass
    class Group:
        limit: float = dataclasses.field(default=math.inf, metadata=NONFINITE)
        rate: float = 1.0

    require_bounded(Group(), "g.")
    with pytest.raises(ConfigError, match=r"^g\.rate=nan: must be a finite number"):
        require_bounded(Group(rate=math.nan), "g.")
