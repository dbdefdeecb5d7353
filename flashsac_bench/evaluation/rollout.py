"""Rollouts of a policy in a vector env: per-episode returns, lengths and tracking metrics."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from flashsac_bench.envs.contract.api import EnvStep, VecEnv

# Observation slices and scales of G1 Walk Flat (flashsac_bench/envs/g1/cpu/walk_flat.py), restated
# so that importing this module does not load MuJoCo before MUJOCO_GL is set (see evaluate).
GYRO, COMMAND, LIN_VEL = slice(0, 3), slice(93, 96), slice(98, 101)


def step_metrics(
    critic_obs: np.ndarray,
    reward_terms: dict[str, np.ndarray],
    *,
    lin_vel_scale: float,
    gyro_scale: float,
    tracking_sigma: float,
    lin_weight: float,
    ang_weight: float,
    ctrl_dt: float,
) -> dict[str, np.ndarray]:
    """Tracking quantities of one vector step from its (noise-free) critic observation.

    lin_vel_error: |cmd_xy - v_xy| (m/s, pelvis frame); ang_vel_error: |cmd_wz - gyro_z| (rad/s).
    tracking_*: the env's weighted reward terms; tracking_*_frac: the same divided by their
    maximum (weight * ctrl_dt), i.e. the unweighted kernel exp(-err^2 / sigma) in [0, 1]
    (computed from the errors where the weight is 0).
    """
    c = np.asarray(critic_obs, dtype=np.float64)
    cmd = c[:, COMMAND]
    v = c[:, LIN_VEL] / lin_vel_scale
    wz = c[:, GYRO][:, 2] / gyro_scale
    lin_err = np.linalg.norm(cmd[:, :2] - v[:, :2], axis=1)
    ang_err = np.abs(cmd[:, 2] - wz)
    out = {"lin_vel_error": lin_err, "ang_vel_error": ang_err}
    for name, err, w in (("lin_vel", lin_err, lin_weight), ("ang_vel", ang_err, ang_weight)):
        term = np.asarray(reward_terms.get(f"tracking_{name}", np.zeros(len(c))), np.float64)
        out[f"tracking_{name}"] = term
        top = w * ctrl_dt
        out[f"tracking_{name}_frac"] = (
            term / top if top != 0 else np.exp(-np.square(err) / tracking_sigma)
        )
    return out


# ---------------------------------------------------------------------------- rollouts
@dataclass
class Rollout:
    episodes: list[dict[str, Any]]
    steps: int
    frames: list[np.ndarray]  # recorded states of env `record_env` (its first episode)


def episode_quotas(episodes: int, num_envs: int) -> np.ndarray:
    """How many episodes each env contributes (fixed up front: no bias toward short ones)."""
    base, rest = divmod(episodes, num_envs)
    return np.array([base + (i < rest) for i in range(num_envs)], dtype=np.int64)


def rollout(
    env: VecEnv,
    policy: Callable[[np.ndarray], np.ndarray],
    episodes: int,
    metrics: Callable[[EnvStep], dict[str, np.ndarray]],
    *,
    record: Callable[[], np.ndarray] | None = None,
    record_env: int = 0,
    record_steps: int = 0,
    max_episode_steps: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Rollout:
    """Step all envs with `policy(obs)` until each has finished its quota of episodes.

    `metrics(step)` returns per-env arrays that are averaged over each episode. `record()`
    (optional) returns a state to keep for rendering: called once before the first step and
    after every step until env `record_env` ends its first episode or `record_steps` are kept.
    `progress(steps, episodes done)` (optional) is called after every step.
    """
    n = env.num_envs
    quota = episode_quotas(episodes, n)
    limit = int(quota.max()) * int(max_episode_steps or env.max_episode_steps) + 1
    sums: dict[str, np.ndarray] = {}
    steps_in = np.zeros(n, dtype=np.int64)
    done_list: list[dict[str, Any]] = []
    obs = env.reset()[0]
    recording = record is not None and record_steps > 0
    frames = [record()] if record is not None and recording else []
    steps = 0
    while (quota > 0).any():
        if steps >= limit:
            raise RuntimeError(f"episodes did not end within {limit} steps")
        out = env.step(policy(obs))
        steps += 1
        per_step = metrics(out)
        per_step["reward"] = np.asarray(out.reward, np.float64)
        for key, value in per_step.items():
            sums.setdefault(key, np.zeros(n))
            sums[key] += value
        steps_in += 1
        finished = np.asarray(out.terminated) | np.asarray(out.truncated)
        if recording:
            if finished[record_env] or len(frames) >= record_steps or record is None:
                recording = False
            else:
                frames.append(record())
        for i in np.flatnonzero(finished):
            if quota[i] > 0:
                done_list.append(_episode_record(int(i), out, sums, int(steps_in[i])))
                quota[i] -= 1
            for value in sums.values():
                value[i] = 0.0
            steps_in[i] = 0
        obs = out.obs
        if progress is not None:
            progress(steps, len(done_list))
    return Rollout(done_list, steps, frames)


def _episode_record(
    i: int, out: EnvStep, sums: dict[str, np.ndarray], steps: int
) -> dict[str, Any]:
    length = int(out.episode_length[i])
    rec: dict[str, Any] = {
        "env": int(i),
        "length": length,
        "return": float(out.episode_return[i]),
        "terminated": bool(out.terminated[i]),
        "summed_reward": float(sums["reward"][i]),
    }
    if out.final_critic_obs.shape[1] >= COMMAND.stop:
        rec["command"] = [float(x) for x in out.final_critic_obs[i, COMMAND]]
    for key, value in sums.items():
        if key != "reward":
            rec[f"{key}_mean"] = float(value[i] / max(steps, 1))
    return rec


def aggregate(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """mean / std / min / max over episodes of every numeric per-episode value."""
    keys = [k for k, v in episodes[0].items() if isinstance(v, int | float) and k != "env"]
    out: dict[str, Any] = {"episodes": len(episodes)}
    for key in keys:
        vals = np.array([float(e[key]) for e in episodes])
        out[key] = {
            "mean": float(vals.mean()),
            "std": float(vals.std(ddof=1)) if len(vals) > 1 else 0.0,
            "min": float(vals.min()),
            "max": float(vals.max()),
        }
    return out
