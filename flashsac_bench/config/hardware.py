from __future__ import annotations

from dataclasses import dataclass

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.values import ranged, require_bounded

# No float16: it needs a GradScaler, whose dynamic loss scale cannot live inside one captured
# update graph, and it changes the math; bfloat16 runs as fast on Ampere and Hopper.
DTYPES = ("auto", "float32", "bfloat16")
PRECISIONS = ("highest", "high", "medium")
MAX_THREADS = 4096
# Matmul dimensions are padded to multiples of this: past it, padding is most of a matmul.
MAX_GEMM_ALIGN = 256


@dataclass
class HardwareConfig:
    """Where and in which precision the learner runs (group `hardware`)."""

    name: str = "auto"
    # "auto": cuda when available, else cpu. Or "cpu", "cuda", "cuda:1", ...
    device: str = "auto"
    # Autocast dtype of the networks' matmuls. "auto": bfloat16 on CUDA, float32 on CPU.
    # Parameters, optimizer state and normalizer statistics are always float32.
    dtype: str = "auto"
    # torch.set_float32_matmul_precision (matters for float32 runs: "high" = TF32).
    matmul_precision: str = "highest"
    # torch.set_num_threads for the learner process; 0 leaves torch's default.
    torch_threads: int = ranged(0, low=0, high=MAX_THREADS)
    # Matmul dimensions are zero-padded to multiples of this (exact: padding adds zeros) so that
    # cuBLAS can use its aligned tensor-core kernels; 0 = auto: 8 on CUDA, 1 (none) on CPU.
    gemm_align: int = ranged(0, low=0, high=MAX_GEMM_ALIGN)

    def __post_init__(self) -> None:
        require_bounded(self, "hardware.")
        if self.dtype not in DTYPES:
            raise ConfigError(f"hardware.dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.matmul_precision not in PRECISIONS:
            raise ConfigError(
                f"hardware.matmul_precision must be one of {PRECISIONS}, "
                f"got {self.matmul_precision!r}"
            )
        dev = self.device
        if not (dev in ("auto", "cpu", "cuda") or (dev.startswith("cuda:") and dev[5:].isdigit())):
            raise ConfigError(f"hardware.device must be auto, cpu, cuda or cuda:N, got {dev!r}")

    def resolved_device(self) -> str:
        import torch

        if self.device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        return self.device

    def check_available(self) -> None:
        """Refuse a CUDA device that this process cannot use (a CPU-only torch, or cuda:N past
        the last GPU). Not part of __post_init__: a config for a GPU machine must still
        compose and validate on a CPU one (tests, --cfg job)."""
        import torch

        dev = self.resolved_device()
        if not dev.startswith("cuda"):
            return
        if not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else "no usable GPU"
            raise ConfigError(
                f"hardware.device={self.device} (hardware={self.name}) needs CUDA, but torch "
                f"{torch.__version__} sees no CUDA device ({build}); use hardware=cpu or "
                "hardware.device=auto"
            )
        index = int(dev.split(":", 1)[1]) if ":" in dev else 0
        count = torch.cuda.device_count()
        if index >= count:
            raise ConfigError(
                f"hardware.device={dev}: this machine has {count} CUDA device(s) "
                f"(cuda:0..cuda:{count - 1})"
            )

    def resolved_gemm_align(self) -> int:
        if self.gemm_align:
            return self.gemm_align
        return 8 if self.resolved_device().startswith("cuda") else 1

    def resolved_dtype(self) -> str:
        if self.dtype != "auto":
            return self.dtype
        return "bfloat16" if self.resolved_device().startswith("cuda") else "float32"
