from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flashsac_bench.config.errors import ConfigError

PATHS = ("eager", "compile", "cudagraph")

# The compile path's Inductor CUDA graph trees when path.inductor_cudagraphs is left unset
# (null): on, the winner of the side-by-side on the H200 (docs/benchmarks.md, "Learner, part
# two"); false restores the plain compiled calls.
COMPILE_INDUCTOR_CUDAGRAPHS_ON_CUDA = True
# The two exact levers (same bits on every path: CPU tests) when left unset (null), on CUDA;
# off on the CPU, where they would only add compile time. Measured side by side on the H200:
# docs/benchmarks.md, "Learner, part three".
COMPILE_RNG_ON_CUDA = True
PROJECTION_GATHER_ON_CUDA = True


@dataclass
class PathConfig:
    """How the (single) update-cycle definition is executed (group `path`)."""

    name: str = "eager"
    # torch.compile mode for the compile / cudagraph paths. "default" keeps cold start bounded;
    # "max-autotune*" modes are accepted, but their autotuning can outlast a whole run
    # (upstream's did: docs/benchmarks.md).
    compile_mode: str = "default"
    # Let Inductor wrap its own kernels in CUDA graphs (graph trees; compile path only -- off
    # inside the cudagraph path's outer capture, where nested graphs are impossible). null:
    # COMPILE_INDUCTOR_CUDAGRAPHS_ON_CUDA on CUDA, off on the CPU (resolved_inductor_cudagraphs).
    inductor_cudagraphs: bool | None = None
    # Compiled steps are pure (they return the next state; the copies into the persistent
    # tensors run after them, outside the compiled graph): what Inductor's CUDA graphs need.
    # false: steps that write the state inside the compiled graph (saves the copies; Inductor
    # then skips its CUDA graphs on the compile path). null: pure on the compile path, writing
    # on the cudagraph path, whose own capture does not mind (resolved_functional_steps).
    functional_steps: bool | None = None
    # Adam + finite gate + weight projection + Polyak as ONE Triton kernel per network after
    # the compiled step (learner.triton_tail; on the CPU the same math as torch ops). Off: it
    # was slower on the H200 on both compiled paths (docs/benchmarks.md, "Learner part two").
    fused_optimizer: bool = False
    # With fused_optimizer: the compiled step calls the kernel itself, so Inductor launches it
    # inside its graph, instead of eagerly after the step. Needs steps that write the state
    # (functional_steps resolved false: the cudagraph path's default), since the kernel writes
    # parameters, moments and target in place. Off: the B=256 u8 captured cycle took 4.59 ms
    # against 4.06 ms without the fused tail on the H200 (docs/benchmarks.md, "Machine start I").
    fused_optimizer_in_graph: bool = False
    # The critic update's target and online critic forwards as ONE 4-member ensemble forward
    # on their common 2B input (half the forward launches; the batched backward then spans the
    # target members too). Same values and gradients (CPU tests). Off: slower on the H200.
    joint_critic_forward: bool = False
    # The input BN's batch statistics of the critic update computed once for both members of
    # both critics (they all normalize the same 2B input). Same values (CPU tests). Off: no
    # gain on the H200.
    shared_input_stats: bool = False
    # cudagraph path: on a capture failure warn once and run the compile path instead.
    fallback_to_compile: bool = True
    # CUDA only: Inductor's horizontal fusion of independent kernels into one launch. On: the
    # cycle is launch-bound, and it cut launches and cycle time on the H200 (docs/benchmarks.md,
    # "Where the time goes").
    combo_kernels: bool = True
    # compile / cudagraph paths: the counter RNG's integer hash as compiled code (one kernel
    # per draw instead of one ATen launch per integer op of the hash). Exact integer
    # arithmetic: the same bits as eager (CPU tests). null: COMPILE_RNG_ON_CUDA on CUDA, off
    # on the CPU (resolved_compile_rng).
    compile_rng: bool | None = None
    # The weight projection as one gathered row-factor product that Inductor can fuse into the
    # gated writes, instead of a concatenation of per-group pieces (learner.projection;
    # bit-identical). null: PROJECTION_GATHER_ON_CUDA on CUDA, off on the CPU.
    projection_gather: bool | None = None
    # Start every group of the flat parameter layouts at a multiple of hardware.gemm_align
    # elements, so that every low-precision weight view is 16-byte aligned (learner.layout;
    # at gemm_align 8 the G1 actor's two block w2 weights are 8 bytes off without it, and
    # their 32 matmuls per B=256 u8 cycle run on cuBLAS's align2 kernels). The same function:
    # on the CPU the same bits for every named parameter (tests); on the GPU those matmuls
    # change kernels (the point), so their summation order may change, as with gemm_align,
    # and a resume keeps the checkpoint's setting. Evaluation and export re-lay a checkpoint
    # of either layout by name. Off: on the H200 it is 0.4-1.3% faster and passed numerics,
    # 1000 replays and a g1_walk_h200 walk, but with it the GPU tests' small learner found
    # the captured cycle and the compile path 2^-16 apart (bit-identical without it, and with
    # it when cuBLAS runs without a workspace; docs/benchmarks.md, "Machine start J").
    aligned_layout: bool = False
    # cudagraph path: capture the compiled steps (true) or the eager steps (false). False
    # skips Dynamo and Inductor altogether: the cold start is one eager warm-up and the
    # capture, and the replayed cycle is bit-identical to the eager path's (same kernels, same
    # order), but holds more, unfused kernels: on the H200 the B=2048 u8 cycle took 40.9 ms
    # against 8.2 ms, longer than g1_walk_h200's env step, so it saves ~7 s of setup and loses
    # more per walk (docs/benchmarks.md, "Machine start G"). For setups without Inductor/Triton.
    # path=compile always compiles (an error otherwise); path=eager runs its steps as they are.
    compiled_steps: bool = True
    # Extra torch._inductor options for both compiled paths (override anything above).
    inductor_options: dict[str, Any] = field(default_factory=dict)

    def resolved_inductor_cudagraphs(self, device: str) -> bool:
        """Whether the compile path uses Inductor's CUDA graphs on `device` ('cuda', 'cpu')."""
        if self.name != "compile" or not str(device).startswith("cuda"):
            return False
        if self.inductor_cudagraphs is None:
            return COMPILE_INDUCTOR_CUDAGRAPHS_ON_CUDA
        return self.inductor_cudagraphs

    def resolved_functional_steps(self) -> bool:
        """Whether the compiled steps are pure (commit outside) or write the state themselves."""
        if self.functional_steps is None:
            return self.name != "cudagraph"
        return self.functional_steps

    def resolved_compile_rng(self, device: str) -> bool:
        """Whether the compile / cudagraph paths run the RNG's hash compiled on `device`."""
        if self.name == "eager" or (not self.compiled_steps and self.compile_rng is None):
            return False  # eager steps (path.compiled_steps=false) keep to eager unless asked
        return _set_or_cuda(self.compile_rng, COMPILE_RNG_ON_CUDA, device)

    def resolved_projection_gather(self, device: str) -> bool:
        """Whether the weight projection is the gathered product on `device`."""
        return _set_or_cuda(self.projection_gather, PROJECTION_GATHER_ON_CUDA, device)

    def __post_init__(self) -> None:
        if self.name not in PATHS:
            raise ConfigError(f"path.name must be one of {PATHS}, got {self.name!r}")
        modes = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
        if self.compile_mode not in modes:
            raise ConfigError(
                f"path.compile_mode must be one of {modes}, got {self.compile_mode!r}"
            )
        if self.name == "compile" and not self.compiled_steps:
            raise ConfigError(
                "path=compile always compiles its steps; path.compiled_steps=false is for "
                "path=cudagraph (capturing the eager steps), or use path=eager"
            )
        if self.fused_optimizer_in_graph:
            self._check_fused_optimizer_in_graph()
        if self.name == "cudagraph" and self.compile_mode in ("reduce-overhead", "max-autotune"):
            raise ConfigError(
                "path=cudagraph captures the whole cycle itself; "
                f"compile_mode={self.compile_mode!r} "
                "would nest Inductor CUDA graphs inside it. Use 'default' or "
                "'max-autotune-no-cudagraphs'."
            )

    def _check_fused_optimizer_in_graph(self) -> None:
        why = None
        if not self.fused_optimizer:
            why = "it places the fused tail; set path.fused_optimizer=true too"
        elif self.name == "eager" or not self.compiled_steps:
            why = "only compiled steps have a graph to call it from (path=compile or cudagraph)"
        elif self.resolved_functional_steps():
            why = (
                "the kernel writes the state in place, so the steps must write it too "
                "(path.functional_steps=false; the cudagraph path's default)"
            )
        if why:
            raise ConfigError(f"path.fused_optimizer_in_graph: {why}")


def _set_or_cuda(value: bool | None, on_cuda: bool, device: str) -> bool:
    """An explicit setting as given; unset (null): `on_cuda` on CUDA, off elsewhere."""
    if value is None:
        return on_cuda and str(device).startswith("cuda")
    return value
