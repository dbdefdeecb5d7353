from __future__ import annotations

from dataclasses import dataclass

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.values import require_finite, require_positive, require_range

# Network widths and depths past these are no network this project can allocate (and a typo).
MAX_HIDDEN_DIM = 65536
MAX_BLOCKS = 64
MAX_ATOMS = 4096


@dataclass
class LearnerConfig:
    """FlashSAC hyperparameters; defaults are UniLab's G1 FlashSAC owner values (unilab.md §3.2)."""

    actor_hidden_dim: int = 128
    actor_num_blocks: int = 2
    critic_hidden_dim: int = 256
    critic_num_blocks: int = 2
    # Inverted-bottleneck expansion of every residual block (hard-coded 4 upstream).
    expansion: int = 4
    num_atoms: int = 101
    v_min: float = -5.0
    v_max: float = 5.0
    gamma: float = 0.97
    tau: float = 0.01
    lr_init: float = 3e-4
    lr_peak: float = 3e-4
    lr_end: float = 1.5e-4
    lr_warmup_steps: int = 0
    lr_decay_steps: int = 500_000
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    temp_init: float = 0.01
    temp_target_sigma: float = 0.15
    # None: derived as 0.5 * |A| * ln(2*pi*e*sigma^2).
    target_entropy: float | None = None
    zeta_mu: float = 2.0
    zeta_max: int = 16
    normalize_reward: bool = True
    reward_g_max: float = 5.0
    bn_momentum: float = 0.01
    bn_eps: float = 1e-5
    rms_eps: float = 1e-6

    def __post_init__(self) -> None:
        require_finite(self, "learner.")
        for key in ("actor_hidden_dim", "critic_hidden_dim", "expansion", "zeta_max"):
            if getattr(self, key) < 1:
                raise ConfigError(f"learner.{key} must be >= 1, got {getattr(self, key)}")
        for key, top in (
            ("actor_hidden_dim", MAX_HIDDEN_DIM),
            ("critic_hidden_dim", MAX_HIDDEN_DIM),
            ("expansion", 64),
            ("actor_num_blocks", MAX_BLOCKS),
            ("critic_num_blocks", MAX_BLOCKS),
            ("num_atoms", MAX_ATOMS),
        ):
            if getattr(self, key) > top:
                raise ConfigError(f"learner.{key} must be <= {top}, got {getattr(self, key)}")
        for key in ("actor_num_blocks", "critic_num_blocks", "lr_warmup_steps"):
            if getattr(self, key) < 0:
                raise ConfigError(f"learner.{key} must be >= 0, got {getattr(self, key)}")
        if self.num_atoms < 2:
            raise ConfigError(f"learner.num_atoms must be >= 2, got {self.num_atoms}")
        if not self.v_min < self.v_max:
            raise ConfigError(f"learner.v_min ({self.v_min}) must be < v_max ({self.v_max})")
        if not 0.0 < self.gamma <= 1.0:
            raise ConfigError(f"learner.gamma must be in (0, 1], got {self.gamma}")
        if not 0.0 < self.tau <= 1.0:
            raise ConfigError(f"learner.tau must be in (0, 1], got {self.tau}")
        if self.lr_decay_steps <= self.lr_warmup_steps:
            raise ConfigError("learner.lr_decay_steps must be > learner.lr_warmup_steps")
        if min(self.lr_init, self.lr_peak, self.lr_end) < 0 or self.lr_peak == 0:
            raise ConfigError("learner learning rates must be >= 0 and lr_peak > 0")
        if self.temp_init <= 0:
            raise ConfigError(f"learner.temp_init must be > 0, got {self.temp_init}")
        if self.zeta_mu <= 0:
            raise ConfigError(f"learner.zeta_mu must be > 0, got {self.zeta_mu}")
        if self.reward_g_max <= 0:
            raise ConfigError(f"learner.reward_g_max must be > 0, got {self.reward_g_max}")
        # Adam: betas are decay rates, eps keeps the step's division away from zero.
        require_range("learner.adam_beta1", self.adam_beta1, 0.0, 1.0, closed="[)")
        require_range("learner.adam_beta2", self.adam_beta2, 0.0, 1.0, closed="[)")
        require_positive("learner.adam_eps", self.adam_eps)
        # The target entropy takes log(sigma^2): sigma must be > 0.
        require_positive("learner.temp_target_sigma", self.temp_target_sigma)
        require_range("learner.bn_momentum", self.bn_momentum, 0.0, 1.0)
        require_positive("learner.bn_eps", self.bn_eps)
        require_positive("learner.rms_eps", self.rms_eps)
