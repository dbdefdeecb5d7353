"""FakeEnv as a device env (`DeviceVecEnv`, on the CPU device): the same numbers through the
device env's contract, so a run with it must train exactly as a run with FakeEnv does.

It steps a FakeEnv on the host and copies its outputs into static tensors (a real device env
never leaves the device; a fake may, it only runs on the CPU). CLI runs select it with
FLASHSAC_BENCH_ENV_FACTORY=tests.fakes.fake_device_env:make_env.
"""

from __future__ import annotations

from typing import Any

import torch

from flashsac_bench.envs.contract.api import DeviceEnvStep, DeviceVecEnv
from tests.fakes.fake_env import FakeEnv


class FakeDeviceEnv(DeviceVecEnv):
    def __init__(self, num_envs: int, seed: int, max_episode_steps: int = 12) -> None:
        self.inner = FakeEnv(num_envs, seed, max_episode_steps=max_episode_steps)
        self.num_envs, self.max_episode_steps = num_envs, max_episode_steps
        self.obs_dim, self.critic_obs_dim = FakeEnv.obs_dim, FakeEnv.critic_obs_dim
        self.action_dim = FakeEnv.action_dim
        out = self.inner.out
        self.out = DeviceEnvStep(
            **{
                k: torch.zeros(getattr(out, k).shape, dtype=_dtype(getattr(out, k)))
                for k in vars(out)
                if k != "reward_terms"
            },
            reward_terms={k: torch.zeros(v.shape) for k, v in out.reward_terms.items()},
        )
        self.steps = 0
        self.closed = False

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def _publish(self) -> None:
        out = self.inner.out
        for k in vars(out):
            if k != "reward_terms":
                getattr(self.out, k).copy_(torch.from_numpy(getattr(out, k)))
        for k, v in out.reward_terms.items():
            self.out.reward_terms[k].copy_(torch.from_numpy(v))

    def reset(self) -> tuple[torch.Tensor, torch.Tensor]:
        self.inner.reset()
        self._publish()
        return self.out.obs, self.out.critic_obs

    def step(self, actions: torch.Tensor) -> DeviceEnvStep:
        assert actions.dtype == torch.float32 and actions.device.type == "cpu"
        self.steps += 1
        self.inner.step(actions.numpy())
        self._publish()
        return self.out

    def metrics(self) -> dict[str, float]:
        return self.inner.metrics()

    def get_state(self) -> dict[str, Any]:
        state = self.inner.get_state()
        state["obs"], state["critic_obs"] = (
            self.out.obs.numpy().copy(),
            self.out.critic_obs.numpy().copy(),
        )
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        self.inner.set_state(state)
        self.inner.out.obs[:] = state["obs"]
        self.inner.out.critic_obs[:] = state["critic_obs"]
        self.out.obs.copy_(torch.from_numpy(state["obs"]))
        self.out.critic_obs.copy_(torch.from_numpy(state["critic_obs"]))

    def close(self) -> None:
        self.closed = True


def _dtype(a: Any) -> torch.dtype:
    return torch.from_numpy(a[:0]).dtype


def make_env(task_cfg: Any, backend_cfg: Any, num_envs: int, seed: int) -> FakeDeviceEnv:
    return FakeDeviceEnv(num_envs, seed)
