"""task=gymnasium: a Gymnasium vector env as the env contract (`VecEnv`).

Gymnasium 1.x's vector envs autoreset in one of three modes. NEXT_STEP (the default) returns a
finished episode's last observation in its step and resets on the NEXT call, whose transition
(last obs -> first obs, reward 0) is no transition of the env; DISABLED leaves the reset to the
caller. SAME_STEP, used here, resets a finished env within the step that finished it and hands
the true final observation over in `info["final_obs"]`: so the step returns, for every env, the
observation for the next action (`obs`, after the reset) and the next observation of THIS
transition (`final_obs`), as the env contract asks, and a time-limit truncation bootstraps from
the state the episode really reached.

What FlashSAC needs of such a task (config.task.GymnasiumTaskConfig says why no key is needed for
it): the actor's actions in [-1, 1] are mapped linearly onto the env's action bounds; the policy
and the critic see the same observation (critic_obs is obs); observations and rewards are
float32; `truncated` is Gymnasium's truncation where the episode did not also terminate.

Checkpoints: `get_state` holds everything that continues the envs bit for bit where the env is
a MuJoCo env (gymnasium.envs.mujoco, the suite this task is measured on): every array of its
MjData (the constraint arena's, rebuilt by every step, only where their size is this step's),
its random generator and its time limit's step count. Another env's state lives in Python
objects that a checkpoint cannot hold (it stores plain values only): its checkpoints serve
evaluate and export, and a resume from one is refused in one line (`NOT_RESUMABLE`).

Imported only where task=gymnasium is built or checked (`require_gymnasium` first: the one-line
error naming the [gymnasium] extra where it is missing).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.task import GymnasiumTaskConfig
from flashsac_bench.envs.contract.api import NOT_RESUMABLE, EnvStep, RowsDone, VecEnv

STATE_FORMAT = 1


@dataclass(frozen=True)
class EnvFacts:
    """What the runner and the exported policy need to know of a Gymnasium env."""

    env_id: str
    obs_dim: int
    action_dim: int
    action_low: tuple[float, ...]
    action_high: tuple[float, ...]
    max_episode_steps: int
    dt: float | None  # seconds per step (MuJoCo envs: frame_skip * timestep), None: unknown
    mujoco: bool  # a MuJoCo env: its state can be checkpointed exactly

    def env_actions(self, actions: np.ndarray, dtype: Any) -> np.ndarray:
        """Actions in [-1, 1] (clipped) mapped linearly onto the env's bounds, as `dtype`."""
        low, high = np.asarray(self.action_low), np.asarray(self.action_high)
        a = np.clip(np.asarray(actions, np.float64), -1.0, 1.0)
        return (low + (a + 1.0) * 0.5 * (high - low)).astype(dtype)

    def record(self) -> dict[str, Any]:
        """What a checkpoint carries of the env (runner.records.RunInfo.model): its id and
        Gymnasium's version identify it (`sha256`, compared on resume), the action bounds are
        what an exported policy's actions are mapped onto."""
        import hashlib

        ident = f"gymnasium {gym.__version__}|{self.env_id}|{self.obs_dim}|{self.action_dim}"
        ident += f"|{list(self.action_low)}|{list(self.action_high)}|{self.max_episode_steps}"
        return {
            "model_file": None,
            "env_id": self.env_id,
            "gymnasium": gym.__version__,
            "sha256": hashlib.sha256(ident.encode()).hexdigest(),
            "files": None,
            "action_low": list(self.action_low),
            "action_high": list(self.action_high),
            "dt": self.dt,
        }


def facts_of(env: gym.Env[Any, Any], env_id: str) -> EnvFacts:
    """The facts of one made env; ConfigError (one line) where the env is none this adapter can
    step: a flat Box observation, a bounded Box action space, a time limit."""
    obs_space, act_space = env.observation_space, env.action_space
    where = f"task.env_id={env_id}"
    if not isinstance(obs_space, gym.spaces.Box) or len(obs_space.shape) != 1:
        raise ConfigError(f"{where}: its observation space {obs_space} is no flat Box (1-D)")
    if not isinstance(act_space, gym.spaces.Box) or len(act_space.shape) != 1:
        raise ConfigError(f"{where}: its action space {act_space} is no flat Box (continuous)")
    low, high = np.asarray(act_space.low, np.float64), np.asarray(act_space.high, np.float64)
    if not (np.isfinite(low).all() and np.isfinite(high).all() and (low < high).all()):
        raise ConfigError(
            f"{where}: its action bounds [{low}, {high}] are not finite with low < high (the "
            "actor's tanh actions are scaled onto them)"
        )
    steps = env.spec.max_episode_steps if env.spec is not None else None
    if not steps or steps < 1:
        raise ConfigError(
            f"{where} has no time limit (its spec's max_episode_steps): register it with one"
        )
    unwrapped = env.unwrapped
    dt = getattr(unwrapped, "dt", None)
    return EnvFacts(
        env_id=env_id,
        obs_dim=int(obs_space.shape[0]),
        action_dim=int(act_space.shape[0]),
        action_low=tuple(float(x) for x in low),
        action_high=tuple(float(x) for x in high),
        max_episode_steps=int(steps),
        dt=float(dt) if isinstance(dt, int | float) else None,
        mujoco=isinstance(getattr(unwrapped, "data", None), mujoco.MjData),
    )


def check_task(task: GymnasiumTaskConfig) -> EnvFacts:
    """Make one env of the task (as a run would, before anything else exists) and return its
    facts; ConfigError (one line) for an id Gymnasium does not know or an env this adapter
    cannot step."""
    env = make_one(task.env_id)
    try:
        return facts_of(env, task.env_id)
    finally:
        env.close()


def make_one(env_id: str, render_mode: str | None = None, **kwargs: Any) -> gym.Env[Any, Any]:
    """gymnasium.make(env_id) wrapped so that its state can be read and restored; an unknown id
    is a ConfigError (one line)."""
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    try:
        env = gym.make(env_id, **kwargs)
    except gym.error.Error as err:
        raise ConfigError(f"task.env_id={env_id}: {err}") from None
    return StateAccess(env)


class StateAccess(gym.Wrapper[Any, Any, Any, Any]):
    """An env whose state is the attribute `flashsac_state` (read it: `env_state`; assign it:
    `set_env_state`), so that a vector env reads and restores its envs' states through
    get_attr / set_attr, also in worker processes."""

    @property
    def flashsac_state(self) -> dict[str, Any]:
        return env_state(self.env)

    @flashsac_state.setter
    def flashsac_state(self, state: dict[str, Any]) -> None:
        set_env_state(self.env, state)


def _time_limit(env: gym.Env[Any, Any]) -> gym.wrappers.TimeLimit | None:
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.TimeLimit):
            return env
        env = env.env
    return None


def env_state(env: gym.Env[Any, Any]) -> dict[str, Any]:
    """One env's state as plain values (numbers, strings, numpy arrays, dicts)."""
    unwrapped = env.unwrapped
    limit = _time_limit(env)
    state: dict[str, Any] = {
        "np_random": unwrapped.np_random.bit_generator.state,
        "elapsed_steps": None if limit is None else limit._elapsed_steps,
    }
    data = getattr(unwrapped, "data", None)
    if not isinstance(data, mujoco.MjData):
        state[NOT_RESUMABLE] = (
            f"{type(unwrapped).__name__} is no MuJoCo env: its state lives in Python objects "
            "that a checkpoint does not hold"
        )
        return state
    state["time"] = float(data.time)
    state["mjdata"] = {name: array.copy() for name, array in _mjdata_arrays(data)}
    return state


def set_env_state(env: gym.Env[Any, Any], state: dict[str, Any]) -> None:
    if NOT_RESUMABLE in state:
        raise ValueError(f"cannot continue this env: {state[NOT_RESUMABLE]}")
    unwrapped = env.unwrapped
    unwrapped.np_random.bit_generator.state = state["np_random"]
    limit = _time_limit(env)
    if limit is not None:
        limit._elapsed_steps = state["elapsed_steps"]
    data = getattr(unwrapped, "data", None)
    if not isinstance(data, mujoco.MjData):
        raise ValueError(f"{type(unwrapped).__name__} is no MuJoCo env: a MuJoCo env's state")
    saved = state["mjdata"]
    for name, array in _mjdata_arrays(data):
        value = saved.get(name)
        # The constraint arena's arrays change size with every step's contacts and are rebuilt
        # before they are read: only those of this step's size are written back.
        if value is not None and np.shape(value) == array.shape:
            array[...] = value
    data.time = state["time"]


def _mjdata_arrays(data: mujoco.MjData) -> list[tuple[str, np.ndarray]]:
    """Every numpy array of an MjData, by name (its views of the data's own buffers)."""
    found = []
    for name in dir(data):
        if name.startswith("_"):
            continue
        try:
            value = getattr(data, name)
        except Exception:  # noqa: BLE001 - an accessor of a size-0 part
            continue
        if isinstance(value, np.ndarray):
            found.append((name, value))
    return found


class GymnasiumVecEnv(VecEnv):
    """`num_envs` envs of task.env_id in a Gymnasium vector env (sync: in this process; async:
    one worker process each), autoreset in the same step (module docstring)."""

    def __init__(self, task: GymnasiumTaskConfig, num_envs: int, seed: int) -> None:
        self.task, self.num_envs, self.seed = task, num_envs, seed
        self.facts = f = check_task(task)  # before any worker process starts
        fns: Sequence[Callable[[], gym.Env[Any, Any]]] = [
            functools.partial(make_one, task.env_id) for _ in range(num_envs)
        ]
        if task.vectorization == "async":
            # Spawned: a forked copy of a process running torch's threads may deadlock.
            self.vec: SyncVectorEnv | AsyncVectorEnv = AsyncVectorEnv(
                fns, autoreset_mode=AutoresetMode.SAME_STEP, context="spawn"
            )
        else:
            self.vec = SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)
        self.obs_dim = self.critic_obs_dim = f.obs_dim
        self.action_dim = f.action_dim
        self.max_episode_steps = f.max_episode_steps
        self._action_dtype = self.vec.single_action_space.dtype
        n = num_envs
        self._return = np.zeros(n, np.float64)
        self._length = np.zeros(n, np.int64)
        obs, final = np.zeros((n, f.obs_dim), np.float32), np.zeros((n, f.obs_dim), np.float32)
        # critic_obs is obs: the same arrays under both names.
        self.out = EnvStep(
            obs=obs,
            critic_obs=obs,
            final_obs=final,
            final_critic_obs=final,
            reward=np.zeros(n, np.float32),
            terminated=np.zeros(n, bool),
            truncated=np.zeros(n, bool),
            reward_terms={},
            episode_return=np.zeros(n, np.float32),
            episode_length=np.zeros(n, np.int32),
        )
        self._closed = False
        self._stepping = False  # an async step begun, not yet ended

    @property
    def workers(self) -> int:
        """Async: one worker process per env; sync: none."""
        return self.num_envs if isinstance(self.vec, AsyncVectorEnv) else 0

    @property
    def worker_done_times(self) -> list[float | None]:
        """Gymnasium's workers report no clock: unknown (None) for each."""
        return [None] * self.workers

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        """Every env's first episode: env i seeded with seed + i (Gymnasium's vector seeding)."""
        obs, _ = self.vec.reset(seed=self.seed)
        self.out.obs[:] = obs
        self._return[:] = 0.0
        self._length[:] = 0
        return self.out.obs, self.out.critic_obs

    def step(self, actions: np.ndarray) -> EnvStep:
        return self._write(*self.vec.step(self.facts.env_actions(actions, self._action_dtype)))

    def step_begin(self, actions: np.ndarray) -> None:
        """Async: the actions handed to the workers, which step while the caller goes on."""
        if not isinstance(self.vec, AsyncVectorEnv):
            super().step_begin(actions)
            return
        self.vec.step_async(self.facts.env_actions(actions, self._action_dtype))
        self._stepping = True

    def step_end(self, on_rows: RowsDone | None = None) -> EnvStep:
        if not isinstance(self.vec, AsyncVectorEnv):
            return super().step_end(on_rows)
        if not self._stepping:
            raise RuntimeError("step_end() without step_begin()")
        self._stepping = False
        step = self._write(*self.vec.step_wait())
        if on_rows is not None:
            on_rows(step, 0, self.num_envs)
        return step

    def _write(
        self,
        obs: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        info: dict[str, Any],
    ) -> EnvStep:
        """The vector step's results into the EnvStep's arrays."""
        out = self.out
        out.obs[:] = obs
        out.final_obs[:] = obs
        done = np.logical_or(terminated, truncated)
        if done.any():
            final = info["final_obs"]
            for i in np.flatnonzero(done):
                out.final_obs[i] = final[i]
        out.reward[:] = reward
        out.terminated[:] = terminated
        out.truncated[:] = np.logical_and(truncated, np.logical_not(terminated))
        self._return += reward
        self._length += 1
        out.episode_return[:] = self._return
        out.episode_length[:] = self._length
        self._return[done] = 0.0
        self._length[done] = 0
        return out

    def metrics(self) -> dict[str, float]:
        return {}

    def get_state(self) -> dict[str, Any]:
        envs = list(self.vec.get_attr("flashsac_state"))
        state: dict[str, Any] = {
            "format": STATE_FORMAT,
            "env_id": self.task.env_id,
            "num_envs": self.num_envs,
            "obs": self.out.obs.copy(),
            "episode_return": self._return.copy(),
            "episode_length": self._length.copy(),
            "envs": envs,
        }
        reasons = [e[NOT_RESUMABLE] for e in envs if NOT_RESUMABLE in e]
        if reasons:
            state[NOT_RESUMABLE] = f"task.env_id={self.task.env_id}: {reasons[0]}"
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        if state.get("format") != STATE_FORMAT or state.get("env_id") != self.task.env_id:
            raise ValueError(f"this env state is no state of {self.task.env_id}'s envs")
        if NOT_RESUMABLE in state:
            raise ValueError(f"cannot continue these envs: {state[NOT_RESUMABLE]}")
        if state["num_envs"] != self.num_envs:
            raise ValueError(f"state is for {state['num_envs']} envs, this env has {self.num_envs}")
        self.vec.set_attr("flashsac_state", list(state["envs"]))
        self.out.obs[:] = state["obs"]
        self._return[:] = state["episode_return"]
        self._length[:] = state["episode_length"]

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.vec.close()


def record_episode(
    task: GymnasiumTaskConfig,
    policy: Callable[[np.ndarray], np.ndarray],
    seed: int,
    max_steps: int,
    width: int,
    height: int,
) -> tuple[list[np.ndarray], float | None]:
    """The rgb_array frames of one episode of one env (seeded `seed`) acted on by `policy`
    (obs (1, obs_dim) float32 -> actions (1, action_dim) in [-1, 1]): the first state, then one
    per step until the episode ends or `max_steps` are taken. Also the env's seconds per step
    (None: unknown)."""
    try:
        env = make_one(task.env_id, render_mode="rgb_array", width=width, height=height)
    except TypeError:  # an env without frame size arguments renders at its own size
        env = make_one(task.env_id, render_mode="rgb_array")
    try:
        facts = facts_of(env, task.env_id)
        obs, _ = env.reset(seed=seed)
        frames = [np.asarray(env.render())]
        for _ in range(max_steps):
            actions = policy(np.asarray(obs, np.float32)[None])
            action = facts.env_actions(actions, env.action_space.dtype)[0]
            obs, _, terminated, truncated, _ = env.step(action)
            frames.append(np.asarray(env.render()))
            if terminated or truncated:
                break
        return frames, facts.dt
    finally:
        env.close()
