"""A small deterministic in-process env with the env contract (`VecEnv`), for the runner tests.

CLI subprocess tests select it with FLASHSAC_BENCH_ENV_FACTORY=tests.fakes.fake_env:make_env
(the repository root on PYTHONPATH: `runs.fake_env_environ`). Faults are injected through
environment variables so they also reach Hydra / submitit job processes:
FAKE_ENV_FAIL_AT=k (env.step raises at tick k), FAKE_ENV_HANG_AT=k (sleeps for an hour),
FAKE_ENV_SIGNAL_AT=k:SIGTERM[:2] (sends the signal to its own process, [twice, 0.5 s apart]),
FAKE_ENV_STEP_SLEEP=s (every step sleeps s seconds), FAKE_ENV_MARKER=path (appended to whenever
an env is built), FAKE_ENV_DISK_FULL=1 (checkpoint files are written to /dev/full, which fails
every write with ENOSPC: a full disk without filling one).
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from typing import Any

import numpy as np

from flashsac_bench.envs.contract.api import EnvStep, VecEnv


class FakeEnv(VecEnv):
    """Envs of a noisy linear system; episodes end on |x0| > 1.6 or after max_episode_steps."""

    obs_dim = 6
    critic_obs_dim = 7
    action_dim = 3

    def __init__(
        self,
        num_envs: int,
        seed: int,
        max_episode_steps: int = 12,
        fail_at: int | None = None,
        hang_at: int | None = None,
        signal_at: tuple[int, int] | None = None,
        step_sleep_s: float = 0.0,
        signal_count: int = 1,
    ) -> None:
        self.num_envs = num_envs
        self.max_episode_steps = max_episode_steps
        self.fail_at, self.hang_at, self.signal_at = fail_at, hang_at, signal_at
        self.signal_count = signal_count
        self.step_sleep_s = step_sleep_s
        self.rng = np.random.default_rng(seed)
        self.w = np.random.default_rng(1234).normal(size=(self.action_dim, self.obs_dim))
        n = num_envs
        self.x = np.zeros((n, self.obs_dim))
        self.t = np.zeros(n, dtype=np.int64)
        self.ret = np.zeros(n)
        self.ticks = 0
        self.closed = False
        f32 = np.float32
        # Outputs are allocated once and overwritten in place, like the real env's.
        self.out = EnvStep(
            obs=np.zeros((n, self.obs_dim), f32),
            critic_obs=np.zeros((n, self.critic_obs_dim), f32),
            final_obs=np.zeros((n, self.obs_dim), f32),
            final_critic_obs=np.zeros((n, self.critic_obs_dim), f32),
            reward=np.zeros(n, f32),
            terminated=np.zeros(n, bool),
            truncated=np.zeros(n, bool),
            reward_terms={"alive": np.zeros(n, f32), "effort": np.zeros(n, f32)},
            episode_return=np.zeros(n, f32),
            episode_length=np.zeros(n, np.int32),
        )

    def _write_obs(self, obs: np.ndarray, critic: np.ndarray, idx: Any = slice(None)) -> None:
        obs[idx] = self.x[idx]
        critic[idx, : self.obs_dim] = self.x[idx]
        critic[idx, self.obs_dim] = self.t[idx] / self.max_episode_steps

    def _reset_envs(self, mask: np.ndarray) -> None:
        k = int(mask.sum())
        self.x[mask] = self.rng.normal(scale=0.5, size=(k, self.obs_dim))
        self.t[mask] = 0
        self.ret[mask] = 0.0

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        self._reset_envs(np.ones(self.num_envs, bool))
        self._write_obs(self.out.obs, self.out.critic_obs)
        return self.out.obs, self.out.critic_obs

    def step(self, actions: np.ndarray) -> EnvStep:
        tick, self.ticks = self.ticks, self.ticks + 1
        if self.fail_at is not None and tick == self.fail_at:
            raise RuntimeError(f"fake env exploded at tick {tick}")
        if self.hang_at is not None and tick == self.hang_at:
            time.sleep(3600)
        if self.signal_at is not None and tick == self.signal_at[0]:
            for _ in range(self.signal_count):
                os.kill(os.getpid(), self.signal_at[1])
                if self.signal_count > 1:
                    time.sleep(0.5)
        if self.step_sleep_s:
            time.sleep(self.step_sleep_s)
        a = np.asarray(actions, dtype=np.float64)
        assert a.shape == (self.num_envs, self.action_dim), a.shape
        assert np.all(np.abs(a) <= 1.0 + 1e-6), "actions must be in [-1, 1]"
        noise = self.rng.normal(scale=0.05, size=self.x.shape)
        # Broadcast-sum, not `a @ w`: numpy's OpenBLAS threads spin after a matmul and would
        # compete with the concurrent torch update cycle for the cores.
        drive = (a[:, :, None] * self.w[None]).sum(1)
        self.x = 0.9 * self.x + 0.3 * np.tanh(drive) + noise
        self.t += 1
        o = self.out
        alive = np.ones(self.num_envs)
        effort = -0.1 * np.square(a).sum(-1)
        reward = alive - np.square(self.x).mean(-1) + effort
        self.ret += reward
        terminated = np.abs(self.x[:, 0]) > 1.6
        truncated = (self.t >= self.max_episode_steps) & ~terminated
        self._write_obs(o.final_obs, o.final_critic_obs)
        o.reward[:] = reward
        o.reward_terms["alive"][:] = alive
        o.reward_terms["effort"][:] = effort
        o.terminated[:] = terminated
        o.truncated[:] = truncated
        o.episode_return[:] = self.ret
        o.episode_length[:] = self.t
        done = terminated | truncated
        self._reset_envs(done)
        self._write_obs(o.obs, o.critic_obs)
        return o

    def metrics(self) -> dict[str, float]:
        return {"mean_abs_x0": float(np.abs(self.x[:, 0]).mean()), "ticks": float(self.ticks)}

    def get_state(self) -> dict[str, Any]:
        return {
            "x": self.x.copy(),
            "t": self.t.copy(),
            "ret": self.ret.copy(),
            "ticks": self.ticks,
            "rng": self.rng.bit_generator.state,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.x, self.t, self.ret = state["x"].copy(), state["t"].copy(), state["ret"].copy()
        self.ticks = int(state["ticks"])
        self.rng.bit_generator.state = state["rng"]

    def close(self) -> None:
        self.closed = True


class SplitFakeEnv(FakeEnv):
    """FakeEnv as an env in worker processes: `workers` > 0 and a step that really splits
    (`step_begin` only takes the actions; `step_end` steps and hands the rows over in two
    parts, the second part first, as workers that finish out of order would)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._pending: np.ndarray | None = None
        self._done_times: list[float | None] = []
        self.split_steps = 0

    @property
    def workers(self) -> int:
        return 2

    @property
    def worker_done_times(self) -> list[float | None]:
        return list(self._done_times)

    def step(self, actions: np.ndarray) -> EnvStep:
        out = super().step(actions)
        self._done_times = [time.perf_counter(), time.perf_counter()]
        return out

    def step_begin(self, actions: np.ndarray) -> None:
        assert self._pending is None, "step_begin twice without step_end"
        self._pending = np.array(actions, copy=True)

    def step_end(self, on_rows: Any = None) -> EnvStep:
        actions, self._pending = self._pending, None
        assert actions is not None, "step_end without step_begin"
        self.split_steps += 1
        out = self.step(actions)
        half = self.num_envs // 2
        for lo, hi in ((half, self.num_envs), (0, half)):
            if on_rows is not None:
                on_rows(out, lo, hi)
        return out


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value else None


def make_env(task_cfg: Any, backend_cfg: Any, num_envs: int, seed: int) -> FakeEnv:
    marker = os.environ.get("FAKE_ENV_MARKER")
    if marker:
        with open(marker, "a") as f:
            f.write(f"built {num_envs}\n")
    sig = os.environ.get("FAKE_ENV_SIGNAL_AT")
    signal_at, count = None, 1
    if sig:
        tick, name, *times = sig.split(":")
        signal_at = (int(tick), int(getattr(signal, name)))
        count = int(times[0]) if times else 1
    if os.environ.get("FAKE_ENV_DISK_FULL"):
        _fill_the_disk()
    return FakeEnv(
        num_envs,
        seed,
        fail_at=_env_int("FAKE_ENV_FAIL_AT"),
        hang_at=_env_int("FAKE_ENV_HANG_AT"),
        signal_at=signal_at,
        signal_count=count,
        step_sleep_s=float(os.environ.get("FAKE_ENV_STEP_SLEEP") or 0.0),
    )


def _fill_the_disk() -> None:
    """Checkpoint temp files go to /dev/full (ENOSPC on write, as on a full disk)."""
    from flashsac_bench.runner import checkpoint

    def open_tmp(folder: Any, name: str) -> tuple[Any, str]:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        os.close(fd)
        return open("/dev/full", "wb"), tmp

    checkpoint._open_tmp = open_tmp
