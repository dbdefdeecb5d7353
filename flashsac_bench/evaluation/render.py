"""Offscreen rendering of recorded states: a GIF and a strip of frames (mujoco.Renderer)."""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from flashsac_bench.evaluation.config import EvalConfig

GIF_NAME, STRIP_NAME = "eval.gif", "eval_strip.png"


class RenderUnavailableError(RuntimeError):
    """No usable offscreen GL context (the message says what to set)."""


def unavailable(err: BaseException) -> RenderUnavailableError:
    """The error of a renderer that could not be made (`err`: why), saying what to set."""
    gl = os.environ.get("MUJOCO_GL")
    return RenderUnavailableError(
        f"offscreen rendering unavailable with MUJOCO_GL={gl!r} "
        f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); set "
        "MUJOCO_GL=egl (GPU, or Mesa's EGL) or MUJOCO_GL=osmesa (CPU, needs libosmesa6), "
        "or pass render=false"
    )


def render_model(task_cfg: Any) -> Any:
    """The task's model with a lit checker floor, a sky and coloured robot geoms (visual only:
    qpos is laid out exactly as in the env's model)."""
    import mujoco

    from flashsac_bench.envs.g1.model import task_spec

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
        raise unavailable(err) from err
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


def write_gif(frames: list[np.ndarray], path: Path, fps: float) -> Path:
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


def render_episode(
    task_cfg: Any, states: list[np.ndarray], ec: EvalConfig, out_dir: Path
) -> dict[str, Any]:
    """eval.gif and eval_strip.png of the recorded states; without a GL backend one message
    and the reason in the returned record (the evaluation itself still completes)."""
    if not states:
        return {"ok": False, "reason": "no states recorded (env without physics access)"}
    t = time.perf_counter()
    try:
        frames = render_frames(task_cfg, states, ec)
    except RenderUnavailableError as err:
        return render_skipped(err)
    return write_episode(frames, ec.render_fps, ec, out_dir, t)


def render_skipped(err: BaseException) -> dict[str, Any]:
    """The record of a rendering that found no usable GL backend (one message says so)."""
    print(f"flashsac_bench.evaluate: rendering skipped: {err}", file=sys.stderr)
    return {"ok": False, "reason": str(err), "mujoco_gl": os.environ.get("MUJOCO_GL")}


def write_episode(
    frames: list[np.ndarray], fps: float, ec: EvalConfig, out_dir: Path, t0: float
) -> dict[str, Any]:
    """eval.gif (`fps` frames per second) and eval_strip.png of rendered frames, and their
    record; t0: when the rendering began."""
    gif = write_gif(frames, out_dir / GIF_NAME, fps)
    strip = write_strip(frames, out_dir / STRIP_NAME, ec.strip_frames)
    return {
        "ok": True,
        "mujoco_gl": os.environ.get("MUJOCO_GL"),
        "gif": str(gif),
        "strip": str(strip),
        "frames": len(frames),
        "fps": fps,
        "seconds": len(frames) / fps,
        "render_s": time.perf_counter() - t0,
    }


def render_gymnasium_episode(
    task_cfg: Any, policy: Any, ec: EvalConfig, out_dir: Path
) -> dict[str, Any]:
    """task=gymnasium: eval.gif and eval_strip.png of one episode of a fresh env (seeded
    ec.seed, the policy acting), rendered by the env itself (rgb_array) at ec.width x
    ec.height, every k-th step for about ec.render_fps frames per second of the env's time."""
    from flashsac_bench.envs.gymnasium.env import check_task, record_episode

    t = time.perf_counter()
    dt = check_task(task_cfg).dt or 1.0 / ec.render_fps
    stride = max(1, round(1.0 / (dt * ec.render_fps)))
    steps = max(1, int(round(ec.render_seconds / dt)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # windowing backends warn on their way to failing
            frames, _ = record_episode(task_cfg, policy, ec.seed, steps, ec.width, ec.height)
    except Exception as err:  # noqa: BLE001 - any GL failure means: no usable backend
        return render_skipped(unavailable(err))
    return write_episode(frames[::stride], 1.0 / (dt * stride), ec, out_dir, t)
