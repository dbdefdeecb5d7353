"""The trained actor as a deployable module: obs -> tanh(mean), nothing else.

`DeterministicActor` holds the actor's flat parameter and BatchNorm-statistics vectors and calls
`learner.networks.actor_policy` (BN running statistics): the very function
`FlashSACLearner.act_deterministic` uses, so an exported policy cannot drift from the trained
one by a re-implementation. All network structure is Python-level constant, so a trace of
`forward` is the whole computation (TorchScript, ONNX: flashsac_bench.cli.export).
"""

from __future__ import annotations

import torch

from flashsac_bench.learner.layout import Layout
from flashsac_bench.learner.learner import FlashSACLearner
from flashsac_bench.learner.networks import NetSpec, NormConfig, actor_policy


class DeterministicActor(torch.nn.Module):
    """obs [B, obs_dim] float32 -> tanh(mean) [B, action_dim] in [-1, 1]."""

    actor_params: torch.Tensor  # registered buffers (below)
    actor_bn_stats: torch.Tensor

    def __init__(
        self,
        spec: NetSpec,
        param_layout: Layout,
        buffer_layout: Layout,
        norm: NormConfig,
        params: torch.Tensor,
        bn_stats: torch.Tensor,
        mm_dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.spec, self.param_layout, self.buffer_layout = spec, param_layout, buffer_layout
        self.norm, self.mm_dtype = norm, mm_dtype
        # Buffers, not Parameters: saved with the module, never trained.
        self.register_buffer("actor_params", params.detach().clone().float())
        self.register_buffer("actor_bn_stats", bn_stats.detach().clone().float())

    @classmethod
    def from_learner(
        cls, learner: FlashSACLearner, device: str | torch.device = "cpu"
    ) -> DeterministicActor:
        """A copy of the learner's current actor (same matmul dtype as the learner's acting)."""
        st, s = learner.statics, learner.state
        module = cls(
            st.actor_spec,
            st.actor_param_layout,
            st.actor_buffer_layout,
            st.norm,
            s.actor_params,
            s.actor_buffers,
            st.mm_dtype,
        )
        return module.to(device).eval()

    @property
    def obs_dim(self) -> int:
        return self.spec.in_dim

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        mean, _ = actor_policy(
            self.param_layout,
            self.buffer_layout,
            self.actor_params,
            self.actor_bn_stats,
            obs,
            self.spec,
            self.norm,
            self.mm_dtype,
        )
        return torch.tanh(mean)
