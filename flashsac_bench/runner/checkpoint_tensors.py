"""Every tensor a checkpoint restores, checked before anything uses it.

A checkpoint's CRCs say that its bytes are the ones written, not that a run wrote them. So each
tensor (and numpy array) that a resume, evaluate, export or convert would put to use is held
against what the run that wrote it holds: its shape, its dtype and a plausible range for what
it is. What a run holds follows from the checkpoint's own config (its learner.* sizes,
run.num_envs, the ring's capacity), which a resume then requires to be this run's
(runner.resume.check_compatible):

  learner   the set of its tensors by name, each one's shape and dtype (`learner_specs`: the
            network layouts of its sizes); weights, BatchNorm statistics and Adam's moments
            within MAX_ABS_STATE (second moments >= 0), a log temperature whose exp() is
            finite in float32, counters whole numbers in range, exploration noise (the
            learner RNG's standard normal draws) within NOISE_BOUND and its repeat counters
            within learner.zeta_max, reward statistics within MAX_ABS_STATE (their variance
            its square, sizes >= 0)
  replay    [rows, width] float32 of the learner's row width, no more rows than the ring
            holds, its cursor inside them; every finite value within MAX_ABS_STATE, the
            actions in [-1, 1] (tanh and uniform actions are), the episode flags 0 or 1
  staging   the current obs, critic obs and dones: float32 rows of the learner's widths, one
            per env, every finite value within MAX_ABS_STATE
  env       the state of run.num_envs envs (its `num_envs`, one row per env in its arrays, its
            obs / critic_obs of the learner's widths), every finite float within MAX_ABS_STATE

NaN / inf in the replay rows, staging and env state are a run's own: an env may hand on a row
it could not compute, and the learner's finite guard skips every update that samples it (the
runner's not-learning rule then ends the run, runner.stopping). A finite value past any sense
passes that guard and would make the learner's weights NaN, so it is refused.

`check_restored` is called by runner.checkpoint.load_checkpoint, which every loader reads
through: the CLI's preflight runs it before any run dir exists, and a refusal is one line
(CheckpointError naming the file and the tensor).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from flashsac_bench.config.acting import acting_config
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.learner import LearnerConfig
from flashsac_bench.learner.networks import actor_layouts, critic_layouts, temperature_layout
from flashsac_bench.learner.replay import RowLayout
from flashsac_bench.learner.state import METRICS

# A trained network's values are O(1) to O(1e3) (its weights are projected to unit rows); past
# this bound a tensor is a crafted or broken one, whatever its CRC says.
MAX_ABS_STATE = 1e12
# Counts (steps, draws, samples): whole numbers up to this (exact in float64; the float32
# scalars hold exact integers to 2^24, which no schedule here reaches).
MAX_COUNT = 2.0**53
# exp(log temperature) must be a finite float32 (exp(88.7) is not).
LOG_TEMP_BOUND = 80.0
# Box-Muller on the learner RNG's 24-bit uniforms draws |z| <= sqrt(-2 ln 2^-24) ~ 5.77.
NOISE_BOUND = 6.0
# The arrays of an env state that are not per env: the MuJoCo Warp env's global state (its
# curriculum and metric sums, envs.g1.warp.walk_warp; tests/runner/test_warp_runs.py resumes one).
GLOBAL_ENV_ARRAYS = ("penalty_scale", "mean_episode_length", "sums")
# Values of the replay rows read at a time (a walk-sized ring is GBs, memory-mapped).
_CHUNK_ROWS = 1 << 13

F32, F64, I64 = torch.float32, torch.float64, torch.int64


class _RefusedError(Exception):
    """What is wrong with one restored value (the caller adds the file)."""


@dataclass(frozen=True)
class Spec:
    """What a run's tensor is: its shape, dtype, range [low, high] and whether it counts."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    low: float
    high: float
    what: str
    whole: bool = False
    checked: bool = True  # False: shape and dtype only (the last cycle's metric sums)


def _weights(n: int, what: str) -> Spec:
    return Spec((n,), F32, -MAX_ABS_STATE, MAX_ABS_STATE, what)


def _count(dtype: torch.dtype, high: float = MAX_COUNT, what: str = "a count") -> Spec:
    return Spec((), dtype, 0.0, high, what, whole=True)


def learner_specs(cfg: LearnerConfig, dims: tuple[int, int, int], num_envs: int) -> dict[str, Spec]:
    """Every tensor of a learner state of `cfg`'s sizes for `dims` (obs, critic obs, action)
    and `num_envs` envs, by the name its state_dict gives it."""
    obs, critic_obs, action = dims
    _, actor_p, actor_b = actor_layouts(
        obs, action, cfg.actor_hidden_dim, cfg.actor_num_blocks, cfg.expansion
    )
    _, critic_p, critic_b = critic_layouts(
        critic_obs + action,
        cfg.critic_hidden_dim,
        cfg.critic_num_blocks,
        cfg.expansion,
        cfg.num_atoms,
    )
    specs: dict[str, Spec] = {}
    for net, params, buffers in (
        ("actor", actor_p, actor_b),
        ("critic", critic_p, critic_b),
        ("target", critic_p, critic_b),
    ):
        specs[f"{net}.params"] = _weights(params.numel, "weights")
        specs[f"{net}.buffers"] = _weights(buffers.numel, "BatchNorm statistics")
    temp = temperature_layout(cfg.temp_init).numel
    specs["temperature.log_temp"] = Spec(
        (temp,), F32, -LOG_TEMP_BOUND, LOG_TEMP_BOUND, "log temperature"
    )
    for net, n in (("actor", actor_p.numel), ("critic", critic_p.numel), ("temperature", temp)):
        moments = "Adam moments"
        specs[f"{net}.adam.exp_avg"] = Spec((n,), F32, -MAX_ABS_STATE, MAX_ABS_STATE, moments)
        specs[f"{net}.adam.exp_avg_sq"] = Spec((n,), F32, 0.0, MAX_ABS_STATE, moments)
        specs[f"{net}.adam.step"] = _count(F32)
    for net in ("critic", "actor"):
        specs[f"{net}.sched_step"] = _count(F32)
    specs["metrics"] = Spec((len(METRICS),), F32, -math.inf, math.inf, "metrics", checked=False)
    specs["reward.returns"] = Spec((num_envs,), F32, -MAX_ABS_STATE, MAX_ABS_STATE, "returns")
    specs["reward.returns_abs_max"] = Spec((), F32, 0.0, MAX_ABS_STATE, "reward statistics")
    specs["reward.mean"] = Spec((), F64, -MAX_ABS_STATE, MAX_ABS_STATE, "reward statistics")
    specs["reward.var"] = Spec((), F64, 0.0, MAX_ABS_STATE**2, "reward statistics")
    specs["reward.count"] = Spec((), F64, 0.0, MAX_COUNT, "a count")
    specs["rng.key"] = _count(I64, 2.0**32 - 1, "a 32-bit key")
    specs["rng.counter"] = _count(I64)
    specs["explore.noise"] = Spec((num_envs, action), F32, -NOISE_BOUND, NOISE_BOUND, "noise")
    for name in ("count", "repeat"):
        specs[f"explore.{name}"] = _count(I64, float(cfg.zeta_max), "a repeat count")
    return specs


# ---------------------------------------------------------------------------- values
def _shown(values: torch.Tensor) -> str:
    first = float(values.reshape(-1)[0])
    return f"{first:g}" if values.numel() == 1 else f"{first:g} (and {values.numel() - 1} more)"


def _out_of_range(
    name: str, t: torch.Tensor, low: float, high: float, what: str, non_finite_ok: bool = False
) -> None:
    """_RefusedError naming `name` when a value of `t` is outside [low, high], or NaN / inf
    (unless `non_finite_ok`: rows a run may hold, see the module docstring)."""
    values = t.detach()
    if values.dtype not in (torch.float32, torch.float64):
        values = values.double()  # integers exactly; float16 / bfloat16 widened
    finite = torch.isfinite(values)
    if not bool(finite.all()):
        if not non_finite_ok:
            bad = int((~finite).sum())
            raise _RefusedError(f"{name} holds {bad} non-finite values ({what})")
        values = torch.where(finite, values, torch.zeros((), dtype=values.dtype))
    if values.numel() == 0:
        return
    if low == -high and float(values.abs().max()) > high:
        raise _RefusedError(
            f"{name} holds {float(values.abs().max()):.3g}, past any run's {what} (|x| <= {high:g})"
        )
    if bool((values < low).any()):
        raise _RefusedError(f"{name}={_shown(values[values < low])} must be >= {low:g} ({what})")
    if bool((values > high).any()):
        raise _RefusedError(f"{name} holds {_shown(values[values > high])}, past {high:g} ({what})")


def _check_tensor(name: str, t: Any, spec: Spec) -> None:
    if not isinstance(t, torch.Tensor):
        raise _RefusedError(f"{name} is a {type(t).__name__}, not a tensor")
    if tuple(t.shape) != spec.shape:
        raise _RefusedError(
            f"its config does not match its learner tensors: {name} is "
            f"{_kind(t.dtype, tuple(t.shape))}, its config's is {_kind(spec.dtype, spec.shape)} "
            f"({spec.what})"
        )
    if t.dtype != spec.dtype:
        raise _RefusedError(
            f"{name} is {_kind(t.dtype, tuple(t.shape))}, a run's is "
            f"{_kind(spec.dtype, spec.shape)} ({spec.what})"
        )
    if not spec.checked:
        return
    values = t.detach().double()
    if spec.whole:
        bad = ~torch.isfinite(values) | (values < spec.low) | (values > spec.high)
        bad |= values != values.round()
        if bool(bad.any()):
            raise _RefusedError(
                f"{name}={_shown(values[bad])} must be a whole number in [{spec.low:g}, "
                f"{spec.high:g}] ({spec.what})"
            )
        return
    _out_of_range(name, t, spec.low, spec.high, spec.what)


def _kind(dtype: Any, shape: tuple[int, ...]) -> str:
    return f"{str(dtype).removeprefix('torch.')} {list(shape)}"


# ---------------------------------------------------------------------------- parts
def check_learner(tensors: dict[str, Any], specs: dict[str, Spec], where: str = "learner") -> None:
    """Every tensor of a learner state against `specs` (learner_specs); _RefusedError naming the
    first that differs, and every missing or unexpected name."""
    missing = sorted(set(specs) - set(tensors))
    unexpected = sorted(set(tensors) - set(specs))
    if missing or unexpected:
        raise _RefusedError(
            f"its {where} state is not one of a run of its config: "
            + "; ".join(
                part
                for part in (
                    f"no {', '.join(missing[:4])}" if missing else "",
                    f"unexpected {', '.join(unexpected[:4])}" if unexpected else "",
                )
                if part
            )
        )
    for name, spec in specs.items():
        _check_tensor(f"{where}.{name}", tensors[name], spec)


def check_replay(replay: Any, rows: RowLayout, capacity: int) -> None:
    """The replay ring's stored rows, cursor and count (None: a learner-only checkpoint)."""
    if replay is None:
        return
    storage = replay.get("storage") if isinstance(replay, dict) else None
    if not isinstance(storage, torch.Tensor) or storage.dim() != 2:
        raise _RefusedError("its replay holds no [rows, width] tensor")
    count, cursor = replay.get("count"), replay.get("cursor")
    if count != storage.shape[0] or type(cursor) is not int or not 0 <= cursor <= count:
        raise _RefusedError(
            f"replay count={count!r}, cursor={cursor!r} do not fit its {storage.shape[0]} stored "
            "rows"
        )
    if storage.dtype != F32 or storage.shape[1] != rows.width or count > capacity:
        raise _RefusedError(
            f"replay.storage is {_kind(storage.dtype, tuple(storage.shape))}, a run's holds "
            f"float32 rows of width {rows.width}, at most {capacity} (replay.replay_buffer_n x "
            "run.num_envs)"
        )
    a, b = rows.span("actions")
    flags = [rows.span(name)[0] for name in ("terminated", "truncated")]
    for start in range(0, count, _CHUNK_ROWS):
        chunk = storage[start : start + _CHUNK_ROWS]
        where = f"replay rows {start}..{start + chunk.shape[0] - 1}"
        _out_of_range(where, chunk, -MAX_ABS_STATE, MAX_ABS_STATE, "stored transitions", True)
        _out_of_range(f"{where} (actions)", chunk[:, a:b], -1.0, 1.0, "actions")
        flag = chunk[:, flags]
        if bool(((flag != 0) & (flag != 1)).any()):
            raise _RefusedError(f"{where} (terminated, truncated) hold flags other than 0 and 1")


def _array(value: Any) -> torch.Tensor | None:
    """`value` as a tensor when it is a numeric array (numpy or torch), else None."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray | np.generic) and np.asarray(value).dtype.kind in "biuf":
        return torch.from_numpy(np.ascontiguousarray(value))
    return None


def _rows(name: str, value: Any, num_envs: int, width: int | None) -> None:
    t = _array(value)
    shape = (num_envs,) if width is None else (num_envs, width)
    if t is None or tuple(t.shape) != shape:
        got = "no array" if t is None else _kind(t.dtype, tuple(t.shape))
        raise _RefusedError(f"{name} is {got}, a run's is {list(shape)} (one row per env)")


def check_staging(staging: Any, rows: RowLayout, num_envs: int) -> None:
    """The collector's current obs, critic obs and dones (None: a learner-only checkpoint)."""
    if staging is None:
        return
    if not isinstance(staging, dict):
        raise _RefusedError(f"its staging is a {type(staging).__name__}, not a mapping")
    for key, width in (("obs", rows.obs_dim), ("critic_obs", rows.critic_obs_dim), ("dones", None)):
        _rows(f"staging.{key}", staging.get(key), num_envs, width)
        t = _array(staging[key])
        assert t is not None
        if t.dtype != F32:
            raise _RefusedError(
                f"staging.{key} is {_kind(t.dtype, tuple(t.shape))}, a run's is float32"
            )
        _out_of_range(f"staging.{key}", t, -MAX_ABS_STATE, MAX_ABS_STATE, "observations", True)


def _floats(tree: Any, where: str) -> list[tuple[str, torch.Tensor]]:
    """(name, tensor) of every floating-point array in nested mappings / lists."""
    if isinstance(tree, dict):
        return [x for k, v in tree.items() for x in _floats(v, f"{where}.{k}")]
    if isinstance(tree, list | tuple):
        return [x for i, v in enumerate(tree) for x in _floats(v, f"{where}[{i}]")]
    t = _array(tree)
    return [(where, t)] if t is not None and t.is_floating_point() else []


def _per_env_rows(env: dict[str, Any], num_envs: int) -> None:
    """The arrays of an env state that says its `num_envs`: one row per env in every array at
    its top level and in its `physics` (the G1 envs, the Gymnasium adapter), but the globals."""
    physics = env.get("physics")
    parts = [("env", env), *([("env.physics", physics)] if isinstance(physics, dict) else [])]
    for where, part in parts:
        for key, value in part.items():
            t = _array(value)
            if t is None or t.dim() == 0 or key in GLOBAL_ENV_ARRAYS or t.shape[0] == num_envs:
                continue
            raise _RefusedError(
                f"{where}.{key} is {_kind(t.dtype, tuple(t.shape))}, a run's holds one row per "
                f"env ({num_envs})"
            )


def check_env_state(env: Any, rows: RowLayout, num_envs: int) -> None:
    """An env's state: for run.num_envs envs, every float finite and within MAX_ABS_STATE
    (None: a learner-only checkpoint; the env's own set_state knows the rest of its layout)."""
    if env is None:
        return
    if not isinstance(env, dict):
        raise _RefusedError(f"its env state is a {type(env).__name__}, not a mapping")
    if "num_envs" in env:
        if env["num_envs"] != num_envs:
            raise _RefusedError(
                f"its env state is for num_envs={env['num_envs']!r} envs, its config's "
                f"run.num_envs is {num_envs}"
            )
        _per_env_rows(env, num_envs)
    for key, width in (("obs", rows.obs_dim), ("critic_obs", rows.critic_obs_dim)):
        if key in env:
            _rows(f"env.{key}", env[key], num_envs, width)
    for name, t in _floats(env, "env"):
        _out_of_range(name, t, -MAX_ABS_STATE, MAX_ABS_STATE, "env state", True)


# ---------------------------------------------------------------------------- the checkpoint
def check_restored(path: Path, payload: dict[str, Any], error: type[Exception]) -> None:
    """Every restored tensor of `payload` (the checkpoint at `path`) against what a run of its
    own config holds; `error` (one line naming the file and the value) when one is not."""
    config = payload.get("config")
    if not isinstance(config, dict):
        raise error(f"{path}: it holds no config, so its tensors cannot be checked")
    try:
        cfg = acting_config(payload)
    except (ConfigError, ValueError) as err:
        raise error(f"{path}: its config is not valid here: {err}") from None
    learner = payload["learner"]
    obs, critic_obs, action = (int(d) for d in learner["dims"])  # runner.checkpoint.check_payload
    dims = (obs, critic_obs, action)
    rows, n = RowLayout(*dims), cfg.run.num_envs
    try:
        check_learner(learner["tensors"], learner_specs(cfg.learner, dims, n))
        check_replay(payload.get("replay"), rows, cfg.replay_capacity)
        check_staging(payload.get("staging"), rows, n)
        check_env_state(payload.get("env"), rows, n)
    except _RefusedError as err:
        raise error(f"{path}: {err}") from None
