from __future__ import annotations

from dataclasses import dataclass

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.values import FLOAT_BOUND, INT_MAX, ranged, require_bounded

# Network widths and depths past these are no network this project can allocate (and a typo).
MAX_HIDDEN_DIM = 65536
MAX_BLOCKS = 64
MAX_ATOMS = 4096
MAX_EXPANSION = 64
# The exploration noise's repeat lengths (a pmf of this many entries per env and action).
MAX_ZETA = 1 << 16


@dataclass
class LearnerConfig:
    """FlashSAC hyperparameters; defaults are UniLab's G1 FlashSAC owner values (unilab-rl)."""

    actor_hidden_dim: int = ranged(128, low=1, high=MAX_HIDDEN_DIM)
    actor_num_blocks: int = ranged(2, low=0, high=MAX_BLOCKS)
    critic_hidden_dim: int = ranged(256, low=1, high=MAX_HIDDEN_DIM)
    critic_num_blocks: int = ranged(2, low=0, high=MAX_BLOCKS)
    # Inverted-bottleneck expansion of every residual block (hard-coded 4 upstream).
    expansion: int = ranged(4, low=1, high=MAX_EXPANSION)
    num_atoms: int = ranged(101, low=2, high=MAX_ATOMS)
    v_min: float = -5.0
    v_max: float = 5.0
    gamma: float = ranged(0.97, low=0.0, high=1.0, closed="(]")
    tau: float = ranged(0.01, low=0.0, high=1.0, closed="(]")
    # Adam's step sizes: past 1 no step is a step.
    lr_init: float = ranged(3e-4, low=0.0, high=1.0)
    lr_peak: float = ranged(3e-4, low=0.0, high=1.0, closed="(]")
    lr_end: float = ranged(1.5e-4, low=0.0, high=1.0)
    lr_warmup_steps: int = 0
    lr_decay_steps: int = ranged(500_000, low=1, high=INT_MAX)
    # Adam: betas are decay rates, eps keeps the step's division away from zero.
    adam_beta1: float = ranged(0.9, low=0.0, high=1.0, closed="[)")
    adam_beta2: float = ranged(0.999, low=0.0, high=1.0, closed="[)")
    adam_eps: float = ranged(1e-8, low=0.0, high=1.0, closed="(]")
    temp_init: float = ranged(0.01, low=0.0, high=FLOAT_BOUND, closed="(]")
    # The temperature's target entropy is that of a Gaussian of this std per action dimension,
    # 0.5 * |A| * ln(2*pi*e*sigma^2) (UniLab's one key for it): sigma must be > 0.
    temp_target_sigma: float = ranged(0.15, low=0.0, high=FLOAT_BOUND, closed="(]")
    zeta_mu: float = ranged(2.0, low=0.0, high=FLOAT_BOUND, closed="(]")
    zeta_max: int = ranged(16, low=1, high=MAX_ZETA)
    normalize_reward: bool = True
    reward_g_max: float = ranged(5.0, low=0.0, high=FLOAT_BOUND, closed="(]")
    bn_momentum: float = ranged(0.01, low=0.0, high=1.0)
    bn_eps: float = ranged(1e-5, low=0.0, high=1.0, closed="(]")
    rms_eps: float = ranged(1e-6, low=0.0, high=1.0, closed="(]")

    def __post_init__(self) -> None:
        require_bounded(self, "learner.")
        if not self.v_min < self.v_max:
            raise ConfigError(f"learner.v_min ({self.v_min}) must be < v_max ({self.v_max})")
        if self.lr_decay_steps <= self.lr_warmup_steps:
            raise ConfigError("learner.lr_decay_steps must be > learner.lr_warmup_steps")
