"""Synthetic G1-shaped learners and replay contents for validation and benchmarks."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import torch

from flashsac_bench.config.hardware import HardwareConfig
from flashsac_bench.config.learner import LearnerConfig
from flashsac_bench.config.path import PathConfig
from flashsac_bench.config.update import UpdateConfig
from flashsac_bench.learner.learner import Dims, FlashSACLearner

G1_DIMS = Dims(obs=98, critic_obs=101, action=29)
TINY: dict[str, Any] = dict(actor_hidden_dim=16, critic_hidden_dim=24, num_atoms=21)


@dataclass(frozen=True)
class Setup:
    """Everything that must be identical across the paths being compared."""

    batch_size: int
    updates_per_step: int
    policy_frequency: int = 2
    num_envs: int = 256
    capacity_batches: int = 8  # ring capacity = capacity_batches * updates * batch rows
    dims: Dims = G1_DIMS
    tiny: bool = False
    dtype: str = "float32"
    device: str = "cpu"
    seed: int = 1
    gemm_align: int = 0  # 0: the hardware default (8 on CUDA, 1 on the CPU)
    # Extra PathConfig fields for every path, e.g. (("inductor_options", {...}),).
    path_options: tuple[tuple[str, object], ...] = ()

    @property
    def resolved_gemm_align(self) -> int:
        """The runner's rule (hardware.gemm_align) for this device."""
        return HardwareConfig(device=self.device, gemm_align=self.gemm_align).resolved_gemm_align()

    @property
    def capacity(self) -> int:
        return self.capacity_batches * self.updates_per_step * self.batch_size


def build_learner(
    setup: Setup,
    path: str,
    inductor_options: dict | None = None,
) -> FlashSACLearner:
    cfg = LearnerConfig(**TINY) if setup.tiny else LearnerConfig()
    options: dict[str, Any] = dict(setup.path_options)
    # --path-options may carry inductor_options too; the explicit argument wins key by key
    inductor = {**options.pop("inductor_options", {}), **(inductor_options or {})}
    learner = FlashSACLearner(
        cfg,
        UpdateConfig(
            updates_per_step=setup.updates_per_step, policy_frequency=setup.policy_frequency
        ),
        setup.dims,
        num_envs=setup.num_envs,
        batch_size=setup.batch_size,
        replay_capacity=setup.capacity,
        device=setup.device,
        dtype=setup.dtype,
        path=PathConfig(
            name=path,
            inductor_options=inductor,
            **options,
        ),
        seed=setup.seed,
        gemm_align=setup.resolved_gemm_align,
    )
    fill_replay(learner, setup)
    return learner


def add_setup_arguments(ap: argparse.ArgumentParser) -> None:
    """The synthetic setup's flags shared by the validators that run on CPU or GPU
    (validate_numerics.py, validate_replay_stability.py); setup_from_args reads them."""
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--num-envs", type=int, default=256)
    ap.add_argument("--tiny", action="store_true", help="small networks (fast CPU compile)")
    add_path_arguments(ap)


def add_path_arguments(ap: argparse.ArgumentParser) -> None:
    """--path-options and --gemm-align, as Setup's path_options and gemm_align take them."""
    ap.add_argument(
        "--path-options",
        default="",
        help="PathConfig fields for every path, e.g. inductor_options.max_autotune=true",
    )
    ap.add_argument(
        "--gemm-align", type=int, default=0, help="matmul dim padding (0: 8 on CUDA, 1 on CPU)"
    )


def setup_from_args(args: argparse.Namespace, updates_per_step: int) -> Setup:
    return Setup(
        batch_size=args.batch_size,
        updates_per_step=updates_per_step,
        num_envs=args.num_envs,
        tiny=args.tiny,
        dtype=args.dtype,
        device=args.device,
        gemm_align=args.gemm_align,
        path_options=parse_options(args.path_options),
    )


def parse_options(text: str) -> tuple[tuple[str, object], ...]:
    """'name="compile"' -> (("name", "compile"),): PathConfig fields; values JSON.

    `inductor_options.KEY=VALUE` items (KEY may hold dots: `triton.max_tiles`) gather into one
    ("inductor_options", {KEY: VALUE, ...}) pair, so one variant can set several of them.
    """
    import json

    out: dict[str, object] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"expected KEY=VALUE, got {item!r}")
        key, parsed = key.strip(), json.loads(value)
        group, dot, sub = key.partition(".")
        if dot and group == "inductor_options":
            inductor = out.setdefault("inductor_options", {})
            if not isinstance(inductor, dict):
                raise ValueError(f"inductor_options given twice in {text!r}")
            inductor[sub] = parsed
        elif key in out:
            raise ValueError(f"{key} given twice in {text!r}")
        else:
            out[key] = parsed
    return tuple(out.items())


def fill_replay(learner: FlashSACLearner, setup: Setup, seed: int = 1234) -> None:
    """Fill the ring completely, env step by env step, updating reward statistics as a run does.

    Terminations (2%) and truncations (0.5%, exclusive) exercise both bootstrap branches.
    """
    g = torch.Generator().manual_seed(seed)
    d, n = setup.dims, setup.num_envs
    rows = learner.statics.rows
    steps = -(-setup.capacity // n)
    for _ in range(steps):
        slab = torch.randn(n, rows.width, generator=g)
        a, b = rows.span("actions")
        slab[:, a:b] = torch.rand(n, d.action, generator=g) * 2 - 1
        u = torch.rand(n, generator=g)
        terminated = (u < 0.02).float()
        truncated = ((u >= 0.02) & (u < 0.025)).float()
        rewards = torch.randn(n, generator=g) + 0.5
        for name, col in (
            ("rewards", rewards),
            ("terminated", terminated),
            ("truncated", truncated),
        ):
            slab[:, rows.span(name)[0]] = col
        learner.ring.insert_rows(slab.to(learner.device))
        dones = torch.maximum(terminated, truncated)
        learner.update_reward_stats(rewards.to(learner.device), dones.to(learner.device))
