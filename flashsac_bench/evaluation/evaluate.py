"""One evaluation of a trained policy: rollouts, robustness conditions, eval.json, the video.

`evaluate(ec)` loads a runner checkpoint (`runner/checkpoint.py`; a run dir means its latest
checkpoint), rebuilds the training env (task + backend of the checkpoint's config; a policy
trained on MuJoCo Warp, backend=mjwarp, in CPU MuJoCo, the reference physics) and runs
tanh(mean) rollouts (`FlashSACLearner.act_deterministic`) until every env has finished its share
of `episodes` episodes, so short episodes are not over-represented. Per episode: return, length,
whether it terminated, the command, linear / angular velocity tracking errors and the tracking
rewards. It writes `eval.json` and, with render=true, `eval.gif` and `eval_strip.png` into
`out_dir` (default: the run dir), and a checkpoint whose training ran with logger=wandb gets its
evaluation in that W&B run. The command line (`python -m flashsac_bench.evaluate`) is
cli.evaluate: it checks a command and prints the result.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from flashsac_bench.config.backend import MujocoConfig
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.hardware import HardwareConfig
from flashsac_bench.config.run import WALK_EPISODE_LENGTH, WALK_TRACKING_FRAC
from flashsac_bench.envs.g1.offer import g1_config
from flashsac_bench.envs.tasks import task_of
from flashsac_bench.evaluation.config import EvalConfig
from flashsac_bench.evaluation.render import (
    GIF_NAME,
    STRIP_NAME,
    frame_stride,
    render_episode,
    render_gymnasium_episode,
)
from flashsac_bench.evaluation.robustness import (
    Condition,
    apply_condition,
    env_layout,
    make_condition,
    summarize,
)
from flashsac_bench.evaluation.rollout import Rollout, aggregate, rollout, step_metrics

if TYPE_CHECKING:
    from flashsac_bench.envs.contract.api import EnvStep, VecEnv
    from flashsac_bench.evaluation.trained import TrainedLearner

EVAL_NAME = "eval.json"
EVAL_FORMAT = 1
# Seconds between two progress lines of a rollout.
PROGRESS_EVERY_S = 5.0
# What "walks" means for a training run (run.stop_at_walk), applied to the deterministic policy.
GOAL_EPISODE_LENGTH = WALK_EPISODE_LENGTH
GOAL_LIN_VEL_TRACKING_FRAC = WALK_TRACKING_FRAC


def _say(text: str) -> None:
    """A progress line (stderr: stdout holds the results)."""
    print(f"flashsac_bench.evaluate: {text}", file=sys.stderr, flush=True)


class _RolloutProgress:
    """Progress lines of a rollout: when it starts, then at most every PROGRESS_EVERY_S."""

    def __init__(self, what: str, episodes: int) -> None:
        self.what, self.episodes = what, episodes
        self.t0 = self.last = time.perf_counter()
        _say(f"{what}: {episodes} episodes ...")

    def __call__(self, steps: int, done: int) -> None:
        now = time.perf_counter()
        if now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            _say(f"{self.what}: {done} of {self.episodes} episodes done, {steps} steps, "
                 f"{now - self.t0:.0f} s")  # fmt: skip


def evaluate(ec: EvalConfig) -> dict[str, Any]:
    """Evaluate `ec.checkpoint` as `ec` says; eval.json's report (with its `path`)."""
    from flashsac_bench.evaluation.trained import load_trained_learner, trained_task
    from flashsac_bench.runner.summary import write_json

    device = HardwareConfig(name="eval", device=ec.device).resolved_device()  # "auto" resolved
    t0 = time.perf_counter()
    trained = load_trained_learner(ec.checkpoint, device, ec.dtype)
    cfg = trained.config
    _say(f"{trained.checkpoint} (iteration {trained.iteration}) on {device}")
    offer = task_of(cfg.task)
    if ec.render and offer.renders == "states":
        # A bad fps fails now, not after the rollouts.
        frame_stride(g1_config(cfg.task).ctrl_dt, ec.render_fps)
    out_dir = output_dir(ec, trained.checkpoint)
    num_envs = min(ec.num_envs, ec.episodes)
    # The envs step the model the checkpoint carries (an edited or deleted MJCF changes nothing).
    with trained_task(trained) as task:
        runs = _Rollouts(ec, trained, task, _eval_backend(cfg, ec, num_envs))
        t_roll = time.perf_counter()
        what = f"rollouts on {num_envs} envs"
        result, scale_note, env_metrics = runs.run(num_envs, ec.episodes, what, render=ec.render)
        rollout_s = time.perf_counter() - t_roll
        robustness = runs.robustness(result)
        end_scale = env_metrics.get("curriculum/penalty_scale")
        report = _report(ec, trained, num_envs, result, rollout_s, (scale_note, end_scale))
        if not offer.walks:  # the walking goals are the G1's
            report["goals"] = None
        if robustness:  # only when asked: eval.json without the option stays as it was
            report["robustness"] = robustness
        out_dir.mkdir(parents=True, exist_ok=True)  # after the rollouts: a failure writes nothing
        if kept := keep_earlier_evaluation(out_dir):
            _say(f"the earlier evaluation in {out_dir} is kept in {kept}")
        report["render"] = _render(ec, task, runs.policy, result, out_dir, cfg.task.name)
    report["wall_s"] = time.perf_counter() - t0
    saved = wandb_state(ec, trained.payload, cfg)
    if saved is not None:
        report["wandb_run_id"] = saved["wandb_run_id"]  # the W&B run it goes to
    write_json(out_dir / EVAL_NAME, report)
    report["path"] = str(out_dir / EVAL_NAME)
    if saved is not None:  # after eval.json: the evaluation stands whatever W&B does
        _log_to_wandb(trained, report, saved)
    return report


class _Rollouts:
    """The trained policy's rollouts in fresh envs of the checkpoint's task, each of seed
    ec.seed: every run starts from the same states, so robustness conditions compare with the
    nominal one."""

    def __init__(
        self, ec: EvalConfig, trained: TrainedLearner, task: Any, backend: MujocoConfig | None
    ) -> None:
        self.ec, self.trained, self.task, self.backend = ec, trained, task, backend

    def policy(self, obs: np.ndarray) -> np.ndarray:
        import torch

        learner = self.trained.learner
        x = torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32)).to(learner.device)
        return learner.act_deterministic(x).float().cpu().numpy().astype(np.float64)

    def metrics(self, out: EnvStep) -> dict[str, np.ndarray]:
        if not task_of(self.task).walks:
            return {}
        task = g1_config(self.task)
        return step_metrics(
            out.final_critic_obs,
            out.reward_terms,
            lin_vel_scale=task.obs.lin_vel_scale,
            gyro_scale=task.obs.gyro_scale,
            tracking_sigma=task.tracking_sigma,
            lin_weight=task.rewards.tracking_lin_vel,
            ang_weight=task.rewards.tracking_ang_vel,
            ctrl_dt=task.ctrl_dt,
        )

    def run(
        self,
        envs: int,
        episodes: int,
        what: str,
        condition: Condition | None = None,
        render: bool = False,
    ) -> tuple[Rollout, dict[str, Any], dict[str, float]]:
        """(rollout, penalty-scale note, env metrics) of `episodes` episodes on `envs` envs."""
        from flashsac_bench.envs import TaskEnv, make_env
        from flashsac_bench.envs.contract.api import VecEnv

        ec, task = self.ec, self.task
        env = make_env(task, self.backend, envs, ec.seed)
        try:
            assert isinstance(env, VecEnv)  # CPU MuJoCo, the reference physics
            scale_note = _apply_penalty_scale(env, self.trained.payload, ec.penalty_scale)
            if condition is not None:
                apply_condition(env, condition)
            record_steps = 0
            if render and task_of(task).renders == "states":
                record_steps = int(round(ec.render_seconds / g1_config(task).ctrl_dt))
            qpos = env.qpos if isinstance(env, TaskEnv) else None
            record = (lambda: qpos[ec.render_env].copy()) if qpos is not None else None
            result = rollout(
                env,
                self.policy,
                episodes,
                self.metrics,
                record=record,
                record_env=ec.render_env,
                record_steps=record_steps,
                progress=_RolloutProgress(what, episodes),
            )
            return result, scale_note, env.metrics()
        finally:
            env.close()

    def robustness(self, nominal: Rollout) -> dict[str, Any]:
        """Each condition of ec.robustness summarized (`nominal` is the rollout already run)."""
        ec, task = self.ec, self.task
        found: dict[str, Any] = {}
        for name in ec.robustness:
            # The CLI's check: a task that offers robustness (the G1's conditions).
            cond = make_condition(name, g1_config(task), ec.push_step, ec.push_velocity)
            if name == "nominal":  # the rollout above, exactly: not run twice
                episodes = nominal.episodes
            else:
                n_episodes, n_envs = env_layout(cond, ec.episodes, ec.num_envs)
                episodes = self.run(n_envs, n_episodes, f"robustness {name}", cond)[0].episodes
            found[name] = summarize(cond, episodes, g1_config(task).max_episode_steps)
        return found


def _report(
    ec: EvalConfig,
    trained: TrainedLearner,
    num_envs: int,
    result: Rollout,
    rollout_s: float,
    penalty_scale: tuple[dict[str, Any], float | None],
) -> dict[str, Any]:
    """eval.json's fields that the rollouts decide (the caller adds the rest); `penalty_scale`:
    the curriculum's scale as the rollouts began (how it was set) and as they ended."""
    from flashsac_bench.runner.summary import git_info

    cfg, learner = trained.config, trained.learner
    summary = aggregate(result.episodes)
    length = summary["length"]["mean"]
    frac = summary.get("tracking_lin_vel_frac_mean", {}).get("mean")
    return {
        "format": EVAL_FORMAT,
        "checkpoint": str(trained.checkpoint),
        "iteration": trained.iteration,
        "policy": "tanh(mean): FlashSACLearner.act_deterministic",
        "eval_config": asdict(ec),
        "num_envs": num_envs,
        "device": str(learner.device),
        "matmul_dtype": learner.dtype,
        # The task as trained (its model_file as the checkpoint names it; the envs stepped
        # the copy the checkpoint carries, `model_sha256`).
        "task": asdict(cfg.task),
        "model_sha256": (trained.payload.get("model") or {}).get("sha256"),
        "training_config": trained.training_config,
        "penalty_scale": penalty_scale[0],
        "penalty_scale_end": penalty_scale[1],
        "steps": result.steps,
        "rollout_s": rollout_s,
        "summary": summary,
        "goals": {
            "episode_length_mean": length,
            "episode_length_goal": GOAL_EPISODE_LENGTH,
            "episode_length_met": length >= GOAL_EPISODE_LENGTH,
            "lin_vel_tracking_frac_mean": frac,
            "lin_vel_tracking_goal": GOAL_LIN_VEL_TRACKING_FRAC,
            "lin_vel_tracking_met": frac is not None and frac >= GOAL_LIN_VEL_TRACKING_FRAC,
            "note": "the walking thresholds applied to this deterministic evaluation",
        },
        "episodes": result.episodes,
        "git": git_info(),
    }


def _render(
    ec: EvalConfig, task: Any, policy: Any, result: Rollout, out_dir: Path, name: str
) -> dict[str, Any]:
    """The video of one episode (eval.gif, eval_strip.png), or why there is none."""
    if not ec.render:
        return {"ok": False}
    if task_of(task).renders == "episode":
        _say(f"rendering one episode of {name} (seed {ec.seed}) ...")
        return render_gymnasium_episode(task, policy, ec, out_dir)
    _say(f"rendering {len(result.frames)} states of env {ec.render_env} ...")
    return render_episode(task, result.frames, ec, out_dir)


def wandb_state(ec: EvalConfig, payload: dict[str, Any], cfg: Any) -> dict[str, Any] | None:
    """The W&B run (a checkpoint's logger state) this evaluation goes to: the checkpoint's own
    when its training ran with logger=wandb (and wandb=true here); else None."""
    saved = payload.get("logger")
    if not ec.wandb or cfg.logger.name != "wandb" or not isinstance(saved, dict):
        return None
    return saved if isinstance(saved.get("wandb_run_id"), str) else None


def _log_to_wandb(trained: Any, report: dict[str, Any], saved: dict[str, Any]) -> None:
    """The GIF as media eval/rollout and the goals as eval/* values, at the checkpoint's
    iteration, in the training's W&B run."""
    from flashsac_bench.evaluation.trained import run_dir_of
    from flashsac_bench.runner.loggers import log_to_saved_wandb_run

    goals = report["goals"] or {}
    points = {
        "eval/episode_length_mean": report["summary"]["length"]["mean"],
        "eval/lin_vel_tracking_frac": goals.get("lin_vel_tracking_frac_mean"),
        "eval/return_mean": report["summary"]["return"]["mean"],
    }
    points = {k: float(v) for k, v in points.items() if v is not None}
    gif = report["render"].get("gif") if report["render"].get("ok") else None
    run_dir = run_dir_of(trained.checkpoint)
    _say(f"logging the evaluation to W&B run {saved['wandb_run_id']} ...")
    log_to_saved_wandb_run(run_dir, saved, trained.iteration, points, Path(gif) if gif else None)


def _eval_backend(cfg: Any, ec: EvalConfig, num_envs: int) -> MujocoConfig | None:
    """The backend the evaluation's envs run on: a MuJoCo Warp policy is judged in the
    reference physics, CPU MuJoCo (`threads` and fewer envs than training's workers applied);
    None for a task that steps its envs itself (task=gymnasium)."""
    if cfg.backend is None:
        return None
    backend = cfg.backend if isinstance(cfg.backend, MujocoConfig) else MujocoConfig()
    if ec.threads > 0:
        return dataclasses.replace(backend, mode="threads", workers=0, num_threads=ec.threads)
    if backend.workers > num_envs:  # training's worker count, for fewer envs here
        return dataclasses.replace(backend, workers=num_envs)
    return backend


# What one evaluation writes into its out_dir; an earlier one's are moved aside, never replaced.
EVAL_FILES = (EVAL_NAME, GIF_NAME, STRIP_NAME)


def output_dir(ec: EvalConfig, checkpoint: Path) -> Path:
    """Where the evaluation goes (default: the checkpoint's run dir); ConfigError when one of its
    files would be the checkpoint itself or a run's checkpoint file (runner.outputs)."""
    from flashsac_bench.evaluation.trained import run_dir_of
    from flashsac_bench.runner.outputs import refuse_overwriting

    out_dir = Path(ec.out_dir) if ec.out_dir else run_dir_of(checkpoint)
    refuse_overwriting(
        [out_dir / name for name in EVAL_FILES], [checkpoint], ConfigError, "out_dir"
    )
    return out_dir


def keep_earlier_evaluation(out_dir: Path) -> Path | None:
    """Move an earlier evaluation's files in out_dir into out_dir/eval_earlier_<k>/ (k: the
    first free number); the folder, or None when there was none."""
    from flashsac_bench.runner.writes import move_aside

    found = [out_dir / name for name in EVAL_FILES if (out_dir / name).exists()]
    return move_aside(found, out_dir, "eval_earlier_") if found else None


def _apply_penalty_scale(env: VecEnv, payload: dict[str, Any], mode: str) -> dict[str, Any]:
    from flashsac_bench.envs.contract.api import TaskEnv

    if not isinstance(env, TaskEnv):
        return {"mode": "initial", "value": None, "note": "env has no penalty curriculum"}
    saved = (payload.get("env") or {}).get("penalty_scale")
    if mode == "initial" or saved is None:
        return {"mode": "initial", "value": env.penalty_scale}
    env.penalty_scale = float(saved)
    return {"mode": "checkpoint", "value": float(saved)}
