"""What one update cycle must cost at least: matmul FLOPs and memory traffic, counted op by op.

Runs the eager cycle under a dispatch mode (any device, the CPU included) and records, per aten
op: matmul FLOPs (2 * M * N * K per product), and bytes read + written by every other op
(inputs and outputs at their element size, views excluded). With a device's matmul rate and
copy bandwidth that gives two floors for the cycle -- compute and unfused memory traffic -- to
set beside the measured time and the profiler's kernel count (docs/benchmarks.md).

The byte count is an upper bound on what a fused implementation must move (fusion keeps
intermediates in registers) and a lower bound on what the eager path moves (no cache effects).
Matmul operands are counted in the learner's matmul dtype only when the run uses it.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from flashsac_bench.bench.synthetic import Setup, build_learner

_MATMULS = {"mm", "bmm", "addmm", "baddbmm"}
_GATHERS = {"index_select"}  # (source, dim, index)
# Ops that only re-describe memory (no kernel, no traffic).
_VIEWS = {
    "view",
    "_unsafe_view",
    "reshape",
    "expand",
    "unsqueeze",
    "squeeze",
    "select",
    "slice",
    "narrow",
    "t",
    "transpose",
    "permute",
    "as_strided",
    "alias",
    "detach",
    "split",
    "unbind",
    "chunk",
    "lift_fresh",
}


def _tensors(tree) -> list[torch.Tensor]:
    out = []
    for x in tree if isinstance(tree, (list, tuple)) else [tree]:
        if isinstance(x, torch.Tensor):
            out.append(x)
        elif isinstance(x, (list, tuple)):
            out.extend(_tensors(x))
    return out


def _bytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def matmul_flops(name: str, args: tuple) -> int:
    """2*M*N*K of mm / bmm (+ addmm / baddbmm: the product only)."""
    a, b = (args[1], args[2]) if name in ("addmm", "baddbmm") else (args[0], args[1])
    batch = a.shape[0] if a.dim() == 3 else 1
    m, k = a.shape[-2:]
    n = b.shape[-1]
    return 2 * batch * m * n * k


@dataclass
class CycleCost:
    ops: int = 0  # aten ops that launch work (an eager kernel count proxy)
    matmuls: int = 0
    matmul_flops: int = 0
    other_bytes: int = 0  # read + written by non-matmul, non-view ops
    matmul_bytes: int = 0  # operands + results of the matmuls
    by_op: Counter = field(default_factory=Counter)

    def floors_ms(self, tflops: float, tbytes_per_s: float) -> dict[str, float]:
        return {
            "matmul_ms": self.matmul_flops / (tflops * 1e12) * 1e3,
            "traffic_ms": (self.other_bytes + self.matmul_bytes) / (tbytes_per_s * 1e12) * 1e3,
        }


class CostCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.cost = CycleCost()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name in _VIEWS:
            return out
        if name in _GATHERS:  # reads only the selected rows (+ the indices), not the source
            moved = 2 * sum(_bytes(t) for t in _tensors(out)) + _bytes(args[2])
        else:
            moved = sum(_bytes(t) for t in _tensors(list(args)) + _tensors(out))
        c = self.cost
        c.ops += 1
        c.by_op[name] += 1
        if name in _MATMULS:
            c.matmuls += 1
            c.matmul_flops += matmul_flops(name, args)
            c.matmul_bytes += moved
        else:
            c.other_bytes += moved
        return out


def cycle_cost(learner) -> CycleCost:
    """Cost of one eager update cycle of `learner` (its state is restored afterwards)."""
    snap = learner.state.snapshot()
    counter = CostCounter()
    with counter:
        learner.cycle(learner.critic_step, learner.actor_step)
    learner.state.restore(snap)
    return counter.cost


def act_cost(learner, num_envs: int) -> CycleCost:
    """Cost of one exploration act on num_envs zero observations (state restored)."""
    snap = learner.state.snapshot()
    obs = torch.zeros(num_envs, learner.dims.obs, device=learner.device)
    dones = torch.zeros(num_envs, device=learner.device)
    counter = CostCounter()
    with counter:
        learner.act(obs, dones)
    learner.state.restore(snap)
    return counter.cost


def cost_table(
    batch_sizes: list[int],
    updates: list[int],
    dtype: str,
    gemm_align: int,
    tflops: float,
    bandwidth: float,
    tiny: bool = False,
    output: Path | None = None,
) -> int:
    """scripts/cycle_cost.py: the cost and floors of one cycle (and of one act) per batch size
    and update ratio at `tflops` TFLOP/s and `bandwidth` TB/s; printed, and written to `output`."""
    rows = []
    for b in batch_sizes:
        for u in updates:
            setup = Setup(
                batch_size=b,
                updates_per_step=u,
                capacity_batches=2,
                tiny=tiny,
                dtype=dtype,
                device="cpu",
                gemm_align=gemm_align,
            )
            learner = build_learner(setup, "eager")
            cost = cycle_cost(learner)
            floors = cost.floors_ms(tflops, bandwidth)
            row = {
                "batch_size": b,
                "updates_per_step": u,
                "dtype": dtype,
                "gemm_align": gemm_align,
                "aten_ops": cost.ops,
                "matmuls": cost.matmuls,
                "matmul_gflop": round(cost.matmul_flops / 1e9, 3),
                "matmul_mb": round(cost.matmul_bytes / 1e6, 1),
                "other_mb": round(cost.other_bytes / 1e6, 1),
                "matmul_floor_ms": round(floors["matmul_ms"], 4),
                "traffic_floor_ms": round(floors["traffic_ms"], 4),
                "top_ops": dict(cost.by_op.most_common(12)),
            }
            act = act_cost(learner, setup.num_envs)  # the runner's per-iteration act
            row["act_aten_ops"] = act.ops
            row["act_top_ops"] = dict(act.by_op.most_common(10))
            rows.append(row)
            print(
                f"B={b:<5} u{u}: {cost.ops} aten ops ({cost.matmuls} matmuls), "
                f"{row['matmul_gflop']} GFLOP -> {row['matmul_floor_ms']:.3f} ms at "
                f"{tflops:g} TFLOP/s; {row['matmul_mb'] + row['other_mb']:.0f} MB moved "
                f"unfused -> {row['traffic_floor_ms']:.3f} ms at {bandwidth:g} TB/s",
                flush=True,
            )
            print(f"  act ({setup.num_envs} envs): {act.ops} aten ops {row['act_top_ops']}")
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        report = {"argv": sys.argv, "tflops": tflops, "bandwidth_tb_s": bandwidth}
        output.write_text(json.dumps({**report, "rows": rows}, indent=2) + "\n")
    return 0
