"""FlashSACLearner: the state, acting, checkpoints, and the ONE path object that runs the update
cycle.

The updates are defined once in learner.update (`critic_update`, `actor_update`), the cycle of
them in learner.cycle (`plan_cycle`, `Cycle`); how they execute (eager, compiled, captured)
is learner.paths. One critic update, by calls: `update()` -> `Path.run` -> `Cycle.run` ->
`Path.critic` -> `update.critic_update`, its result written by the path (`update.write`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from flashsac_bench.config.learner import LearnerConfig
from flashsac_bench.config.path import PathConfig
from flashsac_bench.config.update import UpdateConfig
from flashsac_bench.learner import paths
from flashsac_bench.learner.adam import AdamConfig, AdamState
from flashsac_bench.learner.cycle import Cycle, plan_cycle
from flashsac_bench.learner.distributional import target_entropy
from flashsac_bench.learner.exploration import STREAM_RANDOM_ACTION, ZetaNoise
from flashsac_bench.learner.networks import (
    NormConfig,
    actor_layouts,
    actor_policy,
    critic_layouts,
    temperature_layout,
)
from flashsac_bench.learner.projection import Projector
from flashsac_bench.learner.replay import ReplayRing, RowLayout, host_copy
from flashsac_bench.learner.reward_normalizer import RewardNormalizer
from flashsac_bench.learner.rng import CounterRNG
from flashsac_bench.learner.schedule import LRSchedule
from flashsac_bench.learner.state import (
    METRIC_INDEX,
    METRICS,
    METRICS_OFFSET,
    NUM_SCALARS,
    SCALAR_INDEX,
    LearnerState,
)
from flashsac_bench.learner.update import UpdateStatics

if TYPE_CHECKING:
    from flashsac_bench.config.hardware import HardwareConfig
    from flashsac_bench.config.root import Config

STATE_FORMAT = 1


@dataclass(frozen=True)
class Dims:
    obs: int = 98
    critic_obs: int = 101
    action: int = 29


_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


class FlashSACLearner:
    @classmethod
    def from_config(
        cls, c: Config, dims: Dims, *, hardware: HardwareConfig | None = None, to_act: bool = False
    ) -> FlashSACLearner:
        """The learner a run's config describes, for envs of `dims`: how the runner's setup,
        evaluation and convert turn a config into a learner. `hardware`: where and in what
        dtype it computes (the config's by default); `to_act`: a learner that loads a
        checkpoint to act or to be written again, so the eager path and a replay ring of one
        batch (no checkpoint holds its ring)."""
        hw = c.hardware if hardware is None else hardware
        return cls(
            c.learner,
            c.update,
            dims,
            num_envs=c.run.num_envs,
            batch_size=c.replay.batch_size,
            replay_capacity=c.replay.batch_size if to_act else c.replay_capacity,
            device=hw.resolved_device(),
            dtype=hw.resolved_dtype(),
            path=PathConfig(name="eager") if to_act else c.path,
            seed=c.run.seed,
            gemm_align=hw.resolved_gemm_align(),
        )

    def __init__(
        self,
        cfg: LearnerConfig,
        update: UpdateConfig,
        dims: Dims,
        *,
        num_envs: int,
        batch_size: int,
        replay_capacity: int,
        device: str | torch.device = "cpu",
        dtype: str = "float32",
        path: PathConfig | None = None,
        seed: int = 1,
        gemm_align: int = 1,
    ) -> None:
        if dtype not in _DTYPES:
            raise ValueError(f"learner dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
        if gemm_align < 1:
            raise ValueError(f"gemm_align must be >= 1, got {gemm_align}")
        self.gemm_align = gemm_align
        if batch_size > replay_capacity:
            raise ValueError(f"batch_size {batch_size} > replay capacity {replay_capacity}")
        self.cfg, self.update_cfg, self.dims = cfg, update, dims
        self.device = torch.device(device)
        self.dtype = dtype
        self.batch_size = batch_size
        self.num_envs = num_envs
        self.path_cfg = path or PathConfig()
        self.ops = plan_cycle(update)
        self.n_critic = sum(op.kind == "critic" for op in self.ops)
        self.n_actor = sum(op.kind == "actor" for op in self.ops)
        self.statics, self.state = self._build(seed)
        self.ring = ReplayRing(replay_capacity, self.statics.rows, self.device)
        cycle = Cycle(self.statics, self.state, self.ring, self.ops, batch_size)
        self.path = paths.build(self.path_cfg, cycle, self.device)

    # ------------------------------------------------------------------ construction
    def _build(self, seed: int) -> tuple[UpdateStatics, LearnerState]:
        cfg, dims, dev = self.cfg, self.dims, self.device
        (actor_spec, actor_p, actor_b), (critic_spec, critic_p, critic_b) = self._layouts()
        temp_layout = temperature_layout(cfg.temp_init)
        # Initialize on the CPU from a seeded generator: identical weights on every device.
        gen = torch.Generator().manual_seed(seed)
        flats = {}
        for name, layout in (
            ("actor_params", actor_p),
            ("actor_buffers", actor_b),
            ("critic_params", critic_p),
            ("critic_buffers", critic_b),
            ("log_temp", temp_layout),
        ):
            flat = torch.zeros(layout.numel, dtype=torch.float32)
            layout.initialize(flat, gen)
            flats[name] = flat.to(dev)
        # On CUDA the projection is one gathered product that Inductor fuses into the gated
        # writes; elsewhere a concatenation of per-group pieces. Both are bit-identical.
        gather = dev.type == "cuda"
        actor_proj = Projector(actor_p, dev, gather)
        critic_proj = Projector(critic_p, dev, gather)
        # The official code projects all networks once at init; the target starts as a copy.
        flats["actor_params"] = actor_proj(flats["actor_params"])
        flats["critic_params"] = critic_proj(flats["critic_params"])
        schedule = LRSchedule(
            cfg.lr_init, cfg.lr_peak, cfg.lr_end, cfg.lr_warmup_steps, cfg.lr_decay_steps
        )
        statics = UpdateStatics(
            rows=RowLayout(dims.obs, dims.critic_obs, dims.action),
            actor_spec=actor_spec,
            actor_param_layout=actor_p,
            actor_buffer_layout=actor_b,
            critic_spec=critic_spec,
            critic_param_layout=critic_p,
            critic_buffer_layout=critic_b,
            actor_projector=actor_proj,
            critic_projector=critic_proj,
            support=torch.linspace(cfg.v_min, cfg.v_max, cfg.num_atoms, device=dev),
            norm=NormConfig(cfg.bn_momentum, cfg.bn_eps, cfg.rms_eps),
            adam=AdamConfig(cfg.adam_beta1, cfg.adam_beta2, cfg.adam_eps),
            # Actor and temperature schedulers step on actor updates only (official quirk).
            critic_schedule=schedule,
            actor_schedule=schedule,
            gamma=cfg.gamma,
            tau=cfg.tau,
            v_min=cfg.v_min,
            v_max=cfg.v_max,
            target_entropy=target_entropy(dims.action, cfg.temp_target_sigma),
            mm_dtype=_DTYPES[self.dtype],
            gemm_align=self.gemm_align,
        )
        return statics, self._initial_state(flats, seed)

    def _initial_state(self, flats: dict[str, torch.Tensor], seed: int) -> LearnerState:
        """The state at the start: the initialized flats, zero Adam moments and schedules,
        the scalars slots, the RNG of `seed` and the reward normalizer / exploration noise."""
        cfg, dims, dev = self.cfg, self.dims, self.device
        rng = CounterRNG(seed, dev)
        scalars = torch.zeros(NUM_SCALARS, dtype=torch.float32, device=dev)
        scalars[SCALAR_INDEX["temperature.log_temp"]] = flats["log_temp"][0]

        def slot(name: str, n: int = 0) -> torch.Tensor:
            i = SCALAR_INDEX[name]
            return scalars[i : i + 1] if n else scalars[i]

        return LearnerState(
            actor_params=flats["actor_params"],
            actor_buffers=flats["actor_buffers"],
            actor_adam=AdamState.zeros_like(flats["actor_params"], slot("actor.adam.step")),
            critic_params=flats["critic_params"],
            critic_buffers=flats["critic_buffers"],
            critic_adam=AdamState.zeros_like(flats["critic_params"], slot("critic.adam.step")),
            target_params=flats["critic_params"].clone(),
            target_buffers=flats["critic_buffers"].clone(),
            log_temp=slot("temperature.log_temp", 1),
            temp_adam=AdamState(
                slot("temperature.adam.exp_avg", 1),
                slot("temperature.adam.exp_avg_sq", 1),
                slot("temperature.adam.step"),
            ),
            critic_sched_step=slot("critic.sched_step"),
            actor_sched_step=slot("actor.sched_step"),
            reward_normalizer=RewardNormalizer(
                self.num_envs, cfg.gamma, cfg.reward_g_max, cfg.normalize_reward, dev
            ),
            rng=rng,
            explore=ZetaNoise(self.num_envs, dims.action, cfg.zeta_mu, cfg.zeta_max, rng),
            metrics=scalars[METRICS_OFFSET:],
            scalars=scalars,
        )

    # ------------------------------------------------------------------ the update cycle
    def can_update(self) -> bool:
        return self.ring.count >= self.batch_size

    def update(self) -> None:
        """One iteration's update cycle on the configured path. Needs >= batch_size stored
        rows."""
        if not self.can_update():
            raise RuntimeError(
                f"replay holds {self.ring.count} rows, fewer than batch_size {self.batch_size}"
            )
        self.path.run()

    def warmup(self) -> None:
        """Compile / capture before timing; leaves the learner state unchanged."""
        self.path.warmup()

    def release_graphs(self) -> None:
        """Destroy the captured update cycle, if any (learner/graphs.py says why this is explicit);
        a later update() captures it anew."""
        self.path.release_graphs()

    # ------------------------------------------------------------------ acting
    @torch.no_grad()
    def _mean_log_std(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        st, s = self.statics, self.state
        return actor_policy(
            st.actor_param_layout,
            st.actor_buffer_layout,
            s.actor_params,
            s.actor_buffers,
            obs,
            st.actor_spec,
            st.norm,
            st.mm_dtype,
            st.gemm_align,
        )

    @torch.no_grad()
    def act(self, obs: torch.Tensor, dones: torch.Tensor | None = None) -> torch.Tensor:
        """Exploration actions tanh(mean + std * zeta-repeated noise) in [-1, 1]."""
        mean, log_std = self._mean_log_std(obs)
        noise = self.state.explore.step(dones)
        return torch.tanh(mean + torch.exp(log_std) * noise)

    @torch.no_grad()
    def act_random(self, num: int) -> torch.Tensor:
        """Uniform actions in [-1, 1] (before learning starts), from the learner's RNG."""
        return 2.0 * self.state.rng.uniform(STREAM_RANDOM_ACTION, (num, self.dims.action)) - 1.0

    @torch.no_grad()
    def prepare_random_actions(self, num: int) -> None:
        """act_random(num)'s first-use work now (rng.CounterRNG.prepare), drawing nothing."""
        self.state.rng.prepare(((STREAM_RANDOM_ACTION, num * self.dims.action),))

    @torch.no_grad()
    def act_deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self._mean_log_std(obs)[0])

    def update_reward_stats(self, rewards: torch.Tensor, dones: torch.Tensor) -> None:
        self.state.reward_normalizer.update(rewards, dones)

    # ------------------------------------------------------------------ metrics
    @property
    def metric_names(self) -> tuple[str, ...]:
        return METRICS

    def metrics_tensor(self) -> torch.Tensor:
        """The device metric buffer of the last cycle (sums; see metrics_from)."""
        return self.state.metrics

    def metrics_from(self, raw: torch.Tensor | list[float]) -> dict[str, float]:
        """Per-iteration means from a (host copy of the) metric buffer."""
        v = [float(x) for x in (raw.tolist() if isinstance(raw, torch.Tensor) else raw)]
        critic_n = max(self.n_critic - v[METRIC_INDEX["critic_skipped"]], 1.0)
        actor_n = max(self.n_actor - v[METRIC_INDEX["actor_skipped"]], 1.0)
        out = {name: v[i] for i, name in enumerate(METRICS)}
        for key in ("critic_loss", "q_mean"):
            out[key] = v[METRIC_INDEX[key]] / critic_n
        for key in ("actor_loss", "entropy", "temperature_loss"):
            out[key] = v[METRIC_INDEX[key]] / actor_n
        return out

    def read_metrics(self) -> dict[str, float]:
        return self.metrics_from(self.state.metrics.cpu())

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "dims": (self.dims.obs, self.dims.critic_obs, self.dims.action),
            "tensors": {k: host_copy(v) for k, v in self.state.tensors().items()},
        }

    def load_state_dict(self, sd: dict[str, Any]) -> None:
        if sd.get("format") != STATE_FORMAT:
            raise ValueError(f"unsupported learner state format {sd.get('format')!r}")
        dims = (self.dims.obs, self.dims.critic_obs, self.dims.action)
        if tuple(sd["dims"]) != dims:
            raise ValueError(f"checkpoint dims {tuple(sd['dims'])} != learner dims {dims}")
        if int(sd.get("layout_align", 1)) != 1:
            raise ValueError(
                "this learner state was written with an aligned parameter layout, which this "
                "version no longer builds"
            )
        self.state.restore(sd["tensors"])

    def _layouts(self):
        """((actor spec, param layout, buffer layout), (the critic's)) (networks.actor_layouts /
        critic_layouts)."""
        cfg, dims = self.cfg, self.dims
        actor = actor_layouts(
            dims.obs, dims.action, cfg.actor_hidden_dim, cfg.actor_num_blocks, cfg.expansion
        )
        critic = critic_layouts(
            dims.critic_obs + dims.action,
            cfg.critic_hidden_dim,
            cfg.critic_num_blocks,
            cfg.expansion,
            cfg.num_atoms,
        )
        return actor, critic

    def num_parameters(self) -> dict[str, int]:
        st = self.statics

        return {
            "actor": st.actor_param_layout.numel,
            "critic": st.critic_param_layout.numel,
            "temperature": self.state.log_temp.numel(),
        }
