"""G1 Walk Flat: UniLab's G1WalkFlat velocity-tracking task (unilab-rl 1.4.15) on batched MuJoCo.

Contract. 50 Hz control (ctrl_dt 0.02 s, 3 physics steps of 1/150 s), 1000-step episodes.
Actions a in [-1, 1]^29 (clipped) set position targets default_pose + action_scale * a, held over
the substeps. Joint order is canonical (`g1.figures.JOINT_NAMES`: left leg, right leg, waist,
left arm, right arm) whatever the actuator order of an external model.

Policy observation (98): torso gyro * 0.25 | projected gravity (3) | joint pos - default (29,
noise U(+-0.01)) | joint vel * 0.05 (29, noise U(+-0.1) added before scaling) | last action (29,
the action just applied) | command vx, vy, wz | gait phase of both feet (2, radians in
[0, 2 pi)). Critic observation (101): the same without noise, then pelvis linear velocity * 2.
The gyro is the torso IMU's (local frame), the linear velocity the pelvis IMU velocimeter's
(local frame), as in UniLab. Observations describe the state after the substeps: the position
and velocity stages are recomputed after the last `mj_step` (see `g1.cpu.batched`).

Rewards, UniLab's FlashSAC MuJoCo owner (sigma = tracking_sigma 0.25):
  tracking_lin_vel     exp(-|cmd_xy - v_xy|^2 / sigma)          (pelvis-frame velocity)
  tracking_ang_vel     exp(-(cmd_wz - gyro_z)^2 / sigma)
  penalty_ang_vel_xy   gyro_x^2 + gyro_y^2
  penalty_orientation  g_x^2 + g_y^2 of the projected gravity (= sin^2 tilt)
  penalty_action_rate  |a_t - a_{t-1}|^2 (a_{-1} = 0 after a reset)
  pose                 sum_j w_j (q_j - q0_j)^2 (task.pose_weights)
  penalty_feet_ori     x^2 + y^2 of both feet's world quaternions
  feet_phase           exp(-sum_feet (z_foot - h(phase))^2 / 0.005), h a cubic Bezier swing of
                       0.09 m on a 1.5 Hz clock (`g1.rewards.swing_height_target`)
  alive                1
Reward = ctrl_dt * sum_i w_i c_i r_i, with c_i the penalty-curriculum scale for w_i < 0 (else 1):
UniLab multiplies by ctrl_dt (its `scale_rewards_by_dt`), and so do we; `reward_terms` holds the
weighted w_i c_i r_i ctrl_dt, so it sums to the reward.

Penalty curriculum (UniLab's G1PenaltyCurriculum): the mean episode length is an EMA updated on
steps where envs finish, weight min(n_done / window, 1), window = max(1, int(1000 N / 4096)).
After such a step the scale is multiplied by (1 - 0.001) when the mean is below 150 or by
(1 + 0.001) above 750, clipped to [0.0625, 0.125] (start 0.0625); it applies from the next step.

Episode end. terminated: torso tilt > 65 deg, pelvis height < 0.3 m, or a non-finite state (our
addition: MuJoCo's own autoreset to qpos0 is disabled; the rows of a blown-up env are zeroed and
it restarts, so no NaN reaches the learner).
truncated: the 1000th step of an episode that did not terminate on it; terminated wins, the two
are never both set. Finished envs are reset in the same step: `final_obs` carries their true last
observation, `obs` the first of the new episode.

Reset: the `stand` keyframe, xy + U(+-0.5) m, yaw U(+-pi), all six root velocities U(+-0.5), one
kp and one kd multiplier U(0.9, 1.1) per env; commands vx, vy, wz uniform in their ranges, the
planar part zeroed when |(vx, vy)| <= 0.2, held for the whole episode (UniLab resamples every
20 s = once per episode); gait phase left U(0, 2 pi), right = left + pi.

Choices where UniLab differs or is silent (documented deviations):
  * Projected gravity is gravity in the torso IMU frame, R^T (0, 0, -1) (MuJoCo Playground's
    G1 convention). UniLab feeds -torso_upvector, the torso z axis in the WORLD frame, whose x/y
    turn with the heading (random at reset), so the policy cannot tell a forward from a sideways
    lean. Tilt and the orientation penalty are the same under both; `task.obs.gravity_frame=world`
    restores UniLab's observation exactly.
  * The right foot's reset phase is wrapped into [0, 2 pi) (UniLab wraps it one step later); the
    reward is 2 pi-periodic, only that first observation differs.
  * Observations use the state after the substeps (UniLab's backends read sensordata left by the
    last mj_step, one substep old).

Execution (`backend`, see `envs.g1.cpu.shards`): the per-env work lives in `shard.G1Shard`,
run either as one shard of all envs in this process (physics on a thread pool) or as contiguous
shards in worker processes writing into shared memory. This class holds what is global: the
action input, the penalty curriculum (from the episode lengths of ALL envs, in env-index order)
and the metric sums. Random numbers: one counter-based stream per env (`g1.env_rng`), so an env's
trajectory is the same whatever the split (workers 1, 2, 3 or the thread pool give bit-identical
outputs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flashsac_bench.config.backend import MujocoConfig
from flashsac_bench.config.task import TaskConfig
from flashsac_bench.envs.contract.api import EnvStep, RowsDone, VecEnv
from flashsac_bench.envs.contract.host_stats import array_mean
from flashsac_bench.envs.g1 import task as T
from flashsac_bench.envs.g1.cpu.batched import BatchedMujoco
from flashsac_bench.envs.g1.cpu.shard import (
    ACTION,
    COMMAND,
    CRITIC_OBS_DIM,
    GRAVITY,
    GYRO,
    JOINT_POS,
    JOINT_VEL,
    LIN_VEL,
    NUM_JOINTS,
    OBS_DIM,
    PHASE,
    REWARD_TERMS,
    G1ShardFactory,
    array_spec,
    build_task_model,
)
from flashsac_bench.envs.g1.cpu.shards import InlineShards, ProcessShards
from flashsac_bench.envs.g1.layout import G1Layout

__all__ = [
    "ACTION",
    "COMMAND",
    "CRITIC_OBS_DIM",
    "GRAVITY",
    "GYRO",
    "JOINT_POS",
    "JOINT_VEL",
    "LIN_VEL",
    "NUM_JOINTS",
    "OBS_DIM",
    "PHASE",
    "REWARD_TERMS",
    "G1WalkFlat",
]

# Version of get_state's layout; 2: per-env random streams (format 1 had one shared Generator).
STATE_FORMAT = 2
# Per-env entries of the state, in env-index order (split into shards on set_state).
_PER_ENV = (
    "physics",
    "kp_scale",
    "kd_scale",
    "rng_counters",
    "action",
    "last_action",
    "command",
    "phase",
    "episode_step",
    "episode_return",
)


class G1WalkFlat(VecEnv):
    """`num_envs` G1 Walk Flat envs with autoreset; see the module docstring for the contract."""

    obs_dim = OBS_DIM
    critic_obs_dim = CRITIC_OBS_DIM
    action_dim = NUM_JOINTS

    def __init__(
        self,
        task_cfg: TaskConfig,
        backend_cfg: MujocoConfig,
        num_envs: int,
        seed: int,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.cfg = task_cfg
        self.num_envs = num_envs
        self.seed = int(seed)
        self.max_episode_steps = task_cfg.max_episode_steps
        # Built here too (not only in the shards): a bad model fails in this process with
        # MuJoCo's own message, before any worker starts.
        self.model = build_task_model(task_cfg)
        self.layout = G1Layout.from_model(self.model)
        self.plan = backend_cfg.plan(num_envs)
        spec = array_spec(self.model)
        self._shards: InlineShards | ProcessShards
        if self.plan.mode == "processes":
            factory = G1ShardFactory(task_cfg, self.seed, 1)
            # Not waiting for the workers: they start while the caller goes on (the runner builds
            # and compiles the learner meanwhile); the first method called waits for them.
            self._shards = ProcessShards(
                factory,
                spec,
                num_envs,
                self.plan.workers,
                backend_cfg.worker_timeout_s,
                wait_for_start=False,
            )
        else:
            factory = G1ShardFactory(task_cfg, self.seed, self.plan.threads)
            self._shards = InlineShards(factory, spec, num_envs)
        a = self._shards.arrays
        self._actions = a["actions"]
        # Physics state of every env (rendering, diagnostics); overwritten by every step.
        self.qpos = a["qpos"]
        self._out = EnvStep.from_arrays(a, REWARD_TERMS)
        cur = task_cfg.curriculum
        self._penalty_scale = cur.initial_scale
        self._mean_episode_length = 0.0
        self._length_window = max(1, int(cur.window * num_envs / 4096))
        self._metrics = _MetricSums()
        self._shards.post("reset")  # the arrays hold the first observations once it is read

    # -- public API ---------------------------------------------------------------------------

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        """Reset every env (fresh randomization); returns the (obs, critic_obs) output arrays."""
        self._shards.call("reset")
        return self._out.obs, self._out.critic_obs

    def step(self, actions: np.ndarray) -> EnvStep:
        self.step_begin(actions)
        return self.step_end()

    def step_begin(self, actions: np.ndarray) -> None:
        """The first half of `step`: hand the actions to the shards and return. With worker
        processes they step while the caller packs the tick's first columns (runner.collector);
        in-process (threads) the whole step runs here. `step_end` completes it."""
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs, NUM_JOINTS):
            raise ValueError(f"actions must be {(self.num_envs, NUM_JOINTS)}, got {actions.shape}")
        self._actions[:] = actions
        # The scale of this step is the one set after the previous step (UniLab's order).
        self._shards.post("step", self._penalty_scale)

    def step_end(self, on_rows: RowsDone | None = None) -> EnvStep:
        """Wait for the step `step_begin` started; the same EnvStep as `step`. `on_rows(step,
        lo, hi)` is called as each worker's env rows [lo, hi) of the step are complete, while
        other workers may still step (the collector copies them out meanwhile); with worker
        processes the rows come in the order the workers finish."""
        out = self._out
        self._shards.settle(None if on_rows is None else lambda lo, hi: on_rows(out, lo, hi))
        done = np.flatnonzero(out.terminated | out.truncated)
        self._metrics.add_step(out, done)
        if done.size:
            self._update_curriculum(out.episode_length[done])
        return out

    @property
    def penalty_scale(self) -> float:
        """The penalty-curriculum scale the next step uses."""
        return self._penalty_scale

    @penalty_scale.setter
    def penalty_scale(self, value: float) -> None:
        self._penalty_scale = float(value)

    @property
    def workers(self) -> int:
        """Worker processes stepping the envs (0: the in-process thread pool)."""
        return self._shards.workers

    @property
    def worker_done_times(self) -> list[float | None]:
        """time.perf_counter() in each worker process when it finished its part of the last
        step (empty in-process): how long the step waited for its slowest worker."""
        return list(self._shards.done_times)

    @property
    def physics(self) -> BatchedMujoco:
        """The MuJoCo models and datas (in-process mode only: tests and diagnostics)."""
        if not isinstance(self._shards, InlineShards) or self._shards.shard is None:
            raise AttributeError("env.physics is only reachable with backend.mode=threads")
        return self._shards.shard.physics  # type: ignore[attr-defined]

    def set_perturbations(
        self,
        *,
        mass_scale: float = 1.0,
        push_step: int | None = None,
        push_velocity: list[float] | None = None,
        commands: np.ndarray | None = None,
    ) -> None:
        """Conditions no training run sees, for evaluating a policy's robustness: every link's
        mass and inertia times `mass_scale`; at step `push_step` of every episode the pelvis's
        linear velocity changes by `push_velocity` (m/s, world frame: an impulse); `commands`
        (N, 3) replace the sampled velocity commands at every reset (None: sampled)."""
        self._shards.call("set_mass_scale", float(mass_scale))
        self._shards.call("set_push", push_step, push_velocity)
        if commands is not None:
            commands = np.asarray(commands, dtype=np.float64)
            if commands.shape != (self.num_envs, 3):
                raise ValueError(f"commands must be {(self.num_envs, 3)}, got {commands.shape}")
        self._shards.call_each(
            "set_command_override",
            [(None if commands is None else commands[lo:hi],) for lo, hi in self._shards.ranges],
        )

    def reward_terms_now(self) -> dict[str, np.ndarray]:
        """The weighted reward terms `step` would award for the current physics state, command,
        gait phase and actions (diagnostics and tests; overwrites `reward_terms` in place)."""
        self._shards.call("reward_terms_now", self._penalty_scale)
        return self._out.reward_terms

    def terminated_now(self) -> np.ndarray:
        """Whether the current physics state would end the episode as a failure."""
        return np.concatenate(self._shards.call("terminated_now"))

    def metrics(self) -> dict[str, float]:
        """Means since the previous call (episode stats: of the episodes finished meanwhile)."""
        result = self._metrics.pop()
        result["curriculum/penalty_scale"] = self._penalty_scale
        result["curriculum/mean_episode_length"] = self._mean_episode_length
        return result

    def get_state(self) -> dict[str, Any]:
        """Everything needed to continue bit-identically (copies), whatever the shard split."""
        parts = self._shards.call("get_state")
        state: dict[str, Any] = {"format": STATE_FORMAT, "num_envs": self.num_envs}
        state.update({k: np.concatenate([p[k] for p in parts]) for k in _PER_ENV})
        state.update(
            seed=self.seed,
            obs=self._out.obs.copy(),
            critic_obs=self._out.critic_obs.copy(),
            penalty_scale=self._penalty_scale,
            mean_episode_length=self._mean_episode_length,
            metric_sums=self._metrics.state(),
        )
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        if state.get("format") != STATE_FORMAT:
            raise ValueError(
                "this env state was saved by an older G1 env (one random stream shared by all "
                "envs); it cannot be continued bit for bit by this version: start a new run"
            )
        if state["num_envs"] != self.num_envs:
            raise ValueError(f"state is for {state['num_envs']} envs, this env has {self.num_envs}")
        seed = int(state["seed"])
        parts = [
            ({k: np.asarray(state[k])[lo:hi] for k in _PER_ENV}, seed)
            for lo, hi in self._shards.ranges
        ]
        self._shards.call_each("set_state", parts)
        self.seed = seed
        self._out.obs[:] = state["obs"]
        self._out.critic_obs[:] = state["critic_obs"]
        self._penalty_scale = float(state["penalty_scale"])
        self._mean_episode_length = float(state["mean_episode_length"])
        self._metrics.load(state["metric_sums"])

    def close(self) -> None:
        """Stop the workers (if any) and free the shared memory; idempotent."""
        self._shards.close()

    # -- internals ----------------------------------------------------------------------------

    def _update_curriculum(self, lengths: np.ndarray) -> None:
        """The task's curriculum rule (`g1.task.curriculum_step`) on 0-d float64 arrays."""
        scale, mean = T.curriculum_step(
            np.asarray(self._penalty_scale),
            np.asarray(self._mean_episode_length),
            np.asarray(float(len(lengths))),
            np.asarray(float(lengths.sum(dtype=np.float64))),
            self._length_window,
            self.cfg.curriculum,
        )
        self._penalty_scale, self._mean_episode_length = float(scale), float(mean)


class _MetricSums:
    """Running sums for `metrics()`, cleared on every read."""

    def __init__(self) -> None:
        self._sums: dict[str, float] = {}
        self._steps = 0
        self._last_episode = {"episode/return": 0.0, "episode/length": 0.0}

    def add_step(self, out: EnvStep, done: np.ndarray) -> None:
        sums = self._sums
        self._steps += 1
        for name, values in out.reward_terms.items():
            sums[f"reward/{name}"] = sums.get(f"reward/{name}", 0.0) + array_mean(values)
        sums["reward/total"] = sums.get("reward/total", 0.0) + array_mean(out.reward)
        if done.size:
            sums["episodes"] = sums.get("episodes", 0.0) + done.size
            sums["terminated"] = sums.get("terminated", 0.0) + float(out.terminated[done].sum())
            sums["return"] = sums.get("return", 0.0) + float(out.episode_return[done].sum())
            sums["length"] = sums.get("length", 0.0) + float(out.episode_length[done].sum())

    def pop(self) -> dict[str, float]:
        sums, steps = self._sums, max(self._steps, 1)
        result = {k: v / steps for k, v in sums.items() if k.startswith("reward/")}
        episodes = sums.get("episodes", 0.0)
        if episodes:
            self._last_episode = {
                "episode/return": sums["return"] / episodes,
                "episode/length": sums["length"] / episodes,
            }
        result.update(self._last_episode)
        result["episode/count"] = episodes
        terminated = sums.get("terminated", 0.0)
        result["episode/terminated_frac"] = terminated / episodes if episodes else 0.0
        self._sums, self._steps = {}, 0
        return result

    def state(self) -> dict[str, Any]:
        return {"sums": dict(self._sums), "steps": self._steps, "last": dict(self._last_episode)}

    def load(self, state: dict[str, Any]) -> None:
        self._sums = dict(state["sums"])
        self._steps = int(state["steps"])
        self._last_episode = dict(state["last"])
