"""What one update cycle must cost at least: matmul FLOPs and memory traffic, counted op by op.

Runs the eager cycle under a dispatch mode (any device, the CPU included) and records, per aten
op: matmul FLOPs (2 * M * N * K per product), and bytes read + written by every other op
(inputs and outputs at their element size, views excluded). With a device's matmul rate and
copy bandwidth that gives two floors for the cycle -- compute and unfused memory traffic -- to
set beside the measured time and the profiler's kernel count (docs/benchmarks.md).

The byte count is an upper bound on what a fused implementation must move (fusion keeps
intermediates in registers) and a lower bound on what the eager path moves (no cache effects).
Matmul operands are counted in the learner's matmul dtype only when the run uses it.

It also names the matmuls cuBLAS cannot run on its Hopper kernels: an operand whose address,
leading stride, N or K is not a multiple of 16 bytes (`misaligned_matmuls`). Addresses
follow from the flat layouts' offsets, so the CPU finds the same ones as the GPU.
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


GEMM_ALIGN_BYTES = 16  # what cuBLAS's Hopper kernels need of addresses, strides and dims


def _operands(name: str, args: tuple) -> tuple[torch.Tensor, torch.Tensor]:
    return (args[1], args[2]) if name in ("addmm", "baddbmm") else (args[0], args[1])


def misalignment(name: str, args: tuple) -> str | None:
    """None, or what keeps this matmul off 16-byte-aligned GEMM kernels, e.g.
    "mm [256x512]@[512x128] bf16: B address +8 B"."""
    a, b = _operands(name, args)
    k, n = a.shape[-1], b.shape[-1]
    unit = max(1, GEMM_ALIGN_BYTES // a.element_size())
    # M only matters as a leading dimension, i.e. through a stride (checked below)
    why = [f"{d}={v}" for d, v in (("N", n), ("K", k)) if v % unit]
    for label, t in (("A", a), ("B", b)):
        off = t.data_ptr() % GEMM_ALIGN_BYTES
        if off:
            why.append(f"{label} address +{off} B")
        lead = [st for st in t.stride()[-2:] if st != 1]
        if any(st % unit for st in lead):
            why.append(f"{label} stride {tuple(t.stride())}")
    if not why:
        return None
    shape = lambda t: "x".join(map(str, t.shape))  # noqa: E731
    dtype = str(a.dtype).removeprefix("torch.")
    return f"{name} [{shape(a)}]@[{shape(b)}] {dtype}: {', '.join(why)}"


def matmul_flops(name: str, args: tuple) -> int:
    """2*M*N*K of mm / bmm (+ addmm / baddbmm: the product only)."""
    a, b = _operands(name, args)
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
    misaligned: Counter = field(default_factory=Counter)  # misalignment() -> launches

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
            why = misalignment(name, args)
            if why:
                c.misaligned[why] += 1
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
    path_options: tuple[tuple[str, object], ...] = (),
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
                path_options=path_options,
            )
            learner = build_learner(setup, "eager")
            cost = cycle_cost(learner)
            floors = cost.floors_ms(tflops, bandwidth)
            row = {
                "batch_size": b,
                "updates_per_step": u,
                "dtype": dtype,
                "gemm_align": gemm_align,
                "path_options": dict(path_options),
                "aten_ops": cost.ops,
                "matmuls": cost.matmuls,
                "matmul_gflop": round(cost.matmul_flops / 1e9, 3),
                "matmul_mb": round(cost.matmul_bytes / 1e6, 1),
                "other_mb": round(cost.other_bytes / 1e6, 1),
                "matmul_floor_ms": round(floors["matmul_ms"], 4),
                "traffic_floor_ms": round(floors["traffic_ms"], 4),
                "top_ops": dict(cost.by_op.most_common(12)),
                "misaligned_matmuls": dict(cost.misaligned.most_common()),
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
            for why, launches in cost.misaligned.most_common():
                print(f"  misaligned matmul, {launches} per cycle: {why}")
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        report = {"argv": sys.argv, "tflops": tflops, "bandwidth_tb_s": bandwidth}
        output.write_text(json.dumps({**report, "rows": rows}, indent=2) + "\n")
    return 0
