"""Compile every fused kernel (learner/kernels) for an H100 / H200 (sm_90) ahead of time, on any
machine: Triton's CUDA backend lowers it to PTX and a cubin without a GPU. Run as a script in a
process without TRITON_INTERPRET (tests/learner/test_kernel_compile.py); prints one line per
kernel and exits 1 if any fails."""

from __future__ import annotations

import os
import sys

if os.environ.get("TRITON_INTERPRET") == "1":
    raise SystemExit("run without TRITON_INTERPRET: the interpreter's kernels do not compile")

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from flashsac_bench.learner.kernels import categorical, optimizer  # noqa: E402

F32, I32 = "*fp32", "*i32"


def _signature(names_types: str) -> dict[str, str]:
    return dict(item.split(":") for item in names_types.split())


KERNELS = [
    (
        f"adam_project HAS_TARGET={has_target}",
        optimizer.adam_project_kernel,
        _signature(
            f"p_ptr:{F32} g_ptr:{F32} m_ptr:{F32} v_ptr:{F32} t_ptr:{F32} out_p_ptr:{F32} "
            f"out_m_ptr:{F32} out_v_ptr:{F32} out_t_ptr:{F32} rows_ptr:{I32} consts_ptr:{F32} "
            f"step_size_ptr:{F32} bc2_sqrt_ptr:{F32} ok_ptr:{F32} numel:i32 one_minus_beta1:fp32 "
            "beta2:fp32 one_minus_beta2:fp32 eps:fp32 tau:fp32 HAS_TARGET:constexpr "
            "BLOCK:constexpr"
        ),
        {"HAS_TARGET": has_target, "BLOCK": optimizer.BLOCK},
    )
    for has_target in (True, False)
] + [
    (
        "td_target",
        categorical.td_target_kernel,
        _signature(
            f"logits_ptr:{F32} stride_e:i32 stride_b:i32 support_ptr:{F32} rewards_ptr:{F32} "
            f"bootstrap_ptr:{F32} bonus_ptr:{F32} out_ptr:{F32} K:i32 gamma:fp32 v_min:fp32 "
            "v_max:fp32 dz:fp32 MEMBERS:constexpr BLOCK_K:constexpr CHUNK:constexpr"
        ),
        {"MEMBERS": 2, "BLOCK_K": categorical.BLOCK_K, "CHUNK": categorical.CHUNK},
    ),
    (
        "cross_entropy",
        categorical.cross_entropy_kernel,
        _signature(
            f"logits_ptr:{F32} stride_e:i32 stride_b:i32 target_ptr:{F32} support_ptr:{F32} "
            f"ce_ptr:{F32} q_ptr:{F32} dce_ptr:{F32} dq_ptr:{F32} B:i32 K:i32 BLOCK_K:constexpr"
        ),
        {"BLOCK_K": categorical.BLOCK_K},
    ),
]


def main() -> int:
    target = GPUTarget("cuda", 90, 32)
    failed = 0
    for name, kernel, signature, constexprs in KERNELS:
        try:
            compiled = triton.compile(
                ASTSource(kernel, signature, constexprs),
                target=target,
                options={"num_warps": 4, "enable_fp_fusion": False},  # as the launches build
            )
        except Exception as err:  # noqa: BLE001 - report every kernel, then fail
            failed += 1
            print(f"FAIL {name}: {type(err).__name__}: {err}")
        else:
            print(f"ok {name}: {len(compiled.asm['cubin'])} bytes of sm_90 cubin")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
