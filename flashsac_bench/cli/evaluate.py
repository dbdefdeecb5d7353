"""Deterministic evaluation of a trained policy, with an offscreen video of one episode.

    python -m flashsac_bench.evaluate checkpoint=<run dir or .pt> [key=value ...]

Loads a runner checkpoint (`runner/checkpoint.py`; a run dir means its latest checkpoint),
rebuilds the training env (task + backend of the checkpoint's config; a policy trained on
MuJoCo Warp, backend=mjwarp, in CPU MuJoCo, the reference physics) and runs tanh(mean)
rollouts (`FlashSACLearner.act_deterministic`) until every env has finished its share of
`episodes` episodes, so short episodes are not over-represented. Per episode: return, length,
whether it terminated, the command, linear / angular velocity tracking errors and the tracking
rewards (the env's weighted reward terms, and as a fraction of their maximum). Writes
`eval.json` and, with render=true, `eval.gif` (one episode of env `render_env`, tracking camera)
and `eval_strip.png` (a few of its frames side by side) into `out_dir` (default: the run dir).
A checkpoint whose training ran with logger=wandb also gets its evaluation in that W&B run (the
GIF as the media eval/rollout, the goals as eval/* values, at the checkpoint's iteration);
wandb=false keeps it to eval.json.
`robustness=true` (or a list) adds conditions no training run saw, each reported in eval.json:
a push, link masses x0.8 / x1.2, commands at the edges of the training ranges
(flashsac_bench/evaluation/robustness.py).

Rendering uses `mujoco.Renderer` with the GL backend named by MUJOCO_GL, which this command
sets to `egl` when unset (NVIDIA EGL on a GPU machine, Mesa's software EGL on a CPU-only one);
`MUJOCO_GL=osmesa` needs libOSMesa (Debian/Ubuntu: libosmesa6). Without a working backend the
evaluation still completes: one message names the problem and eval.json records it.

A Hydra app (conf/evaluate.yaml; options: EvalConfig in flashsac_bench/evaluation/config.py):
`--help`, `--cfg job`, `-m checkpoint=a,b` (one evaluation per checkpoint); bad input, an
unreadable checkpoint of any job included, is one line on stderr before anything is written.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from flashsac_bench.cli.tool import Tool, run_tool
from flashsac_bench.config.backend import MujocoConfig
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.run import WALK_EPISODE_LENGTH, WALK_TRACKING_FRAC
from flashsac_bench.config.task import TaskConfig
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
    report_line,
    summarize,
)
from flashsac_bench.evaluation.rollout import Rollout, aggregate, rollout, step_metrics

if TYPE_CHECKING:
    from flashsac_bench.envs.api import EnvStep, VecEnv

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
    import torch

    from flashsac_bench.envs import TaskEnv, make_env
    from flashsac_bench.envs.api import VecEnv
    from flashsac_bench.evaluation.trained import load_trained_learner, trained_task
    from flashsac_bench.runner.summary import git_info, write_json

    device = _device(ec.device)
    t0 = time.perf_counter()
    trained = load_trained_learner(ec.checkpoint, device, ec.dtype)
    cfg, learner = trained.config, trained.learner
    _say(f"{trained.checkpoint} (iteration {trained.iteration}) on {device}")
    g1 = isinstance(cfg.task, TaskConfig)  # else a Gymnasium env: no G1 metrics, goals, camera
    if ec.render and isinstance(cfg.task, TaskConfig):
        frame_stride(cfg.task.ctrl_dt, ec.render_fps)  # a bad fps fails now, not after rollouts
    out_dir = output_dir(ec, trained.checkpoint)
    num_envs = min(ec.num_envs, ec.episodes)
    backend = _eval_backend(cfg, ec, num_envs)

    def policy(obs: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32)).to(learner.device)
        return learner.act_deterministic(x).float().cpu().numpy().astype(np.float64)

    # The envs step the model the checkpoint carries (an edited or deleted MJCF changes nothing).
    with trained_task(trained) as task:

        def metrics(out: EnvStep) -> dict[str, np.ndarray]:
            if not isinstance(task, TaskConfig):
                return {}
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
            envs: int,
            episodes: int,
            what: str,
            condition: Condition | None = None,
            render: bool = False,
        ) -> tuple[Rollout, dict[str, Any], dict[str, float]]:
            """(rollout, penalty-scale note, env metrics) in a fresh env of seed ec.seed: every
            run starts from the same states, so robustness conditions compare with nominal."""
            env = make_env(task, backend, envs, ec.seed)
            try:
                assert isinstance(env, VecEnv)  # CPU MuJoCo, the reference physics (see above)
                scale_note = _apply_penalty_scale(env, trained.payload, ec.penalty_scale)
                if condition is not None:
                    apply_condition(env, condition)
                render_env = ec.render_env
                record_steps = (
                    int(round(ec.render_seconds / task.ctrl_dt))
                    if render and isinstance(task, TaskConfig)
                    else 0
                )
                qpos = env.qpos if isinstance(env, TaskEnv) else None
                record = (lambda: qpos[render_env].copy()) if qpos is not None else None
                result = rollout(
                    env,
                    policy,
                    episodes,
                    metrics,
                    record=record,
                    record_env=render_env,
                    record_steps=record_steps,
                    progress=_RolloutProgress(what, episodes),
                )
                return result, scale_note, env.metrics()
            finally:
                env.close()

        t_roll = time.perf_counter()
        result, scale_note, final_env_metrics = run(
            num_envs, ec.episodes, f"rollouts on {num_envs} envs", render=ec.render
        )
        rollout_s = time.perf_counter() - t_roll
        robustness: dict[str, Any] = {}
        for name in ec.robustness:
            assert isinstance(task, TaskConfig)  # _check: the G1's conditions
            cond = make_condition(name, task, ec.push_step, ec.push_velocity)
            if name == "nominal":  # the rollout above, exactly: not run twice
                episodes = result.episodes
            else:
                n_episodes, n_envs = env_layout(cond, ec.episodes, ec.num_envs)
                episodes = run(n_envs, n_episodes, f"robustness {name}", cond)[0].episodes
            robustness[name] = summarize(cond, episodes, task.max_episode_steps)

        summary = aggregate(result.episodes)
        length = summary["length"]["mean"]
        frac = summary.get("tracking_lin_vel_frac_mean", {}).get("mean")
        report: dict[str, Any] = {
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
            "penalty_scale": scale_note,
            "penalty_scale_end": final_env_metrics.get("curriculum/penalty_scale"),
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
        if not g1:  # the walking goals are the G1's
            report["goals"] = None
        if robustness:  # only when asked: eval.json without the option stays as it was
            report["robustness"] = robustness
        out_dir.mkdir(parents=True, exist_ok=True)  # after the rollouts: a failure writes nothing
        if kept := keep_earlier_evaluation(out_dir):
            _say(f"the earlier evaluation in {out_dir} is kept in {kept}")
        if ec.render and not g1:
            _say(f"rendering one episode of {cfg.task.name} (seed {ec.seed}) ...")
            rendered = render_gymnasium_episode(task, policy, ec, out_dir)
        elif ec.render:
            _say(f"rendering {len(result.frames)} states of env {ec.render_env} ...")
            rendered = render_episode(task, result.frames, ec, out_dir)
        else:
            rendered = {"ok": False}
    report["render"] = rendered
    report["wall_s"] = time.perf_counter() - t0
    saved = wandb_state(ec, trained.payload, cfg)
    if saved is not None:
        report["wandb_run_id"] = saved["wandb_run_id"]  # the W&B run it goes to
    write_json(out_dir / EVAL_NAME, report)
    report["path"] = str(out_dir / EVAL_NAME)
    if saved is not None:  # after eval.json: the evaluation stands whatever W&B does
        _log_to_wandb(trained, report, saved)
    return report


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


def _device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


# What one evaluation writes into its out_dir; an earlier one's are moved aside, never replaced.
EVAL_FILES = (EVAL_NAME, GIF_NAME, STRIP_NAME)


def output_dir(ec: EvalConfig, checkpoint: Path) -> Path:
    """Where the evaluation goes (default: the checkpoint's run dir); ConfigError when one of its
    files would be the checkpoint itself or a run's checkpoint file (cli.outputs)."""
    from flashsac_bench.cli.outputs import refuse_overwriting
    from flashsac_bench.evaluation.trained import run_dir_of

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
    from flashsac_bench.envs.api import TaskEnv

    if not isinstance(env, TaskEnv):
        return {"mode": "initial", "value": None, "note": "env has no penalty curriculum"}
    saved = (payload.get("env") or {}).get("penalty_scale")
    if mode == "initial" or saved is None:
        return {"mode": "initial", "value": env.penalty_scale}
    env.penalty_scale = float(saved)
    return {"mode": "checkpoint", "value": float(saved)}


# ---------------------------------------------------------------------------- CLI
def _check(ec: EvalConfig) -> None:
    """Before any job runs (all of a sweep's): this machine has the device, the checkpoint is
    a readable one whose tensors fit its config and whose control rate the render_fps divides,
    and out_dir can be written."""
    from flashsac_bench.cli.runtime_checks import check_stored_model
    from flashsac_bench.cli.writable import probe_writable
    from flashsac_bench.config.acting import acting_config
    from flashsac_bench.config.hardware import HardwareConfig
    from flashsac_bench.evaluation.trained import load_trained_learner

    try:
        HardwareConfig(name="eval", device=ec.device).check_available()
    except ConfigError:
        import torch

        raise ConfigError(
            f"device={ec.device} needs a CUDA device this torch {torch.__version__} does not "
            "see; pass device=cpu or device=auto"
        ) from None
    trained = load_trained_learner(ec.checkpoint)  # its tensors fit its config, it acts
    check_stored_model(trained)
    path, payload = trained.checkpoint, trained.payload
    cfg = acting_config(payload)
    if ec.robustness and not isinstance(cfg.task, TaskConfig):
        raise ConfigError(
            f"robustness: its conditions (pushes, link masses, commands) are the G1's, and the "
            f"checkpoint's task is {cfg.task.name}: pass robustness=false"
        )
    if ec.render and isinstance(cfg.task, TaskConfig):
        try:
            frame_stride(cfg.task.ctrl_dt, ec.render_fps)
        except ValueError as err:
            raise ConfigError(str(err)) from None
    out_dir = output_dir(ec, path)
    if problem := probe_writable(out_dir):
        raise ConfigError(problem.replace("the run dir", "out_dir"))
    if wandb_state(ec, payload, cfg) is not None:
        from flashsac_bench.config.logger import LoggerConfig

        try:
            LoggerConfig(name="wandb").check_available()
        except ConfigError as err:
            raise ConfigError(
                f"the checkpoint's run logged to W&B, and its evaluation goes there too: {err}; "
                "wandb=false evaluates without it"
            ) from None


def _job(ec: EvalConfig, composed: dict[str, Any]) -> int:
    report = evaluate(ec)
    s = report["summary"]
    line = (
        f"{s['episodes']} episodes: return {s['return']['mean']:.2f} ± {s['return']['std']:.2f}, "
        f"length {s['length']['mean']:.1f}"
    )
    if "lin_vel_error_mean" in s:  # the G1's tracking
        line += (
            f", lin-vel error {s['lin_vel_error_mean']['mean']:.3f} m/s (tracking "
            f"{_pct(s['tracking_lin_vel_frac_mean']['mean'])} of max), ang-vel error "
            f"{s['ang_vel_error_mean']['mean']:.3f} rad/s (tracking "
            f"{_pct(s['tracking_ang_vel_frac_mean']['mean'])})"
        )
    print(line)
    if report.get("robustness"):
        print("robustness (docs/evaluation.md):")
        for name, rec in report["robustness"].items():
            print(report_line(name, rec))
    if report["render"].get("ok"):
        print(f"video: {report['render']['gif']}  strip: {report['render']['strip']}")
    print(f"report: {report['path']}")
    if report.get("wandb_run_id"):
        print(f"W&B: run {report['wandb_run_id']} (eval/rollout, eval/*)")
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{100 * x:.1f}%"


TOOL = Tool(
    prog="flashsac_bench.evaluate",
    config_name="evaluate",
    schema_name="flashsac_bench_evaluate_schema",
    schema=EvalConfig,
    job=_job,
    required={"checkpoint": "<run dir, checkpoints dir or .pt>"},
    check=_check,
)


def main() -> None:
    # Before MuJoCo is imported (by a job): its GL backend is chosen at import time.
    if "mujoco" not in sys.modules:
        os.environ.setdefault("MUJOCO_GL", "egl")
    run_tool(TOOL)
