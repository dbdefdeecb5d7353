"""Learner-only cycle timing (scripts/bench_learner.py), ours and optionally upstream's.

One "cycle" = one iteration's updates (u2: 2 critic + 1 actor + 1 temperature; u8: 8 + 4 + 4)
on synthetic G1-shaped batches. Each timed cycle is wall clock from the call to the end of a
device synchronize: launch overhead and every per-iteration host step are inside the number.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from flashsac_bench.learner.learner import FlashSACLearner
from lab.bench.synthetic import Setup, build_learner


@dataclass
class Timing:
    samples_ms: list[float]
    cold_start_s: float

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def p90_ms(self) -> float:
        return percentile(self.samples_ms, 90)

    @property
    def mean_ms(self) -> float:
        return statistics.fmean(self.samples_ms)


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default)."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_calls(
    fn: Callable[[], None], device: torch.device, cycles: int, warmup: int
) -> list[float]:
    for _ in range(warmup):
        fn()
    _sync(device)
    out = []
    for _ in range(cycles):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def time_ours(setup: Setup, path: str, cycles: int, warmup: int):
    learner = build_learner(setup, path)
    t0 = time.perf_counter()
    learner.warmup()
    _sync(learner.device)
    cold = time.perf_counter() - t0
    if getattr(learner.path, "fallback", False):  # a run goes on uncaptured; a benchmark cannot
        raise RuntimeError("the CUDA graph capture of the cycle failed (see the warning above)")
    samples = time_calls(learner.update, learner.device, cycles, warmup)
    return Timing(samples, cold), learner


def unilab_batches(learner: FlashSACLearner, count: int) -> list[dict[str, torch.Tensor]]:
    """Large batches for upstream, gathered from OUR ring with our sampler: same data."""
    out = []
    for _ in range(count):
        batch = learner.path.cycle.sample().batch
        cols = learner.statics.rows.split(batch)
        out.append(
            {
                "obs": cols["obs"].contiguous(),
                "actions": cols["actions"].contiguous(),
                "rewards": cols["rewards"].contiguous(),
                "next_obs": cols["next_obs"].contiguous(),
                "dones": torch.maximum(cols["terminated"], cols["truncated"]).contiguous(),
                "truncated": cols["truncated"].contiguous(),
                "critic": cols["critic_obs"].contiguous(),
                "next_critic": cols["next_critic_obs"].contiguous(),
            }
        )
    return out


def time_unilab(
    setup: Setup, ours: FlashSACLearner, cycles: int, warmup: int, eager: bool = False
) -> Timing:
    """unilab-rl 1.4.15's cycle on our batches: its whole-cycle graph with default Inductor
    options (its shipped max-autotune-no-cudagraphs mode autotunes for longer than a benchmark
    call may take; docs/results.md says what differs from unilab-rl as it ships), or with
    `eager` its own eager mode (`use_compile=False`)."""
    t0 = time.perf_counter()
    cycle = unilab_cycle(setup, ours, eager)
    cycle()
    _sync(ours.device)
    cold = time.perf_counter() - t0
    return Timing(time_calls(cycle, ours.device, cycles, warmup), cold)


def unilab_cycle(setup: Setup, ours: FlashSACLearner, eager: bool) -> Callable[[], None]:
    """One call = one unilab-rl 1.4.15 cycle (and its metrics read to the host) on our networks'
    sizes and constants and on batches gathered from our ring: its whole-cycle graph, or with
    `eager` its own eager mode (`use_compile=False`: its per-update methods in its cycle's
    order, as its update_cycle runs them without the graph)."""
    import uni_rl.algos.flash_sac.learner as upstream

    original = upstream.get_torch_compile_for_cuda

    def default_inductor(device, warn=True):
        fn = original(device, warn=warn)
        if fn is None:
            return None

        def compile_default(f, **kwargs):
            if kwargs.get("mode") == "max-autotune-no-cudagraphs":
                kwargs.pop("mode")
                kwargs["options"] = {"triton.cudagraphs": False}
            return fn(f, **kwargs)

        return compile_default

    upstream.get_torch_compile_for_cuda = default_inductor
    try:
        cfg = ours.cfg  # the same networks and constants as ours
        learner = upstream.FlashSACLearner(
            setup.dims.obs,
            setup.dims.action,
            setup.dims.critic_obs,
            device=str(ours.device),
            gamma=cfg.gamma,
            tau=cfg.tau,
            actor_hidden_dim=cfg.actor_hidden_dim,
            critic_hidden_dim=cfg.critic_hidden_dim,
            actor_num_blocks=cfg.actor_num_blocks,
            critic_num_blocks=cfg.critic_num_blocks,
            num_atoms=cfg.num_atoms,
            critic_min_v=cfg.v_min,
            critic_max_v=cfg.v_max,
            use_amp=setup.dtype == "bfloat16",
            amp_dtype="bf16",
            **({"use_compile": False} if eager else {}),
        )
    finally:
        upstream.get_torch_compile_for_cuda = original
    # Allocate the reward statistics before capture (else upstream recaptures).
    g = torch.Generator(device=ours.device).manual_seed(3)
    rewards = torch.randn(4, setup.num_envs, device=ours.device, generator=g)
    learner.update_reward_stats(rewards, torch.zeros_like(rewards))
    batches = unilab_batches(ours, 4)
    kwargs: dict[str, Any] = dict(
        updates_per_step=setup.updates_per_step,
        policy_frequency=setup.policy_frequency,
        target_frequency=1,
        policy_before_critic=False,
    )
    run = learner._run_update_cycle_core if eager else learner.update_cycle
    i = [0]

    def one() -> None:
        i[0] += 1
        run(batches[i[0] % len(batches)], **kwargs)
        learner.read_deferred_cycle_metrics()

    return one


def scaling_series(rows: list[dict]) -> tuple[int, dict[str, list[tuple[int, float]]]]:
    """(u, {label: [(batch size, median ms), ...]}): one curve per implementation / path /
    options, sorted by batch size, for the most common updates_per_step u among the rows."""
    counts: dict[int, int] = {}
    for r in rows:
        counts[r["updates_per_step"]] = counts.get(r["updates_per_step"], 0) + 1
    u = max(counts, key=counts.__getitem__)
    series: dict[str, list[tuple[int, float]]] = {}
    for r in rows:
        if r["updates_per_step"] != u:
            continue
        opts = ",".join(f"{k}={v}" for k, v in (r.get("path_options") or {}).items())
        name = f"unilab-rl 1.4.15 {r['path']}" if r["impl"] != "ours" else f"ours {r['path']}"
        label = f"{name} ({opts})" if opts else name
        series.setdefault(label, []).append((r["batch_size"], r["median_ms"]))
    return u, {k: sorted(v) for k, v in sorted(series.items())}


def plot_scaling(rows: list[dict], path) -> None:
    """Log-log plot of the learner cycle's median time against the batch size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    u, series = scaling_series(rows)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, points in series.items():
        xs, ys = zip(*points, strict=True)
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    sizes = sorted({b for points in series.values() for b, _ in points})
    ax.set_xticks(sizes, [str(b) for b in sizes])
    ax.set_xlabel("batch size B")
    ax.set_ylabel("median ms per update cycle")
    meta = rows[0] if rows else {}
    ax.set_title(f"learner cycle u{u}, {meta.get('device', '')} ({meta.get('date', '')})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
