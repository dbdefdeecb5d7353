"""A small env built on worker-process shards, with injectable worker faults (for the tests).

Spawned workers import it by name (they get the parent's sys.path); CLI subprocess tests select
it with FLASHSAC_BENCH_ENV_FACTORY=tests.fakes.sharded_env:make_env. Faults, each "tick:worker"
(the worker whose index is given misbehaves at its tick-th step): FAKE_SHARD_FAIL_AT (raises),
FAKE_SHARD_DIE_AT (SIGKILLs itself), FAKE_SHARD_HANG_AT (sleeps for an hour);
FAKE_SHARD_FAIL_START=worker (its factory raises); FAKE_SHARD_WORKERS=K (default:
backend.workers, else 2); FAKE_SHARD_MARKER=path (the worker pids and the shared-memory name are
written there, as JSON, once the env is up).
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from flashsac_bench.envs.contract.api import EnvStep, RowsDone, VecEnv
from flashsac_bench.envs.g1.cpu.shards import ArraySpec, ProcessShards, split_ranges
from flashsac_bench.envs.g1.env_rng import EnvStreams

OBS_DIM, CRITIC_OBS_DIM, ACTION_DIM = 6, 7, 3
MAX_STEPS = 12
SPEC = ArraySpec(
    (
        ("actions", (ACTION_DIM,), "float64"),
        ("obs", (OBS_DIM,), "float32"),
        ("critic_obs", (CRITIC_OBS_DIM,), "float32"),
        ("final_obs", (OBS_DIM,), "float32"),
        ("final_critic_obs", (CRITIC_OBS_DIM,), "float32"),
        ("reward", (), "float32"),
        ("terminated", (), "bool"),
        ("truncated", (), "bool"),
        ("term/alive", (), "float32"),
        ("episode_return", (), "float32"),
        ("episode_length", (), "int32"),
    )
)
_W = np.random.default_rng(1234).normal(size=(ACTION_DIM, OBS_DIM))


@dataclass(frozen=True)
class Faults:
    fail_at: tuple[int, int] | None = None  # (tick, worker)
    die_at: tuple[int, int] | None = None
    hang_at: tuple[int, int] | None = None
    fail_start: int | None = None  # worker

    @classmethod
    def from_environ(cls) -> Faults:
        def pair(name: str) -> tuple[int, int] | None:
            value = os.environ.get(name)
            if not value:
                return None
            tick, worker = value.split(":")
            return int(tick), int(worker)

        start = os.environ.get("FAKE_SHARD_FAIL_START")
        return cls(
            pair("FAKE_SHARD_FAIL_AT"),
            pair("FAKE_SHARD_DIE_AT"),
            pair("FAKE_SHARD_HANG_AT"),
            int(start) if start else None,
        )


class FakeShard:
    """Envs [lo, hi): a noisy linear system; episodes end on |x0| > 1.6 or after 12 steps."""

    def __init__(
        self,
        lo: int,
        hi: int,
        arrays: dict[str, np.ndarray],
        seed: int,
        worker: int,
        faults: Faults,
    ) -> None:
        if faults.fail_start == worker:
            raise ValueError(f"fake shard {worker} refuses to start (bad model file, say)")
        self.a, self.worker, self.faults = arrays, worker, faults
        n = hi - lo
        self.rng = EnvStreams(seed, np.arange(lo, hi), num_streams=2)
        self.x = np.zeros((n, OBS_DIM))
        self.t = np.zeros(n, dtype=np.int64)
        self.ret = np.zeros(n)
        self.ticks = 0

    def _is(self, fault: tuple[int, int] | None) -> bool:
        return fault is not None and fault == (self.ticks, self.worker)

    def _write_obs(self, obs: np.ndarray, critic: np.ndarray) -> None:
        obs[:] = self.x
        critic[:, :OBS_DIM] = self.x
        critic[:, OBS_DIM] = self.t / MAX_STEPS

    def _reset_rows(self, rows: np.ndarray) -> None:
        self.x[rows] = self.rng.unit(1, rows, OBS_DIM) - 0.5
        self.t[rows] = 0
        self.ret[rows] = 0.0

    def nap(self, seconds: float) -> None:
        time.sleep(seconds)

    def reset(self) -> None:
        self._reset_rows(np.arange(len(self.x)))
        self._write_obs(self.a["obs"], self.a["critic_obs"])
        self.a["final_obs"][:] = self.a["obs"]
        self.a["final_critic_obs"][:] = self.a["critic_obs"]

    def step(self) -> None:
        if self._is(self.faults.fail_at):
            raise RuntimeError(f"fake shard {self.worker} exploded at tick {self.ticks}")
        if self._is(self.faults.die_at):
            os.kill(os.getpid(), signal.SIGKILL)
        if self._is(self.faults.hang_at):
            time.sleep(3600)
        self.ticks += 1
        a = self.a
        act = np.clip(a["actions"], -1.0, 1.0)
        noise = 0.1 * (self.rng.unit(0, slice(None), OBS_DIM) - 0.5)
        drive = (act[:, :, None] * _W[None]).sum(1)
        self.x = 0.9 * self.x + 0.3 * np.tanh(drive) + noise
        self.t += 1
        reward = 1.0 - np.square(self.x).mean(-1)
        self.ret += reward
        terminated = np.abs(self.x[:, 0]) > 1.6
        truncated = (self.t >= MAX_STEPS) & ~terminated
        self._write_obs(a["final_obs"], a["final_critic_obs"])
        a["reward"][:] = reward
        a["term/alive"][:] = 1.0
        a["terminated"][:] = terminated
        a["truncated"][:] = truncated
        a["episode_return"][:] = self.ret
        a["episode_length"][:] = self.t
        self._reset_rows(np.flatnonzero(terminated | truncated))
        self._write_obs(a["obs"], a["critic_obs"])

    def get_state(self) -> dict[str, Any]:
        return {
            "x": self.x.copy(),
            "t": self.t.copy(),
            "ret": self.ret.copy(),
            "counters": self.rng.counters.copy(),
            "ticks": np.full(len(self.x), self.ticks),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.x, self.t, self.ret = state["x"].copy(), state["t"].copy(), state["ret"].copy()
        self.rng.counters[:] = state["counters"]
        self.ticks = int(state["ticks"][0])

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class FakeShardFactory:
    seed: int
    ranges: tuple[tuple[int, int], ...]
    faults: Faults = Faults()

    def __call__(self, lo: int, hi: int, arrays: dict[str, np.ndarray]) -> FakeShard:
        return FakeShard(lo, hi, arrays, self.seed, self.ranges.index((lo, hi)), self.faults)


class FakeShardedEnv(VecEnv):
    """A VecEnv whose envs live in worker processes (the runner's view of a process env)."""

    obs_dim, critic_obs_dim, action_dim = OBS_DIM, CRITIC_OBS_DIM, ACTION_DIM
    max_episode_steps = MAX_STEPS

    def __init__(
        self, num_envs: int, seed: int, workers: int = 2, faults: Faults = Faults(), **kw: Any
    ) -> None:
        self.num_envs = num_envs
        ranges = tuple(split_ranges(num_envs, workers))
        self.shards = ProcessShards(
            FakeShardFactory(seed, ranges, faults), SPEC, num_envs, workers, **kw
        )
        a = self.shards.arrays
        self._actions = a["actions"]
        self.out = EnvStep.from_arrays(a, ("alive",))

    @property
    def workers(self) -> int:
        return self.shards.workers

    @property
    def worker_done_times(self) -> list[float | None]:
        return list(self.shards.done_times)

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        self.shards.call("reset")
        return self.out.obs, self.out.critic_obs

    def step(self, actions: np.ndarray) -> EnvStep:
        self._actions[:] = actions
        self.shards.call("step")
        return self.out

    def step_begin(self, actions: np.ndarray) -> None:
        self._actions[:] = actions
        self.shards.post("step")

    def step_end(self, on_rows: RowsDone | None = None) -> EnvStep:
        out = self.out
        self.shards.settle(None if on_rows is None else lambda lo, hi: on_rows(out, lo, hi))
        return out

    def metrics(self) -> dict[str, float]:
        return {"mean_abs_x0": float(np.abs(self.out.obs[:, 0]).mean())}

    def get_state(self) -> dict[str, Any]:
        parts = self.shards.call("get_state")
        state = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        state["obs"], state["critic_obs"] = self.out.obs.copy(), self.out.critic_obs.copy()
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        keys = ("x", "t", "ret", "counters", "ticks")
        self.shards.call_each(
            "set_state", [({k: state[k][lo:hi] for k in keys},) for lo, hi in self.shards.ranges]
        )
        self.out.obs[:] = state["obs"]
        self.out.critic_obs[:] = state["critic_obs"]

    def close(self) -> None:
        self.shards.close()


def make_env(task_cfg: Any, backend_cfg: Any, num_envs: int, seed: int) -> FakeShardedEnv:
    workers = int(os.environ.get("FAKE_SHARD_WORKERS") or getattr(backend_cfg, "workers", 0) or 2)
    timeout = float(getattr(backend_cfg, "worker_timeout_s", 10.0))
    env = FakeShardedEnv(
        num_envs, seed, workers=workers, faults=Faults.from_environ(), timeout_s=timeout
    )
    marker = os.environ.get("FAKE_SHARD_MARKER")
    if marker:
        with open(marker, "w") as f:
            json.dump({"pids": env.shards.pids, "shm": env.shards.shm_name}, f)
    return env
