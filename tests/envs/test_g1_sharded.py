"""G1 Walk Flat gives bit-identical results whatever the split: the in-process thread pool and
1, 2 or 3 worker processes, over steps with terminations, truncations, reset randomization,
observation noise and penalty-curriculum changes, also stepped in two halves (step_begin /
step_end); a state saved under one split continues bit-identically under another."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from flashsac_bench.config.backend import MujocoConfig
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.task import CurriculumConfig, TaskConfig
from flashsac_bench.envs import make_env
from flashsac_bench.envs.g1.cpu.walk_flat import G1WalkFlat

N = 7
STEPS = 100
# Short episodes (truncation at 50 steps; random actions of +-0.6 topple most G1s before that)
# and a curriculum that moves on them (7 envs: every finish sets the mean length): it grows
# after long episodes and shrinks after early falls, so the scale changes both ways.
TASK = TaskConfig(
    episode_length_s=1.0,
    curriculum=CurriculumConfig(
        initial_scale=0.08, level_down_threshold=40.0, level_up_threshold=45.0, degree=0.05
    ),
)
BACKENDS = {
    "threads": MujocoConfig(mode="threads", num_threads=2),
    "1 worker": MujocoConfig(workers=1),
    "2 workers": MujocoConfig(workers=2),
    "3 workers": MujocoConfig(workers=3),
}


def _actions(steps: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-0.6, 0.6, size=(steps, N, 29))


def _record(env: G1WalkFlat, actions: np.ndarray, split: bool = False) -> dict[str, Any]:
    rows, scales = [], []
    for a in actions:
        if split:  # runner.collector's way: the workers step meanwhile
            handed: list[tuple[int, int, np.ndarray]] = []

            def copy_rows(step: Any, lo: int, hi: int, handed: list = handed) -> None:
                handed.append((lo, hi, np.hstack([step.final_obs[lo:hi], step.obs[lo:hi]])))

            env.step_begin(a)
            s = env.step_end(on_rows=copy_rows)
            # every worker's own finish time (in-process: none)
            assert len(env.worker_done_times) == env.workers
            # each worker's rows once, complete when handed over
            assert sorted((lo, hi) for lo, hi, _ in handed) == env._shards.ranges
            for lo, hi, got in handed:
                np.testing.assert_array_equal(got, np.hstack([s.final_obs[lo:hi], s.obs[lo:hi]]))
        else:
            s = env.step(a)
        rows.append(
            np.concatenate(
                [
                    s.obs.ravel(),
                    s.critic_obs.ravel(),
                    s.final_obs.ravel(),
                    s.final_critic_obs.ravel(),
                    s.reward,
                    *s.reward_terms.values(),
                    s.terminated,
                    s.truncated,
                    s.episode_return,
                    s.episode_length,
                    env.qpos.ravel(),
                ]
            )
        )
        scales.append(env.penalty_scale)
    return {
        "rows": np.array(rows),
        "scales": np.array(scales),
        "metrics": env.metrics(),
        "state": env.get_state(),
    }


def _same_state(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], np.ndarray):
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        else:
            assert a[key] == b[key], key


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Any]]:
    out = {}
    actions = _actions(STEPS)
    for name, backend in BACKENDS.items():
        with make_env(TASK, backend, N, seed=5) as env:
            assert env.workers == backend.workers
            out[name] = _record(env, actions)
    with make_env(TASK, BACKENDS["2 workers"], N, seed=5) as env:
        out["2 workers, step_begin / step_end"] = _record(env, actions, split=True)
    return out


def test_every_split_gives_bit_identical_steps(runs: dict[str, dict[str, Any]]) -> None:
    ref = runs["threads"]
    for name, run in runs.items():
        np.testing.assert_array_equal(run["rows"], ref["rows"], err_msg=name)
        np.testing.assert_array_equal(run["scales"], ref["scales"], err_msg=name)
        assert run["metrics"] == ref["metrics"], name
        _same_state(run["state"], ref["state"])


def test_the_comparison_covers_resets_noise_and_curriculum(runs: dict[str, dict[str, Any]]) -> None:
    with make_env(TASK, BACKENDS["threads"], N, seed=5) as env:
        terminated = truncated = 0
        for a in _actions(STEPS):
            s = env.step(a)
            terminated += int(s.terminated.sum())
            truncated += int(s.truncated.sum())
    assert terminated > 0 and truncated > 0  # both kinds of episode end (and so resets)
    scales = runs["threads"]["scales"]
    assert (
        len(np.unique(scales)) > 5 and (np.diff(scales) > 0).any() and (np.diff(scales) < 0).any()
    )
    # A different seed gives a different run (so the streams really are seeded).
    with make_env(TASK, BACKENDS["2 workers"], N, seed=6) as env:
        other = _record(env, _actions(3))
    assert not np.array_equal(other["rows"][0], runs["threads"]["rows"][0])


@pytest.mark.parametrize(
    ("saved", "restored"), [("2 workers", "3 workers"), ("3 workers", "threads")]
)
def test_a_state_continues_bit_identically_under_another_split(saved: str, restored: str) -> None:
    actions = _actions(40, seed=1)
    with make_env(TASK, BACKENDS[saved], N, seed=11) as env:
        _record(env, actions[:20])
        state = env.get_state()
        reference = _record(env, actions[20:])
    with make_env(TASK, BACKENDS[restored], N, seed=99) as env:  # another seed: the state's wins
        env.set_state(state)
        continued = _record(env, actions[20:])
    np.testing.assert_array_equal(continued["rows"], reference["rows"])
    assert continued["metrics"] == reference["metrics"]
    _same_state(continued["state"], reference["state"])


def test_states_of_the_old_shared_generator_are_refused() -> None:
    with make_env(TASK, BACKENDS["threads"], N, seed=0) as env:
        state = env.get_state()
        del state["format"]
        with pytest.raises(ValueError, match="older G1 env .* start a new run"):
            env.set_state(state)


def test_more_workers_than_envs_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="backend.workers=8 exceeds run.num_envs=7"):
        MujocoConfig(workers=8).plan(7)
    with pytest.raises(ConfigError, match="backend.mode=threads"):
        MujocoConfig(mode="threads", workers=2)


def test_auto_mode_uses_processes_only_with_cores_to_spare() -> None:
    auto = MujocoConfig()
    assert auto.plan(64, cores=2).mode == "threads"  # the 2-core CI machine
    assert auto.plan(64, cores=2).threads == 1  # one core for the learner, one for the envs
    sixteen = auto.plan(1024, cores=16)
    assert (sixteen.mode, sixteen.workers) == ("processes", 15)  # one core for the learner
    assert auto.plan(4, cores=16).workers == 4
    assert MujocoConfig(mode="processes").plan(64, cores=2).workers == 1
    assert MujocoConfig(mode="threads").plan(64, cores=16).mode == "threads"


def test_evaluation_perturbations_act_the_same_in_worker_processes() -> None:
    commands = np.tile([0.8, 0.0, 0.3], (N, 1))
    perturb = dict(mass_scale=1.2, push_step=5, push_velocity=[0.5, 0.5, 0.0], commands=commands)
    out = []
    for name in ("threads", "3 workers"):
        with make_env(TASK, BACKENDS[name], N, seed=3) as env:
            env.set_perturbations(**perturb)
            env.reset()
            out.append(_record(env, _actions(12))["rows"])
    np.testing.assert_array_equal(out[0], out[1])
    with make_env(TASK, BACKENDS["threads"], N, seed=3) as env:
        env.reset()
        assert not np.array_equal(_record(env, _actions(12))["rows"], out[0])
