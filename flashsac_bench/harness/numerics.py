"""Do the fast paths compute the same numbers as eager? (scripts/validate_numerics.py)

Every path starts from the same initial state and the same replay contents; the counter RNG
makes them sample the same rows and noise (checked: the gathered batches must be bit-equal).
After each iteration the metrics are compared; at the end every state tensor (parameters, BN
buffers, Adam moments and steps, target, schedules) is compared pairwise against eager.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from flashsac_bench.harness.synthetic import Setup, build_learner
from flashsac_bench.learner.learner import FlashSACLearner


@dataclass(frozen=True)
class Tolerance:
    """Max |a - b| allowed on state tensors, and max relative metric difference.

    fp32 (matmul precision "highest"): the paths differ only in reduction order / fusion, so
    differences stay near fp32 rounding (1e-7 relative) amplified by up to 80 optimizer steps;
    1e-4 absolute on unit-norm weights (entries ~1e-1) leaves a wide margin yet catches any real
    divergence (a wrong sign or a missed step moves weights by >= lr = 3e-4 per step).
    bf16 matmuls round operands to 8 mantissa bits (2^-9 ~ 2e-3 relative): a one-ulp different
    rounding in one path propagates, so 5e-3 absolute / 2e-2 relative.
    cudagraph vs compile replays the very same kernels: it must match to fp32 rounding at most.
    """

    state_abs: float
    metric_rel: float

    @staticmethod
    def for_pair(dtype: str, pair: tuple[str, str], precision: str) -> Tolerance:
        if set(pair) == {"compile", "cudagraph"}:
            return Tolerance(1e-6, 1e-6)
        if dtype == "float32" and precision == "highest":
            return Tolerance(1e-4, 1e-4)
        if dtype == "float32":  # TF32 matmuls (10-bit mantissa)
            return Tolerance(2e-3, 1e-2)
        return Tolerance(5e-3, 2e-2)


def _max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    if a.dtype == torch.bool or not a.is_floating_point():
        return float((a.long() - b.long()).abs().max().item()) if a.numel() else 0.0
    return float((a.double() - b.double()).abs().max().item()) if a.numel() else 0.0


def _metric_rel(a: dict[str, float], b: dict[str, float]) -> float:
    worst = 0.0
    for k in a:
        x, y = a[k], b[k]
        if not (math.isfinite(x) and math.isfinite(y)):
            return math.inf
        worst = max(worst, abs(x - y) / max(abs(x), abs(y), 1e-3))
    return worst


def compare_paths(
    setup: Setup,
    paths: list[str],
    iterations: int,
    precision: str = "highest",
    compile_mode: str = "default",
) -> dict:
    torch.set_float32_matmul_precision(precision)
    learners: dict[str, FlashSACLearner] = {p: build_learner(setup, p, compile_mode) for p in paths}
    ref = learners[paths[0]]
    for learner in learners.values():
        learner.warmup()
    metrics: dict[str, list[dict[str, float]]] = {p: [] for p in paths}
    batches_equal = True
    for _ in range(iterations):
        for p, learner in learners.items():
            learner.update()
            metrics[p].append(learner.read_metrics())
            if learner is not ref:
                batches_equal &= torch.equal(learner.buffers.batch, ref.buffers.batch)
    report: dict = {"setup": asdict(setup), "iterations": iterations, "precision": precision}
    report["setup"]["dims"] = list(asdict(setup.dims).values())
    report["batches_bit_equal"] = bool(batches_equal)
    report["final_metrics"] = {p: metrics[p][-1] for p in paths}
    report["steps"] = {
        p: {
            "critic_adam": learners[p].state.critic_adam.step.item(),
            "actor_adam": learners[p].state.actor_adam.step.item(),
            "temperature_adam": learners[p].state.temp_adam.step.item(),
            "critic_sched": learners[p].state.critic_sched_step.item(),
            "actor_sched": learners[p].state.actor_sched_step.item(),
        }
        for p in paths
    }
    n_critic, n_actor = ref.n_critic * iterations, ref.n_actor * iterations
    expected_steps = {
        "critic_adam": n_critic,
        "actor_adam": n_actor,
        "temperature_adam": n_actor,
        "critic_sched": n_critic,
        "actor_sched": n_actor,
    }
    checks: list[dict] = [
        {"check": "same sampled batches", "ok": bool(batches_equal)},
        {
            "check": "optimizer and schedule step counts exact",
            "ok": all(report["steps"][p] == expected_steps for p in paths),
        },
        {
            "check": "metrics finite",
            "ok": all(math.isfinite(v) for p in paths for m in metrics[p] for v in m.values()),
        },
    ]
    pairs = []
    for i, a in enumerate(paths):
        for b in paths[i + 1 :]:
            tol = Tolerance.for_pair(setup.dtype, (a, b), precision)
            ta, tb = learners[a].state.tensors(), learners[b].state.tensors()
            per_tensor = {k: _max_abs(ta[k], tb[k]) for k in ta if k != "metrics"}
            groups = {
                "parameters": max(per_tensor[k] for k in per_tensor if k.endswith("params")),
                "bn_buffers": max(per_tensor[k] for k in per_tensor if k.endswith("buffers")),
                "optimizer_state": max(per_tensor[k] for k in per_tensor if ".adam." in k),
                "temperature": per_tensor["temperature.log_temp"],
            }
            metric_rel = max(_metric_rel(x, y) for x, y in zip(metrics[a], metrics[b], strict=True))
            ok = max(groups.values()) <= tol.state_abs and metric_rel <= tol.metric_rel
            pairs.append(
                {
                    "pair": [a, b],
                    "max_abs": groups,
                    "metric_max_rel": metric_rel,
                    "tolerance": asdict(tol),
                    "per_tensor_max_abs": per_tensor,
                    "ok": bool(ok),
                }
            )
            checks.append({"check": f"{a} vs {b} within tolerance", "ok": bool(ok)})
    report["pairs"] = pairs
    report["checks"] = checks
    report["ok"] = all(c["ok"] for c in checks)
    return report
