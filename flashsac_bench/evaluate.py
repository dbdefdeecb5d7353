"""Deterministic evaluation of a trained policy, with an offscreen video of one episode.

    python -m flashsac_bench.evaluate checkpoint=<run dir or .pt> [key=value ...]

Loads a runner checkpoint (`runner/checkpoint.py`; a run dir means its latest checkpoint),
rebuilds the training env (task + backend of the checkpoint's config) and runs tanh(mean)
rollouts (`FlashSACLearner.act_deterministic`) until every env has finished its share of
`episodes` episodes, so short episodes are not over-represented. Per episode: return, length,
whether it terminated, the command, linear / angular velocity tracking errors and the tracking
rewards (the env's weighted reward terms, and as a fraction of their maximum). Writes
`eval.json` and, with render=true, `eval.gif` (one episode of env `render_env`, tracking camera)
and `eval_strip.png` (a few of its frames side by side) into `out_dir` (default: the run dir).

Rendering uses `mujoco.Renderer` with the GL backend named by MUJOCO_GL, which this command
sets to `egl` when unset (NVIDIA EGL on a GPU machine, Mesa's software EGL on a CPU-only one);
`MUJOCO_GL=osmesa` needs libOSMesa (Debian/Ubuntu: libosmesa6). Without a working backend the
evaluation still completes: one message names the problem and eval.json records it.

Options (key=value, OmegaConf-typed; unknown keys are an error): see `EvalConfig`.
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from flashsac_bench.envs.api import EnvStep, VecEnv

# Observation slices and scales of G1 Walk Flat (flashsac_bench/envs/g1_walk_flat.py), restated
# so that importing this module does not load MuJoCo before MUJOCO_GL is set (see main()).
GYRO, COMMAND, LIN_VEL = slice(0, 3), slice(93, 96), slice(98, 101)
EVAL_NAME, GIF_NAME, STRIP_NAME = "eval.json", "eval.gif", "eval_strip.png"
EVAL_FORMAT = 1
# The issue-6 targets, applied to the deterministic evaluation.
GOAL_EPISODE_LENGTH = 900.0
GOAL_LIN_VEL_TRACKING_FRAC = 0.8


@dataclass
class EvalConfig:
    checkpoint: str = "???"  # run dir, checkpoints dir or iter_*.pt (required)
    episodes: int = 8
    num_envs: int = 8  # envs stepped together (at most `episodes`)
    seed: int = 12345  # env seed (resets, commands, observation noise)
    device: str = "cpu"  # where the policy runs: cpu, cuda, auto
    dtype: str = "float32"  # policy matmuls: float32, bfloat16, checkpoint (= training dtype)
    # MuJoCo threads of the in-process pool (forces backend.mode=threads); 0: the checkpoint's
    # backend setting (worker processes or threads, as in training).
    threads: int = 0
    # The penalty-curriculum scale to evaluate with: "checkpoint" (the training env's, so that
    # returns compare with training) or "initial" (the task's initial_scale).
    penalty_scale: str = "checkpoint"
    out_dir: str | None = None  # default: the run dir of the checkpoint
    render: bool = True
    render_env: int = 0
    render_seconds: float = 8.0  # at most this much of the env's first episode
    render_fps: int = 25  # must divide the control rate (50 Hz for G1)
    width: int = 320
    height: int = 240
    camera_distance: float = 3.0
    camera_elevation: float = -15.0
    camera_azimuth: float = 135.0
    strip_frames: int = 6


class RenderUnavailableError(RuntimeError):
    """No usable offscreen GL context (the message says what to set)."""


# ---------------------------------------------------------------------------- per-step metrics
def step_metrics(
    critic_obs: np.ndarray,
    reward_terms: dict[str, np.ndarray],
    *,
    lin_vel_scale: float,
    gyro_scale: float,
    tracking_sigma: float,
    lin_weight: float,
    ang_weight: float,
    ctrl_dt: float,
) -> dict[str, np.ndarray]:
    """Tracking quantities of one vector step from its (noise-free) critic observation.

    lin_vel_error: |cmd_xy - v_xy| (m/s, pelvis frame); ang_vel_error: |cmd_wz - gyro_z| (rad/s).
    tracking_*: the env's weighted reward terms; tracking_*_frac: the same divided by their
    maximum (weight * ctrl_dt), i.e. the unweighted kernel exp(-err^2 / sigma) in [0, 1]
    (computed from the errors where the weight is 0).
    """
    c = np.asarray(critic_obs, dtype=np.float64)
    cmd = c[:, COMMAND]
    v = c[:, LIN_VEL] / lin_vel_scale
    wz = c[:, GYRO][:, 2] / gyro_scale
    lin_err = np.linalg.norm(cmd[:, :2] - v[:, :2], axis=1)
    ang_err = np.abs(cmd[:, 2] - wz)
    out = {"lin_vel_error": lin_err, "ang_vel_error": ang_err}
    for name, err, w in (("lin_vel", lin_err, lin_weight), ("ang_vel", ang_err, ang_weight)):
        term = np.asarray(reward_terms.get(f"tracking_{name}", np.zeros(len(c))), np.float64)
        out[f"tracking_{name}"] = term
        top = w * ctrl_dt
        out[f"tracking_{name}_frac"] = (
            term / top if top != 0 else np.exp(-np.square(err) / tracking_sigma)
        )
    return out


# ---------------------------------------------------------------------------- rollouts
@dataclass
class Rollout:
    episodes: list[dict[str, Any]]
    steps: int
    frames: list[np.ndarray]  # recorded states of env `record_env` (its first episode)


def episode_quotas(episodes: int, num_envs: int) -> np.ndarray:
    """How many episodes each env contributes (fixed up front: no bias toward short ones)."""
    base, rest = divmod(episodes, num_envs)
    return np.array([base + (i < rest) for i in range(num_envs)], dtype=np.int64)


def rollout(
    env: VecEnv,
    policy: Callable[[np.ndarray], np.ndarray],
    episodes: int,
    metrics: Callable[[EnvStep], dict[str, np.ndarray]],
    *,
    record: Callable[[], np.ndarray] | None = None,
    record_env: int = 0,
    record_steps: int = 0,
    max_episode_steps: int | None = None,
) -> Rollout:
    """Step all envs with `policy(obs)` until each has finished its quota of episodes.

    `metrics(step)` returns per-env arrays that are averaged over each episode. `record()`
    (optional) returns a state to keep for rendering: called once before the first step and
    after every step until env `record_env` ends its first episode or `record_steps` are kept.
    """
    n = env.num_envs
    quota = episode_quotas(episodes, n)
    limit = int(quota.max()) * int(max_episode_steps or env.max_episode_steps) + 1
    sums: dict[str, np.ndarray] = {}
    steps_in = np.zeros(n, dtype=np.int64)
    done_list: list[dict[str, Any]] = []
    obs = env.reset()[0]
    recording = record is not None and record_steps > 0
    frames = [record()] if recording else []
    steps = 0
    while (quota > 0).any():
        if steps >= limit:
            raise RuntimeError(f"episodes did not end within {limit} steps")
        out = env.step(policy(obs))
        steps += 1
        per_step = metrics(out)
        per_step["reward"] = np.asarray(out.reward, np.float64)
        for key, value in per_step.items():
            sums.setdefault(key, np.zeros(n))
            sums[key] += value
        steps_in += 1
        finished = np.asarray(out.terminated) | np.asarray(out.truncated)
        if recording:
            if finished[record_env] or len(frames) >= record_steps:
                recording = False
            else:
                frames.append(record())
        for i in np.flatnonzero(finished):
            if quota[i] > 0:
                done_list.append(_episode_record(i, out, sums, int(steps_in[i])))
                quota[i] -= 1
            for value in sums.values():
                value[i] = 0.0
            steps_in[i] = 0
        obs = out.obs
    return Rollout(done_list, steps, frames)


def _episode_record(
    i: int, out: EnvStep, sums: dict[str, np.ndarray], steps: int
) -> dict[str, Any]:
    length = int(out.episode_length[i])
    rec: dict[str, Any] = {
        "env": int(i),
        "length": length,
        "return": float(out.episode_return[i]),
        "terminated": bool(out.terminated[i]),
        "summed_reward": float(sums["reward"][i]),
    }
    if out.final_critic_obs.shape[1] >= COMMAND.stop:
        rec["command"] = [float(x) for x in out.final_critic_obs[i, COMMAND]]
    for key, value in sums.items():
        if key != "reward":
            rec[f"{key}_mean"] = float(value[i] / max(steps, 1))
    return rec


def aggregate(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """mean / std / min / max over episodes of every numeric per-episode value."""
    keys = [k for k, v in episodes[0].items() if isinstance(v, int | float) and k != "env"]
    out: dict[str, Any] = {"episodes": len(episodes)}
    for key in keys:
        vals = np.array([float(e[key]) for e in episodes])
        out[key] = {
            "mean": float(vals.mean()),
            "std": float(vals.std(ddof=1)) if len(vals) > 1 else 0.0,
            "min": float(vals.min()),
            "max": float(vals.max()),
        }
    return out


# ---------------------------------------------------------------------------- rendering
def render_model(task_cfg: Any) -> Any:
    """The task's model with a lit checker floor, a sky and coloured robot geoms (visual only:
    qpos is laid out exactly as in the env's model)."""
    import mujoco

    from flashsac_bench.envs.g1_model import task_spec

    spec = task_spec(task_cfg.model_file)
    builtin = task_cfg.model_file is None
    light = spec.visual.headlight
    light.ambient, light.diffuse, light.specular = [0.35] * 3, [0.55] * 3, [0.1] * 3
    spec.add_texture(
        name="eval_grid",
        type=mujoco.mjtTexture.mjTEXTURE_2D,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
        rgb1=[0.22, 0.25, 0.30],
        rgb2=[0.30, 0.34, 0.40],
        width=300,
        height=300,
        mark=mujoco.mjtMark.mjMARK_EDGE,
        markrgb=[0.5, 0.5, 0.55],
    )
    grid = spec.add_material(name="eval_grid", texuniform=True, reflectance=0.1)
    grid.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "eval_grid"
    spec.add_texture(
        name="eval_sky",
        type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
        rgb1=[0.55, 0.65, 0.8],
        rgb2=[0.1, 0.12, 0.15],
        width=256,
        height=256,
    )
    for geom in spec.geoms:
        if geom.name == "floor":
            geom.material = "eval_grid"
        elif builtin:  # the built-in G1 has only grey collision primitives
            geom.rgba = [0.8, 0.6, 0.35, 1.0]
    spec.worldbody.add_light(
        name="eval_sun",
        pos=[0, 0, 5],
        dir=[0, 0, -1],
        type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL,
        diffuse=[0.6] * 3,
        castshadow=True,
    )
    return spec.compile()


def render_frames(task_cfg: Any, states: list[np.ndarray], ec: EvalConfig) -> list[np.ndarray]:
    """RGB frames [H, W, 3] of the recorded qpos states (every ctrl_rate / fps-th state)."""
    import mujoco

    model = render_model(task_cfg)
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, ec.width)
    model.vis.global_.offheight = max(model.vis.global_.offheight, ec.height)
    try:
        with warnings.catch_warnings():
            # Windowing backends warn on their way to failing; the error below says it once.
            warnings.simplefilter("ignore")
            renderer = mujoco.Renderer(model, ec.height, ec.width)
    except Exception as err:  # any GL failure means: no usable backend (ImportError, FatalError)
        gl = os.environ.get("MUJOCO_GL")
        raise RenderUnavailableError(
            f"offscreen rendering unavailable with MUJOCO_GL={gl!r} "
            f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); set "
            "MUJOCO_GL=egl (GPU, or Mesa's EGL) or MUJOCO_GL=osmesa (CPU, needs libosmesa6), "
            "or pass render=false"
        ) from err
    data = mujoco.MjData(model)
    option = mujoco.MjvOption()
    # The built-in G1's geoms are collision geoms (group 3, hidden by default).
    option.geomgroup[3] = 1
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
    camera.trackbodyid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "pelvis")
    camera.distance = ec.camera_distance
    camera.elevation = ec.camera_elevation
    camera.azimuth = ec.camera_azimuth
    stride = frame_stride(task_cfg.ctrl_dt, ec.render_fps)
    frames = []
    try:
        for qpos in states[::stride]:
            data.qpos[:] = qpos
            mujoco.mj_forward(model, data)
            renderer.update_scene(data, camera, option)
            frames.append(renderer.render().copy())
    finally:
        renderer.close()  # explicitly: some backends fail in __del__ at interpreter exit
    return frames


def frame_stride(ctrl_dt: float, fps: int) -> int:
    rate = 1.0 / ctrl_dt
    stride = rate / fps
    if fps < 1 or abs(stride - round(stride)) > 1e-9 or round(stride) < 1:
        raise ValueError(f"render_fps={fps} must divide the control rate {rate:g} Hz")
    return int(round(stride))


def write_gif(frames: list[np.ndarray], path: Path, fps: int) -> Path:
    from PIL import Image

    images = [Image.fromarray(f) for f in frames]
    # One palette for all frames keeps the file small and the colours steady.
    palette = images[len(images) // 2].quantize(colors=128)
    quantized = [im.quantize(palette=palette, dither=Image.Dither.NONE) for im in images]
    quantized[0].save(
        path,
        save_all=True,
        append_images=quantized[1:],
        duration=round(1000 / fps),
        loop=0,
        optimize=False,
    )
    return path


def write_strip(frames: list[np.ndarray], path: Path, count: int) -> Path:
    from PIL import Image

    picks = np.linspace(0, len(frames) - 1, num=min(count, len(frames))).round().astype(int)
    Image.fromarray(np.concatenate([frames[i] for i in picks], axis=1)).save(path)
    return path


# ---------------------------------------------------------------------------- the command
def evaluate(ec: EvalConfig) -> dict[str, Any]:
    import torch

    from flashsac_bench.envs import TaskEnv, make_env
    from flashsac_bench.export import load_trained_learner, run_dir_of
    from flashsac_bench.runner.summary import git_info, write_json

    if ec.episodes < 1 or ec.num_envs < 1:
        raise ValueError("episodes and num_envs must be >= 1")
    if ec.penalty_scale not in ("checkpoint", "initial"):
        raise ValueError(f"penalty_scale must be checkpoint or initial, got {ec.penalty_scale!r}")
    device = ec.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    t0 = time.perf_counter()
    trained = load_trained_learner(ec.checkpoint, device, ec.dtype)
    cfg, learner = trained.config, trained.learner
    if ec.render:
        frame_stride(cfg.task.ctrl_dt, ec.render_fps)  # a bad fps fails now, not after rollouts
    out_dir = Path(ec.out_dir) if ec.out_dir else run_dir_of(trained.checkpoint)
    out_dir.mkdir(parents=True, exist_ok=True)
    num_envs = min(ec.num_envs, ec.episodes)
    backend = cfg.backend
    if ec.threads > 0:
        backend = type(backend)(
            **{**asdict(backend), "mode": "threads", "workers": 0, "num_threads": ec.threads}
        )
    env = make_env(cfg.task, backend, num_envs, ec.seed)
    scale_note = _apply_penalty_scale(env, trained.payload, ec.penalty_scale)
    task = cfg.task

    def policy(obs: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32)).to(learner.device)
        return learner.act_deterministic(x).float().cpu().numpy().astype(np.float64)

    def metrics(out: EnvStep) -> dict[str, np.ndarray]:
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

    render_env = min(max(ec.render_env, 0), num_envs - 1)
    record_steps = int(round(ec.render_seconds / task.ctrl_dt)) if ec.render else 0
    qpos = env.qpos if isinstance(env, TaskEnv) else None
    record = (lambda: qpos[render_env].copy()) if qpos is not None else None
    t_roll = time.perf_counter()
    try:
        result = rollout(
            env,
            policy,
            ec.episodes,
            metrics,
            record=record,
            record_env=render_env,
            record_steps=record_steps,
        )
        final_env_metrics = env.metrics()
    finally:
        env.close()
    rollout_s = time.perf_counter() - t_roll

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
        "task": asdict(task),
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
            "note": "issue-6 targets applied to this deterministic evaluation",
        },
        "episodes": result.episodes,
        "git": git_info(),
    }
    report["render"] = _render(task, result.frames, ec, out_dir) if ec.render else {"ok": False}
    report["wall_s"] = time.perf_counter() - t0
    write_json(out_dir / EVAL_NAME, report)
    report["path"] = str(out_dir / EVAL_NAME)
    return report


def _apply_penalty_scale(env: VecEnv, payload: dict[str, Any], mode: str) -> dict[str, Any]:
    from flashsac_bench.envs.api import TaskEnv

    if not isinstance(env, TaskEnv):
        return {"mode": "initial", "value": None, "note": "env has no penalty curriculum"}
    saved = (payload.get("env") or {}).get("penalty_scale")
    if mode == "initial" or saved is None:
        return {"mode": "initial", "value": env.penalty_scale}
    env.penalty_scale = float(saved)
    return {"mode": "checkpoint", "value": float(saved)}


def _render(task: Any, states: list[np.ndarray], ec: EvalConfig, out_dir: Path) -> dict[str, Any]:
    if not states:
        return {"ok": False, "reason": "no states recorded (env without physics access)"}
    t = time.perf_counter()
    try:
        frames = render_frames(task, states, ec)
    except RenderUnavailableError as err:
        print(f"flashsac_bench.evaluate: rendering skipped: {err}", file=sys.stderr)
        return {"ok": False, "reason": str(err), "mujoco_gl": os.environ.get("MUJOCO_GL")}
    gif = write_gif(frames, out_dir / GIF_NAME, ec.render_fps)
    strip = write_strip(frames, out_dir / STRIP_NAME, ec.strip_frames)
    return {
        "ok": True,
        "mujoco_gl": os.environ.get("MUJOCO_GL"),
        "gif": str(gif),
        "strip": str(strip),
        "frames": len(frames),
        "fps": ec.render_fps,
        "seconds": len(frames) / ec.render_fps,
        "render_s": time.perf_counter() - t,
    }


def parse_args(argv: list[str]) -> EvalConfig:
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        merged = OmegaConf.merge(OmegaConf.structured(EvalConfig), OmegaConf.from_dotlist(argv))
        ec = OmegaConf.to_object(merged)
    except OmegaConfBaseException as err:
        raise SystemExit(f"flashsac_bench.evaluate: invalid option: {err}") from None
    assert isinstance(ec, EvalConfig)
    return ec


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        print("\n".join(f"  {k}={v!r}" for k, v in asdict(EvalConfig()).items()))
        return 0
    # Must happen before MuJoCo is imported: its GL backend is chosen at import time.
    if "mujoco" not in sys.modules:
        os.environ.setdefault("MUJOCO_GL", "egl")
    ec = parse_args(argv)
    if ec.checkpoint == "???":
        print("flashsac_bench.evaluate: checkpoint=<run dir or .pt> is required", file=sys.stderr)
        return 2
    report = evaluate(ec)
    s = report["summary"]
    print(
        f"{s['episodes']} episodes: return {s['return']['mean']:.2f} ± {s['return']['std']:.2f}, "
        f"length {s['length']['mean']:.1f}, lin-vel error "
        f"{s['lin_vel_error_mean']['mean']:.3f} m/s (tracking "
        f"{_pct(s['tracking_lin_vel_frac_mean']['mean'])} of max), ang-vel error "
        f"{s['ang_vel_error_mean']['mean']:.3f} rad/s (tracking "
        f"{_pct(s['tracking_ang_vel_frac_mean']['mean'])})"
    )
    if report["render"].get("ok"):
        print(f"video: {report['render']['gif']}  strip: {report['render']['strip']}")
    print(f"report: {report['path']}")
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{100 * x:.1f}%"


if __name__ == "__main__":
    from flashsac_bench.cli_errors import run_main

    raise SystemExit(run_main(main, "flashsac_bench.evaluate"))
