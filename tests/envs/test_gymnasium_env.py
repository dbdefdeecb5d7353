"""task=gymnasium's adapter (envs.gymnasium.env): final observations, truncation flags, episode
returns and lengths exact on a tiny env with known episode lengths, in both vectorization modes;
the policy's actions mapped onto the env's bounds; a MuJoCo env's state continued bit for bit;
what the adapter refuses, in one line."""

from __future__ import annotations

import copy
import sys

import numpy as np
import pytest

from flashsac_bench.config import ConfigError
from flashsac_bench.config.task import GymnasiumTaskConfig
from flashsac_bench.envs.contract.api import NOT_RESUMABLE, check_env, check_step

pytestmark = pytest.mark.usefixtures("gymnasium_extra")


def _env(env_id: str, num_envs: int, seed: int, vectorization: str = "sync"):
    from flashsac_bench.envs.gymnasium.env import GymnasiumVecEnv

    return GymnasiumVecEnv(
        GymnasiumTaskConfig(env_id=env_id, vectorization=vectorization), num_envs, seed
    )


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_final_observations_flags_returns_and_lengths_are_exact(vectorization):
    from tests.fakes import tiny_gym_env as tiny

    n, seed = 6, 9  # env i seeded 9 + i: every kind of episode end twice (tiny_gym_env)
    ends = [tiny.episode_end(seed + i) for i in range(n)]
    assert sorted({(t, r) for _, t, r in ends}) == [(False, True), (True, False)]
    # the policy's [-1, 1] onto the env's bounds: low, high, the middle, and clipped
    policy = np.array([[-1.0, 1.0], [1.0, -1.0], [0.0, 0.0], [3.0, -3.0], [-1.0, -1.0], [1.0, 1.0]])
    mapped = np.array([[-2.0, 10.0], [2.0, 0.0], [0.0, 5.0], [2.0, 0.0], [-2.0, 0.0], [2.0, 10.0]])
    with _env(tiny.TINY_ID, n, seed, vectorization) as env:
        check_env(env)
        assert (env.obs_dim, env.critic_obs_dim, env.action_dim) == (4, 4, 2)
        assert env.max_episode_steps == tiny.TIME_LIMIT
        assert env.workers == (n if vectorization == "async" else 0)
        obs, critic_obs = env.reset()
        np.testing.assert_array_equal(obs[:, :2], np.zeros((n, 2)))
        np.testing.assert_array_equal(critic_obs, obs)
        for k in range(1, 13):
            out = env.step(policy)
            check_step(env, out)
            for i, (length, terminated, truncated) in enumerate(ends):
                t, episode = (k - 1) % length + 1, (k - 1) // length
                done = t == length
                # THIS transition's next observation, before any reset ...
                np.testing.assert_array_equal(out.final_obs[i], [t, episode, *mapped[i]])
                np.testing.assert_array_equal(out.final_critic_obs[i], out.final_obs[i])
                # ... and the observation for the next action: a new episode's first where done
                first = [0, episode + 1, 0, 0] if done else [t, episode, *mapped[i]]
                np.testing.assert_array_equal(out.obs[i], first)
                assert (out.terminated[i], out.truncated[i]) == (
                    done and terminated,
                    done and truncated,
                ), (k, i)
                assert out.episode_length[i] == t and out.reward[i] == t
                assert out.episode_return[i] == t * (t + 1) / 2


MUJOCO_ENVS = ["InvertedPendulum-v5", "Hopper-v5", "Humanoid-v5", "Ant-v5"]


def _run(env, actions) -> list[dict]:
    return [
        {k: copy.deepcopy(v) for k, v in vars(env.step(a)).items() if k != "reward_terms"}
        for a in actions
    ]


@pytest.mark.parametrize("env_id", MUJOCO_ENVS)
def test_a_mujoco_envs_state_continues_bit_for_bit(env_id):
    """Through episode ends and resets; Humanoid's and Ant's rewards read positions that the
    previous step computed (not its state), so every array of the MjData must come back."""
    rng = np.random.default_rng(0)
    with _env(env_id, 3, seed=4) as env:
        actions = rng.uniform(-1, 1, (90, 3, env.action_dim))
        env.reset()
        _run(env, actions[:30])
        state = env.get_state()
        assert NOT_RESUMABLE not in state
        expected = _run(env, actions[30:])
    assert any(s["terminated"].any() for s in expected)  # the window holds resets
    with _env(env_id, 3, seed=77) as other:  # another seed, somewhere else in its episodes
        other.reset()
        _run(other, actions[:13])
        other.set_state(state)
        got = _run(other, actions[30:])
    for a, b in zip(expected, got, strict=True):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=f"{env_id} {key}")


def test_an_env_that_is_no_mujoco_env_is_checkpointed_but_not_resumable():
    with _env("Pendulum-v1", 2, seed=0) as env:
        env.reset()
        env.step(np.zeros((2, 1)))
        state = env.get_state()
        assert "no MuJoCo env" in state[NOT_RESUMABLE]
        with pytest.raises(ValueError, match="cannot continue these envs: .*no MuJoCo env"):
            env.set_state(state)


@pytest.mark.parametrize(
    ("env_id", "message"),
    [
        ("NoSuchEnv-v0", r"^task\.env_id=NoSuchEnv-v0: .*NoSuchEnv"),
        ("CartPole-v1", r"^task\.env_id=CartPole-v1: its action space .* is no flat Box"),
    ],
)
def test_an_env_the_adapter_cannot_step_is_refused_in_one_line(env_id, message):
    from flashsac_bench.envs.gymnasium.env import check_task

    with pytest.raises(ConfigError, match=message) as err:
        check_task(GymnasiumTaskConfig(env_id=env_id))
    assert "\n" not in str(err.value)


def test_without_the_extra_the_task_names_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnasium", None)  # as if not installed
    with pytest.raises(ConfigError, match=r'\[gymnasium\] extra.*pip install -e "\.\[gymnasium\]"'):
        GymnasiumTaskConfig().check_available()
