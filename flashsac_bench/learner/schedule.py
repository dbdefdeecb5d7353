"""Learning-rate schedule: linear warmup from init to peak, then cosine from peak to end.

Computed from a step-count tensor on the device, so the cudagraph path advances it inside the
graph. The Python twin `lr_at` is the reference for tests and logs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class LRSchedule:
    init: float
    peak: float
    end: float
    warmup_steps: int
    decay_steps: int  # total length, warmup included (optax convention)

    def lr_at(self, step: int) -> float:
        if self.warmup_steps > 0 and step < self.warmup_steps:
            return self.init + (self.peak - self.init) * step / self.warmup_steps
        p = min(max((step - self.warmup_steps) / (self.decay_steps - self.warmup_steps), 0.0), 1.0)
        return self.end + (self.peak - self.end) * 0.5 * (1.0 + math.cos(math.pi * p))

    def lr_tensor(self, step: torch.Tensor) -> torch.Tensor:
        """Same as lr_at for a float32 0-d step tensor (no host sync)."""
        span = float(self.decay_steps - self.warmup_steps)
        p = ((step - self.warmup_steps) / span).clamp(0.0, 1.0)
        cosine = self.end + (self.peak - self.end) * 0.5 * (1.0 + torch.cos(math.pi * p))
        if self.warmup_steps == 0:
            return cosine
        warm = self.init + (self.peak - self.init) * step / self.warmup_steps
        return torch.where(step < self.warmup_steps, warm, cosine)
