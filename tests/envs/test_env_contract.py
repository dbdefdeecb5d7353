"""The env contract (envs.contract.api.VecEnv): every env and every test fake the runner is given
implements all of it, with the declared dtypes and shapes; a class that lacks a member, or a
step with a wrong dtype, is refused."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from flashsac_bench.config.backend import MjwarpConfig, MujocoConfig, WarpOptions
from flashsac_bench.config.task import GymnasiumTaskConfig, TaskConfig
from flashsac_bench.envs import TaskEnv, VecEnv, make_env
from flashsac_bench.envs.contract.api import (
    DeviceVecEnv,
    EnvStep,
    check_device_step,
    check_env,
    check_step,
)
from tests.fakes.fake_device_env import FakeDeviceEnv
from tests.fakes.fake_env import FakeEnv, SplitFakeEnv
from tests.fakes.sharded_env import FakeShardedEnv

N = 4
ENVS: dict[str, Callable[[], VecEnv]] = {
    "FakeEnv": lambda: FakeEnv(N, seed=1, max_episode_steps=3),
    "SplitFakeEnv": lambda: SplitFakeEnv(N, seed=1, max_episode_steps=3),
    "FakeShardedEnv": lambda: FakeShardedEnv(N, seed=1, workers=2),
    "G1WalkFlat threads": lambda: make_env(TaskConfig(), MujocoConfig(mode="threads"), N, 1),
    "G1WalkFlat 2 workers": lambda: make_env(TaskConfig(), MujocoConfig(workers=2), N, 1),
    "Gymnasium sync": lambda: _gymnasium("sync"),
    "Gymnasium async": lambda: _gymnasium("async"),
}


def _gymnasium(vectorization: str) -> VecEnv:
    """task=gymnasium's adapter over a MuJoCo env with contacts and terminations."""
    from flashsac_bench.config.options import installed
    from tests.conftest import GYMNASIUM_MISSING

    if not installed("gymnasium"):
        pytest.skip(GYMNASIUM_MISSING)
    task = GymnasiumTaskConfig(env_id="Hopper-v5", vectorization=vectorization)
    return make_env(task, None, N, 1)


def _copy(step: EnvStep) -> dict[str, Any]:
    return {k: copy.deepcopy(v) for k, v in vars(step).items()}


def _assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], dict):
            _assert_same(a[key], b[key])
        else:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)


@pytest.mark.parametrize("name", list(ENVS))
def test_every_env_and_fake_implements_the_contract(name: str) -> None:
    with ENVS[name]() as env:
        check_env(env)
        assert isinstance(env.workers, int) and env.workers >= 0
        obs, critic_obs = env.reset()
        assert obs.dtype == np.float32 and obs.shape == (N, env.obs_dim)
        assert critic_obs.dtype == np.float32 and critic_obs.shape == (N, env.critic_obs_dim)
        actions = np.random.default_rng(0).uniform(-1, 1, (3, N, env.action_dim))
        for a in actions[:2]:
            check_step(env, env.step(a))
        metrics = env.metrics()
        assert all(isinstance(k, str) and isinstance(v, float) for k, v in metrics.items())
        assert len(env.worker_done_times) == env.workers  # one per worker, none in-process

        # The split step is the same step, its rows handed over once each, complete.
        state = env.get_state()
        plain = _copy(env.step(actions[2]))
        env.set_state(state)
        handed: list[tuple[int, int]] = []

        def on_rows(step: EnvStep, lo: int, hi: int) -> None:
            handed.append((lo, hi))
            np.testing.assert_array_equal(step.final_obs[lo:hi], plain["final_obs"][lo:hi])

        env.step_begin(actions[2])
        split = env.step_end(on_rows=on_rows)
        check_step(env, split)
        _assert_same(_copy(split), plain)
        covered = np.zeros(N, int)
        for lo, hi in handed:
            covered[lo:hi] += 1
        assert covered.tolist() == [1] * N
        if env.workers == 0:
            assert handed == [(0, N)] and env.worker_done_times == []
        if name.startswith("G1WalkFlat"):
            assert isinstance(env, TaskEnv)


@pytest.mark.parametrize("member", sorted(VecEnv.__abstractmethods__))
def test_a_class_lacking_a_member_cannot_be_built(member: str) -> None:
    body = {k: v for k, v in vars(FakeEnv).items() if k != member}
    lacking = type("Lacking", (VecEnv,), body)
    with pytest.raises(TypeError, match=f"abstract method.*{member}"):
        lacking(N, 1)


def test_an_env_without_the_contract_or_a_size_is_refused() -> None:
    class Duck:  # every method, but not a VecEnv
        locals().update({k: v for k, v in vars(FakeEnv).items() if not k.startswith("__")})

    with pytest.raises(TypeError, match="returned Duck, not a VecEnv"):
        check_env(Duck())
    env = FakeEnv(N, 1)
    env.obs_dim = 6.0  # type: ignore[assignment]
    with pytest.raises(TypeError, match=r"FakeEnv\.obs_dim must be an int >= 1, got 6\.0"):
        check_env(env)


def test_a_wrong_dtype_or_shape_is_refused() -> None:
    env = FakeEnv(N, 1)
    env.reset()
    step = env.step(np.zeros((N, env.action_dim)))
    check_step(env, step)
    wrong = EnvStep(**{**vars(step), "episode_length": step.episode_length.astype(np.float32)})
    with pytest.raises(
        TypeError, match=r"EnvStep\.episode_length must be int32 \(4,\), got float32"
    ):
        check_step(env, wrong)
    terms = {**step.reward_terms, "alive": step.reward_terms["alive"].astype(np.float64)}
    with pytest.raises(TypeError, match=r"reward_terms\['alive'\] must be float32"):
        check_step(env, EnvStep(**{**vars(step), "reward_terms": terms}))
    with pytest.raises(
        TypeError, match=r"EnvStep\.obs must be float32 \(4, 6\), got float32 \(2, 6\)"
    ):
        check_step(env, EnvStep(**{**vars(step), "obs": step.obs[:2]}))


def _device_envs() -> dict[str, Callable[[], DeviceVecEnv]]:
    return {
        "FakeDeviceEnv": lambda: FakeDeviceEnv(N, seed=1, max_episode_steps=3),
        "G1WalkWarp (Warp's CPU device)": lambda: make_env(
            TaskConfig(), MjwarpConfig(warp=WarpOptions(device="cpu")), N, 1
        ),
    }


@pytest.mark.parametrize(
    "name",
    [
        "FakeDeviceEnv",
        pytest.param("G1WalkWarp (Warp's CPU device)", marks=pytest.mark.slow),
    ],
)
def test_every_device_env_and_fake_implements_the_device_contract(name: str, request) -> None:
    """The device contract (envs.contract.api.DeviceVecEnv) as the runner uses it: sizes, a
    reset's and a step's tensors on the env's device with the declared dtypes and shapes, metrics
    as floats, get_state / set_state continuing bit for bit."""
    import torch

    if name.startswith("G1WalkWarp"):
        request.getfixturevalue("mjwarp")  # skips, naming the pip command, without the extra
    with _device_envs()[name]() as env:
        check_env(env)
        assert isinstance(env, DeviceVecEnv) and not isinstance(env, VecEnv)
        obs, critic_obs = env.reset()
        assert obs.dtype == torch.float32 and tuple(obs.shape) == (N, env.obs_dim)
        assert tuple(critic_obs.shape) == (N, env.critic_obs_dim)
        assert obs.device.type == env.device.type
        g = torch.Generator().manual_seed(0)
        actions = (torch.rand(3, N, env.action_dim, generator=g) * 2 - 1).to(env.device)
        for a in actions[:2]:
            check_device_step(env, env.step(a))
        assert all(isinstance(v, float) for v in env.metrics().values())
        state = env.get_state()
        first = {k: v.clone() for k, v in vars(env.step(actions[2])).items() if k != "reward_terms"}
        env.set_state(state)
        again = env.step(actions[2])
        for key, value in first.items():
            assert torch.equal(getattr(again, key), value), key
