"""evaluate robustness=...: the conditions, their env hooks and their eval.json records."""

from __future__ import annotations

import json

import numpy as np
import pytest

from flashsac_bench.cli.errors import UsageError
from flashsac_bench.cli.evaluate import TOOL
from flashsac_bench.cli.tool import compose_options
from flashsac_bench.config.backend import MujocoConfig
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.task import CommandRanges, TaskConfig
from flashsac_bench.envs import make_env
from flashsac_bench.evaluation.config import EvalConfig
from flashsac_bench.evaluation.evaluate import evaluate
from flashsac_bench.evaluation.robustness import (
    CONDITIONS,
    apply_condition,
    condition_names,
    edge_commands,
    env_layout,
    make_condition,
)

EDGES = [
    [1.0, 0.0, 0.0],
    [-0.6, 0.0, 0.0],
    [0.0, 0.4, 0.0],
    [0.0, -0.4, 0.0],
    [0.0, 0.0, 0.8],
    [0.0, 0.0, -0.8],
]


def _env(n: int):
    # In-process (threads): the test reads the MuJoCo models through env.physics.
    return make_env(TaskConfig(), MujocoConfig(mode="threads", num_threads=1), n, 3)


def test_the_robustness_option():
    assert condition_names(True) == condition_names("all") == list(CONDITIONS)
    assert condition_names(False) == condition_names(None) == condition_names([]) == []
    assert condition_names(["push", "nominal", "push"]) == ["push", "nominal"]
    with pytest.raises(ConfigError, match="unknown condition windy"):
        condition_names(["push", "windy"])

    def options(*overrides: str) -> EvalConfig:
        return compose_options(TOOL, ["checkpoint=/x", *overrides], check=False)

    assert options().robustness == []  # the default: no robustness conditions
    assert options("robustness=true").robustness == list(CONDITIONS)
    assert options("robustness=[mass_plus20,push]").robustness == ["mass_plus20", "push"]
    assert options("robustness=command_edges").robustness == ["command_edges"]
    with pytest.raises(UsageError, match="unknown condition windy"):
        options("robustness=[windy]")
    with pytest.raises(UsageError, match="push_velocity"):
        options("push_velocity=[1.0]")


def test_edge_commands_and_their_env_layout():
    assert [list(c) for c in edge_commands(CommandRanges())] == EDGES
    # A planar edge inside the dead zone is zeroed (as in training); duplicates go.
    narrow = CommandRanges(vx=[0.0, 1.0], vy=[-0.1, 0.1], wz=[-0.5, 0.5])
    assert edge_commands(narrow) == (
        (1.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.5),
        (0.0, 0.0, -0.5),
    )
    edges = make_condition("command_edges", TaskConfig(), 1, [0, 0, 0])
    # (episodes, envs): the same number of episodes for each of the 6 commands
    assert env_layout(edges, 4, 4) == (6, 6)
    assert env_layout(edges, 8, 16) == (12, 12)
    assert env_layout(edges, 24, 13) == (24, 12)
    push = make_condition("push", TaskConfig(), 1, [0, 0, 0])
    assert env_layout(push, 5, 8) == (5, 5)  # other conditions: as the nominal rollout


@pytest.mark.parametrize(("name", "scale"), [("mass_minus20", 0.8), ("mass_plus20", 1.2)])
def test_mass_conditions_scale_the_body_masses_of_the_env_model(name, scale):
    env = _env(2)
    try:
        nominal = env.model.body_mass.copy()
        apply_condition(env, make_condition(name, TaskConfig(), 1, [0, 0, 0]))
        for model in env.physics.models:
            np.testing.assert_allclose(model.body_mass[1:], nominal[1:] * scale)
            assert model.body_mass[0] == nominal[0]  # the world body
    finally:
        env.close()


def test_command_edges_set_the_commands_of_every_env():
    env = _env(7)  # more envs than edge commands: they cycle
    try:
        apply_condition(env, make_condition("command_edges", TaskConfig(), 1, [0, 0, 0]))
        env.reset()
        np.testing.assert_allclose(env.get_state()["command"], [*EDGES, EDGES[0]])
    finally:
        env.close()


def _evaluate(trained_run, out, **options) -> dict:
    ec = EvalConfig(
        checkpoint=str(trained_run.checkpoint),
        episodes=4,
        num_envs=4,
        render=False,
        threads=1,
        out_dir=str(out),
        **options,
    )
    evaluate(ec)
    return json.loads((out / "eval.json").read_text())


def test_each_condition_is_reported_and_differs_from_nominal_by_the_condition_alone(
    trained_run, tmp_path
):
    # The tiny policy falls within a few dozen steps: the push comes early enough to act.
    report = _evaluate(trained_run, tmp_path / "all", robustness=True, push_step=3)
    rob = report["robustness"]
    assert list(rob) == list(CONDITIONS)
    for name, rec in rob.items():
        assert rec["episodes"] == len(rec["per_episode"]) == (6 if name == "command_edges" else 4)
        assert 0.0 <= rec["full_length_frac"] <= 1.0 and 0.0 <= rec["terminated_frac"] <= 1.0
        lengths = [e["length"] for e in rec["per_episode"]]
        assert rec["episode_length_mean"] == pytest.approx(np.mean(lengths))
        assert 0.0 <= rec["lin_vel_tracking_frac_mean"] <= 1.0
    nominal = rob["nominal"]["per_episode"]
    assert nominal == report["episodes"]  # nominal is the evaluation itself
    assert rob["push"]["pushed_episodes"] == 4
    assert rob["push"]["perturbation"]["push_velocity"] == [0.0, 0.75, 0.0]
    # Same seed, same start: the same commands, then the push changes the trajectory.
    assert [e["command"] for e in rob["push"]["per_episode"]] == [e["command"] for e in nominal]
    assert rob["push"]["per_episode"] != nominal
    assert rob["mass_plus20"]["perturbation"]["mass_scale"] == 1.2
    assert rob["mass_plus20"]["per_episode"] != nominal
    commands = [e["command"] for e in rob["command_edges"]["per_episode"]]
    np.testing.assert_allclose(sorted(commands), sorted(EDGES), atol=1e-6)
    by_command = rob["command_edges"]["by_command"]
    assert [c["command"] for c in by_command] == EDGES and all(
        c["episodes"] == 1 for c in by_command
    )

    # A push after every episode's end leaves the rollout exactly as nominal: a condition's
    # fresh env with the same seed reproduces the evaluation, so only the condition differs.
    late = _evaluate(trained_run, tmp_path / "late", robustness=["push"], push_step=10**6)
    assert late["robustness"]["push"]["pushed_episodes"] == 0
    assert late["robustness"]["push"]["per_episode"] == nominal
