"""Robustness of a learned gait: conditions no training run saw, evaluated (never trained).

    nominal        the evaluation as it is (the main rollout of `evaluate`: not run again)
    push           at episode step `push_step` the pelvis's linear velocity changes by
                   `push_velocity` (m/s, world frame): an impulse of mass x delta-v
    mass_minus20   every link's mass and inertia x 0.8
    mass_plus20    every link's mass and inertia x 1.2
    command_edges  fixed commands at the edges of the training ranges, one axis at a time
                   (vx low / high, vy low / high, wz low / high), as many episodes each

Every condition but nominal runs in a fresh env with the evaluation's seed, so it starts from
the very states, commands and noise of the nominal rollout (command_edges: but its commands),
and differences come from the condition alone. The env hooks: G1WalkFlat.set_perturbations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.envs.contract.api import TaskEnv

CONDITIONS = ("nominal", "push", "mass_minus20", "mass_plus20", "command_edges")
MASS_SCALES = {"mass_minus20": 0.8, "mass_plus20": 1.2}


def condition_names(value: Any) -> list[str]:
    """The `robustness` option as a list of names: true / "all": every condition; false, None
    or []: none; a name or a list of names (in the order given)."""
    if value is None or value is False:
        return []
    if value is True or value == "all":
        return list(CONDITIONS)
    names = [value] if isinstance(value, str) else list(value)
    unknown = [str(n) for n in names if n not in CONDITIONS]
    if unknown:
        raise ConfigError(
            f"robustness: unknown condition {', '.join(unknown)}; available: "
            f"{', '.join(CONDITIONS)} (or true for all)"
        )
    return list(dict.fromkeys(names))  # a name given twice runs once


@dataclass(frozen=True)
class Condition:
    name: str
    mass_scale: float = 1.0
    push_step: int | None = None
    push_velocity: tuple[float, ...] | None = None
    commands: tuple[tuple[float, float, float], ...] | None = None  # cycled over the envs

    def perturbation(self) -> dict[str, Any]:
        """What eval.json records about the condition."""
        out: dict[str, Any] = {"mass_scale": self.mass_scale}
        if self.push_step is not None:
            out.update(push_step=self.push_step, push_velocity=list(self.push_velocity or ()))
        if self.commands is not None:
            out["commands"] = [list(c) for c in self.commands]
        return out


def make_condition(
    name: str, task_cfg: Any, push_step: int, push_velocity: list[float]
) -> Condition:
    if name == "push":
        return Condition(name, push_step=push_step, push_velocity=tuple(push_velocity))
    if name in MASS_SCALES:
        return Condition(name, mass_scale=MASS_SCALES[name])
    if name == "command_edges":
        return Condition(name, commands=edge_commands(task_cfg.commands))
    return Condition(name)


def edge_commands(ranges: Any) -> tuple[tuple[float, float, float], ...]:
    """(vx, vy, wz) at each end of each training range, the other two at 0. A planar command
    inside the dead zone is zeroed, as training zeroes it (the policy never saw it walking)."""
    out: list[tuple[float, float, float]] = []
    for axis, key in enumerate(("vx", "vy", "wz")):
        for bound in getattr(ranges, key)[::-1]:  # high first: the usual direction of travel
            command = [0.0, 0.0, 0.0]
            command[axis] = float(bound)
            if axis < 2 and abs(bound) <= ranges.dead_zone:
                command[axis] = 0.0
            if tuple(command) not in out:
                out.append(tuple(command))  # type: ignore[arg-type]
    return tuple(out)  # type: ignore[return-value]


def env_layout(cond: Condition, episodes: int, num_envs: int) -> tuple[int, int]:
    """(episodes, envs) of a condition. command_edges: the same number of episodes for every
    edge command (each env keeps one command), so both are rounded up to multiples of them."""
    if cond.commands is None:
        return episodes, min(num_envs, episodes)
    k = len(cond.commands)
    total = k * math.ceil(episodes / k)
    return total, k * max(1, min(num_envs, total) // k)


def apply_condition(env: Any, cond: Condition) -> None:
    """Set the condition's perturbations on a fresh env (they act from its next reset)."""
    if not isinstance(env, TaskEnv):
        raise ConfigError(
            f"robustness condition {cond.name} needs an env with set_perturbations "
            f"(G1 Walk Flat), not {type(env).__name__}"
        )
    commands = None
    if cond.commands is not None:
        edges = np.asarray(cond.commands, dtype=np.float64)
        commands = edges[np.arange(env.num_envs) % len(edges)]
    env.set_perturbations(
        mass_scale=cond.mass_scale,
        push_step=cond.push_step,
        push_velocity=None if cond.push_velocity is None else list(cond.push_velocity),
        commands=commands,
    )


def summarize(cond: Condition, episodes: list[dict[str, Any]], full_length: int) -> dict[str, Any]:
    """eval.json's record of one condition: the headline numbers, then every episode."""
    out: dict[str, Any] = {"perturbation": cond.perturbation(), **_headline(episodes, full_length)}
    if cond.push_step is not None:
        # An episode that ended before the push step never felt it.
        out["pushed_episodes"] = sum(e["length"] >= cond.push_step for e in episodes)
    if cond.commands is not None:
        out["by_command"] = [
            {"command": list(c), **_headline(mine, full_length)}
            for c in cond.commands
            if (mine := [e for e in episodes if _same_command(e, c)])
        ]
    out["per_episode"] = episodes  # as eval.json's top-level "episodes"
    return out


def _headline(episodes: list[dict[str, Any]], full_length: int) -> dict[str, Any]:
    def mean(key: str) -> float | None:
        vals = [float(e[key]) for e in episodes if key in e]
        return float(np.mean(vals)) if vals else None

    return {
        "episodes": len(episodes),
        # lasted all steps: reached the time limit without falling
        "full_length_frac": float(
            np.mean([not e["terminated"] and e["length"] >= full_length for e in episodes])
        ),
        "terminated_frac": float(np.mean([e["terminated"] for e in episodes])),
        "episode_length_mean": mean("length"),
        "return_mean": mean("return"),
        "lin_vel_tracking_frac_mean": mean("tracking_lin_vel_frac_mean"),
        "ang_vel_tracking_frac_mean": mean("tracking_ang_vel_frac_mean"),
        "lin_vel_error_mean": mean("lin_vel_error_mean"),
        "ang_vel_error_mean": mean("ang_vel_error_mean"),
    }


def _same_command(episode: dict[str, Any], command: tuple[float, ...]) -> bool:
    # The recorded command is the float32 critic observation's.
    got = episode.get("command")
    return got is not None and np.allclose(got, command, atol=1e-5)


def report_line(name: str, rec: dict[str, Any]) -> str:
    """One console line per condition."""
    frac = rec["lin_vel_tracking_frac_mean"]
    tracking = "-" if frac is None else f"{100 * frac:.1f}%"
    return (
        f"  {name}: {rec['episodes']} episodes, {100 * rec['full_length_frac']:.0f}% full "
        f"length, length {rec['episode_length_mean']:.1f}, lin-vel tracking {tracking}"
    )
