"""How long a run would take on the CPU: a per-env-step / per-update cost model.

The CLI warns up front when a CPU run would take long (a bare `python -m flashsac_bench` is
sized for a GPU) and names the smoke preset instead. The model:

  env step of one iteration   t_env   = num_envs / (ENV_STEPS_PER_S * env_threads ** 0.9)
  update cycle                t_learn = ops * OP_OVERHEAD_S
                                        + batch * row_macs * S_PER_MAC / learner_threads ** 0.6
  iteration                   max(t_env, t_learn) when the env and learner threads fit the
                              cores (they overlap), else t_env + t_learn (they share them)
  run                         warm-up iterations (random actions, no update) * t_env
                              + learning iterations * t_iter, capped by run.time_limit_s

ops = critic + actor updates per iteration. row_macs = multiply-adds per batch row of one cycle,
counted from the network widths (critic update: actor on the next obs + the 2-member critic
forward and backward on 2B rows; actor update: actor forward / backward on 2B rows + critic
forward and input gradient); it sets the relative cost of other widths and update ratios.

The constants below are fitted to a small CPU machine; the commands and measurements they come
from are in docs/results.md ("CPU"). It is an estimate for one warning, not a benchmark: other
CPUs differ, so it only decides whether to warn.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from flashsac_bench.config.backend import MujocoConfig
from flashsac_bench.config.root import Config
from flashsac_bench.envs.tasks import task_of

ENV_STEPS_PER_S = 4700.0
ENV_THREAD_EXPONENT = 0.9
S_PER_MAC = 7.95e-11
OP_OVERHEAD_S = 5.0e-3
LEARNER_THREAD_EXPONENT = 0.6
# G1 Walk Flat (flashsac_bench/envs/g1/cpu/walk_flat.py): policy obs, critic obs, actions.
G1_DIMS = (98, 101, 29)
# Warn when a CPU run is estimated to take longer than this.
WARN_AFTER_S = 600.0


def trunk_macs(in_dim: int, hidden: int, blocks: int, expansion: int, out: int) -> int:
    """Multiply-adds per row of one forward: embed, inverted-bottleneck blocks, head."""
    return in_dim * hidden + blocks * 2 * expansion * hidden * hidden + hidden * out


def cycle_row_macs(config: Config, dims: tuple[int, int, int] = G1_DIMS) -> int:
    obs, critic_obs, action = dims
    lc = config.learner
    actor = trunk_macs(obs, lc.actor_hidden_dim, lc.actor_num_blocks, lc.expansion, 2 * action)
    critic = 2 * trunk_macs(
        critic_obs + action, lc.critic_hidden_dim, lc.critic_num_blocks, lc.expansion, lc.num_atoms
    )
    critic_update = actor + 6 * critic
    actor_update = 6 * actor + 2 * critic
    return config.update.critic_updates * critic_update + config.update.actor_updates * actor_update


@dataclass(frozen=True)
class Estimate:
    total_s: float
    env_s: float  # per iteration
    learn_s: float  # per learning iteration
    iter_s: float
    warmup_iterations: int
    iterations: int

    def text(self) -> str:
        return duration_text(self.total_s)


def duration_text(t: float) -> str:
    if t >= 3600:
        return f"{t / 3600:.1f} h"
    return f"{t / 60:.0f} min" if t >= 60 else f"{t:.0f} s"


def estimate_cpu_run(config: Config, cores: int | None = None) -> Estimate:
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    cores = max(1, cores or 1)
    n = config.run.num_envs
    backend = config.backend
    threads = backend.resolved_num_threads(n) if isinstance(backend, MujocoConfig) else n
    env_threads = min(threads, cores)
    learner_threads = min(config.hardware.torch_threads or cores, cores)
    env_s = n / (ENV_STEPS_PER_S * env_threads**ENV_THREAD_EXPONENT)
    ops = config.update.critic_updates + config.update.actor_updates
    learn_s = ops * OP_OVERHEAD_S + (
        config.replay.batch_size
        * cycle_row_macs(config)
        * S_PER_MAC
        / learner_threads**LEARNER_THREAD_EXPONENT
    )
    fits = env_threads + learner_threads <= cores
    iter_s = max(env_s, learn_s) if fits else env_s + learn_s
    threshold_rows = max(config.replay.learning_starts * n, config.replay.batch_size)
    warmup = min(config.run.iterations, -(-threshold_rows // n))
    total = warmup * env_s + (config.run.iterations - warmup) * iter_s
    if config.run.time_limit_s is not None:
        total = min(total, config.run.time_limit_s)
    return Estimate(total, env_s, learn_s, iter_s, warmup, config.run.iterations)


def _estimated(config: Config, cores: int | None) -> Estimate | None:
    """The estimate of a CPU run of the G1 task, else None (a GPU run, or a task other than the
    G1, whose env cost the model was not fitted to)."""
    if config.hardware.resolved_device() != "cpu" or not task_of(config.task).estimates_cpu_runtime:
        return None
    return estimate_cpu_run(config, cores)


def _setting(c: Config, est: Estimate) -> str:
    return (
        f"{c.run.num_envs} envs, batch {c.replay.batch_size}, {c.update.name}, "
        f"{c.run.iterations} iterations, ~{est.iter_s:.1f} s per iteration"
    )


_WHY = (
    "by flashsac_bench/cli/runtime_estimate.py); the presets without +experiment are sized for "
    "a GPU. For a quick CPU {what} use +experiment=smoke"
)


def cpu_warning(config: Config, cores: int | None = None) -> str | None:
    """The up-front warning for a long CPU run, or None (a short one, or one the model does
    not cover)."""
    est = _estimated(config, cores)
    if est is None or est.total_s < WARN_AFTER_S:
        return None
    return (
        f"warning: this run would take about {est.text()} on the CPU ({_setting(config, est)} "
        + _WHY.format(what="run")
    )


def sweep_cpu_warning(configs: list[Config | None], cores: int | None = None) -> str | None:
    """The up-front warning for a sweep whose CPU jobs would take long in all: one line with
    the total of its jobs (the basic launcher runs them one after another) and the longest.
    configs[k]: job k's config (None: a job that will not run)."""
    estimates = [
        (k, c, e)
        for k, c in enumerate(configs)
        if c is not None and (e := _estimated(c, cores)) is not None
    ]
    total = sum(e.total_s for _, _, e in estimates)
    if total < WARN_AFTER_S:
        return None
    k, c, est = max(estimates, key=lambda kce: kce[2].total_s)
    return (
        f"warning: this sweep's {len(configs)} jobs would take about {duration_text(total)} "
        f"on the CPU in all (the longest, job {k}: {est.text()}; {_setting(c, est)} "
        + _WHY.format(what="sweep")
    )
