"""The cycle cost model's counting, by hand, and on a real (tiny) cycle."""

from __future__ import annotations

import pytest
import torch
from helpers import tiny_learner

from flashsac_bench.bench.cost_model import CostCounter, act_cost, cycle_cost, misalignment


def test_counts_matmul_flops_and_bytes_by_hand() -> None:
    a, b, x = torch.ones(4, 3), torch.ones(3, 5), torch.ones(10)
    rows, idx = torch.ones(6, 2), torch.tensor([0, 5, 5])
    with CostCounter() as counter:
        a @ b  # 2*4*5*3 = 120 FLOP; (12 + 15 + 20) * 4 bytes
        (x + x).view(2, 5)  # 3 * 40 bytes; the view is free
        torch.index_select(rows, 0, idx)  # 2 * 3 rows * 8 bytes + 3 * 8 index bytes
    c = counter.cost
    assert (c.ops, c.matmuls, c.matmul_flops) == (3, 1, 120)
    assert c.matmul_bytes == (12 + 15 + 20) * 4
    assert c.other_bytes == 3 * 40 + (2 * 3 * 8 + 3 * 8)
    floors = c.floors_ms(tflops=1e-9, tbytes_per_s=1e-9)  # 1 kFLOP/s, 1 kB/s
    assert floors["matmul_ms"] == pytest.approx(120.0)  # 120 FLOP at 1 kFLOP/s
    assert floors["traffic_ms"] == pytest.approx(c.matmul_bytes + c.other_bytes)


def test_cycle_cost_scales_with_the_batch_and_leaves_the_state_alone() -> None:
    learner = tiny_learner(updates_per_step=2)
    before = learner.state.snapshot()
    small = cycle_cost(learner)
    assert all(torch.equal(v, learner.state.tensors()[k]) for k, v in before.items())
    assert small.matmuls > 0 and small.ops > small.matmuls
    learner.batch_size *= 2  # the same ops on twice the rows: every product twice the FLOPs
    learner.buffers.batch = torch.zeros(
        2 * learner.buffers.batch.shape[0], learner.buffers.batch.shape[1]
    )
    double = cycle_cost(learner)
    assert double.matmuls == small.matmuls
    assert double.matmul_flops > 1.5 * small.matmul_flops


def test_act_cost_counts_the_policy_and_leaves_the_state_alone() -> None:
    learner = tiny_learner()
    before = learner.state.snapshot()
    act = act_cost(learner, 4)
    assert all(torch.equal(v, learner.state.tensors()[k]) for k, v in before.items())
    assert act.matmuls == 2 + 2 * learner.cfg.actor_num_blocks  # embed, blocks, head
    assert act.by_op["bitwise_xor"] > 0  # the exploration noise's hash


def test_names_the_matmuls_off_16_byte_alignment_by_hand() -> None:
    flat = torch.zeros(4 + 16 * 8 + 16 * 8, dtype=torch.bfloat16)  # bf16: 8 elements = 16 B
    x = torch.ones(4, 16, dtype=torch.bfloat16)
    aligned_w = flat[:128].view(16, 8)  # offset 0
    shifted_w = flat[4:132].view(16, 8)  # offset 4 elements = 8 bytes
    assert misalignment("mm", (x, aligned_w)) is None
    assert misalignment("mm", (x, shifted_w)) == "mm [4x16]@[16x8] bfloat16: B address +8 B"
    odd = torch.ones(16, 12, dtype=torch.bfloat16)  # N = 12: not a multiple of 8 elements
    assert misalignment("addmm", (torch.ones(12, dtype=torch.bfloat16), x, odd)) == (
        "addmm [4x16]@[16x12] bfloat16: N=12, B stride (12, 1)"
    )
    assert misalignment("mm", (torch.ones(4, 16), torch.ones(16, 4))) is None  # fp32: 4 = 16 B
    with CostCounter() as counter:
        x @ shifted_w
        x @ shifted_w
        x @ aligned_w
    assert dict(counter.cost.misaligned) == {"mm [4x16]@[16x8] bfloat16: B address +8 B": 2}


def test_aligned_layout_puts_every_g1_matmul_on_the_aligned_kernels() -> None:
    """path.aligned_layout: the G1 actor's block w2 views (8 bytes off in the grouped layout)
    start on 16-byte boundaries, and nothing else changes in the cycle's matmuls."""
    from flashsac_bench.bench.synthetic import Setup, build_learner

    def cost(options):
        setup = Setup(
            batch_size=16,
            updates_per_step=2,
            num_envs=16,
            capacity_batches=2,
            dtype="bfloat16",
            gemm_align=8,
            path_options=options,
        )
        return cycle_cost(build_learner(setup, "eager"))

    plain, packed = cost((("aligned_layout", False),)), cost((("aligned_layout", True),))
    assert plain.misaligned and all("B address +8 B" in why for why in plain.misaligned)
    assert not packed.misaligned
    assert (packed.matmuls, packed.matmul_flops) == (plain.matmuls, plain.matmul_flops)
