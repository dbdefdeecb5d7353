"""flashsac_bench.evaluate and flashsac_bench.evaluation: metrics, episodes, the CLI, rendering."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from flashsac_bench.cli.errors import UsageError
from flashsac_bench.cli.evaluate import TOOL
from flashsac_bench.cli.tool import compose_options
from flashsac_bench.config import to_config
from flashsac_bench.evaluation.config import EvalConfig
from flashsac_bench.evaluation.render import frame_stride
from flashsac_bench.evaluation.rollout import episode_quotas, rollout, step_metrics

SIGMA = 0.25
KW = dict(lin_vel_scale=2.0, gyro_scale=0.25, tracking_sigma=SIGMA, ctrl_dt=0.02)


def test_step_metrics_by_hand():
    c = np.zeros((2, 101), dtype=np.float32)
    c[0, 93:96] = (0.5, 0.0, 0.2)  # command vx, vy, wz
    c[0, 98:101] = 2.0 * np.array([0.3, 0.1, 0.0])  # pelvis velocity, scaled by 2 in the obs
    c[0, 2] = 0.25 * 0.5  # torso gyro z, scaled by 0.25
    c[1, 93:96] = (0.4, -0.2, -0.6)
    c[1, 98:101] = 2.0 * np.array([0.4, -0.2, 0.7])
    c[1, 2] = 0.25 * -0.6
    # |(0.5, 0) - (0.3, 0.1)| = sqrt(0.05); |0.2 - 0.5| = 0.3; env 1 tracks perfectly.
    lin_err = np.array([math.sqrt(0.05), 0.0])
    ang_err = np.array([0.3, 0.0])
    kernel = np.exp(-np.square(lin_err) / SIGMA)  # exp(-0.2) = 0.8187...
    terms = {"tracking_lin_vel": 2.0 * 0.02 * kernel, "tracking_ang_vel": np.array([0.0, 0.03])}
    m = step_metrics(c, terms, lin_weight=2.0, ang_weight=1.5, **KW)
    np.testing.assert_allclose(m["lin_vel_error"], lin_err, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(m["ang_vel_error"], ang_err, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(m["tracking_lin_vel_frac"], [0.8187307531, 1.0], rtol=1e-6)
    np.testing.assert_allclose(m["tracking_ang_vel_frac"], [0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(m["tracking_lin_vel"], terms["tracking_lin_vel"])
    # A zero weight: the fraction comes from the error itself.
    m0 = step_metrics(c, terms, lin_weight=0.0, ang_weight=0.0, **KW)
    np.testing.assert_allclose(m0["tracking_ang_vel_frac"], [math.exp(-0.09 / SIGMA), 1.0])


def test_tracking_from_observations_agrees_with_the_env_rewards():
    """The errors read from the critic observation reproduce the env's own tracking rewards
    (computed from the sensors): the observation slices and scales are the env's."""
    from flashsac_bench.envs import make_env

    cfg = to_config({"backend": {"num_threads": 1}})
    task = cfg.task
    env = make_env(task, cfg.backend, 4, seed=5)
    rng = np.random.default_rng(0)
    try:
        env.reset()
        checked = 0
        for _ in range(40):
            out = env.step(rng.uniform(-0.5, 0.5, size=(4, 29)))
            m = step_metrics(
                out.final_critic_obs,
                out.reward_terms,
                lin_weight=task.rewards.tracking_lin_vel,
                ang_weight=task.rewards.tracking_ang_vel,
                lin_vel_scale=task.obs.lin_vel_scale,
                gyro_scale=task.obs.gyro_scale,
                tracking_sigma=task.tracking_sigma,
                ctrl_dt=task.ctrl_dt,
            )
            for name in ("lin_vel", "ang_vel"):
                from_err = np.exp(-np.square(m[f"{name}_error"]) / task.tracking_sigma)
                # float32 observations: ~1e-7 relative in the errors
                np.testing.assert_allclose(m[f"tracking_{name}_frac"], from_err, atol=2e-5)
            checked += 4
        assert checked == 160
    finally:
        env.close()


def test_episode_quotas():
    assert episode_quotas(5, 2).tolist() == [3, 2]
    assert episode_quotas(2, 3).tolist() == [1, 1, 0]
    assert episode_quotas(8, 8).tolist() == [1] * 8


@dataclass
class _Step:
    obs: np.ndarray
    final_critic_obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    reward_terms: dict
    episode_return: np.ndarray
    episode_length: np.ndarray


class _CountingEnv:
    """Env i ends every lengths[i] steps (terminated), reward 1 + 0.1 i per step."""

    max_episode_steps = 100

    def __init__(self, lengths: list[int]) -> None:
        self.lengths = np.array(lengths)
        self.num_envs = len(lengths)
        self.t = np.zeros(self.num_envs, dtype=np.int64)
        self.ret = np.zeros(self.num_envs)
        self.ticks = 0

    def reset(self):
        self.t[:] = 0
        self.ret[:] = 0
        return np.zeros((self.num_envs, 3)), None

    def step(self, actions):
        assert actions.shape == (self.num_envs, 2)
        self.ticks += 1
        self.t += 1
        reward = 1.0 + 0.1 * np.arange(self.num_envs)
        self.ret += reward
        done = self.t >= self.lengths
        out = _Step(
            obs=np.zeros((self.num_envs, 3)),
            final_critic_obs=np.zeros((self.num_envs, 4)),
            reward=reward,
            terminated=done.copy(),
            truncated=np.zeros(self.num_envs, bool),
            reward_terms={},
            episode_return=self.ret.copy(),
            episode_length=self.t.copy(),
        )
        self.t[done] = 0
        self.ret[done] = 0
        return out


def test_rollout_counts_fixed_episode_quotas_and_records_one_episode():
    env = _CountingEnv([3, 5])

    def metrics(out):
        return {"lin_vel_error": np.full(env.num_envs, 0.5) + env.ticks}

    res = rollout(
        env,
        lambda obs: np.zeros((len(obs), 2)),
        5,
        metrics,
        record=lambda: env.ticks,
        record_env=1,
        record_steps=100,
    )
    # quotas [3, 2]: env 0 needs 9 steps, env 1 needs 10.
    assert res.steps == 10
    got = sorted((e["env"], e["length"], round(e["return"], 9)) for e in res.episodes)
    assert got == [(0, 3, 3.0)] * 3 + [(1, 5, 5.5)] * 2
    for e in res.episodes:
        assert e["summed_reward"] == pytest.approx(e["return"])
    # env 0's first episode covers ticks 1..3: mean of 0.5 + tick = 2.5
    first = next(e for e in res.episodes if e["env"] == 0)
    assert first["lin_vel_error_mean"] == pytest.approx(2.5)
    # env 1's first episode: the state before it (tick 0) and after ticks 1..4; tick 5 ended it.
    assert res.frames == [0, 1, 2, 3, 4]


def test_frame_stride_divides_the_control_rate():
    assert frame_stride(0.02, 25) == 2 and frame_stride(0.02, 50) == 1
    with pytest.raises(ValueError, match="must divide"):
        frame_stride(0.02, 20)


def _options(overrides: list[str]) -> EvalConfig:
    # As the command line composes them (conf/evaluate.yaml), without reading the checkpoint.
    return compose_options(TOOL, overrides, check=False)


def test_options_are_typed():
    ec = _options(["checkpoint=/x", "episodes=3", "render=false"])
    assert (ec.checkpoint, ec.episodes, ec.render) == ("/x", 3, False)
    with pytest.raises(UsageError, match="invalid configuration"):
        _options(["checkpoint=/x", "episodes=three"])
    with pytest.raises(UsageError, match="invalid configuration"):
        _options(["checkpoint=/x", "no_such_option=1"])


def _gl_backend() -> str | None:
    """A MUJOCO_GL value with which offscreen rendering works here (None: none does)."""
    probe = (
        "import mujoco; m = mujoco.MjModel.from_xml_string('<mujoco/>'); "
        "r = mujoco.Renderer(m, 8, 8); r.close()"
    )
    for gl in ("egl", "osmesa"):
        env = {**os.environ, "MUJOCO_GL": gl}
        try:
            proc = subprocess.run(
                [sys.executable, "-c", probe], env=env, capture_output=True, timeout=60
            )
        except subprocess.TimeoutExpired:
            continue
        if proc.returncode == 0:
            return gl
    return None


def _evaluate(
    args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flashsac_bench.evaluate", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


@pytest.mark.slow
def test_evaluate_cli_writes_report_and_video(trained_run, tmp_path):
    gl = _gl_backend()
    if gl is None:
        pytest.skip("no offscreen GL backend here (tried MUJOCO_GL=egl, osmesa)")
    proc = _evaluate(
        [
            f"checkpoint={trained_run.run_dir}",
            "episodes=3",
            "num_envs=2",
            f"out_dir={tmp_path}",
            "render_seconds=0.5",
            "width=160",
            "height=120",
            "strip_frames=3",
            "threads=1",
        ],
        {**os.environ, "MUJOCO_GL": gl},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "eval.json").read_text())
    assert report["iteration"] == trained_run.iterations
    assert report["checkpoint"] == str(trained_run.checkpoint)
    episodes = report["episodes"]
    assert len(episodes) == 3 and sorted(e["env"] for e in episodes) == [0, 0, 1]
    for e in episodes:
        assert 1 <= e["length"] <= 1000
        # the env's episode return is the sum of the rewards the rollout saw
        assert e["summed_reward"] == pytest.approx(e["return"], rel=1e-5, abs=1e-5)
        assert 0.0 <= e["tracking_lin_vel_frac_mean"] <= 1.0
        assert e["lin_vel_error_mean"] >= 0.0
    s = report["summary"]
    assert s["length"]["mean"] == pytest.approx(np.mean([e["length"] for e in episodes]))
    assert report["goals"]["episode_length_met"] == (s["length"]["mean"] >= 900)
    r = report["render"]
    assert r["ok"] and r["mujoco_gl"] == gl
    from PIL import Image

    # env 0's first episode, at most 0.5 s = 25 control steps, every 2nd state (25 fps of 50 Hz)
    first = next(e for e in episodes if e["env"] == 0)
    states = min(first["length"], 25)
    with Image.open(tmp_path / "eval.gif") as gif:
        assert gif.n_frames == math.ceil(states / 2) == r["frames"]
        assert gif.size == (160, 120)
        gif.seek(0)
        pixels = np.asarray(gif.convert("RGB"))
        assert pixels.std() > 5  # a rendered scene, not a blank frame
    with Image.open(tmp_path / "eval_strip.png") as strip:
        assert strip.size == (160 * min(3, r["frames"]), 120)


def test_evaluate_without_gl_degrades_with_one_message(trained_run, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["MUJOCO_GL"] = "glfw"  # a windowing backend: no display, no context
    proc = _evaluate(
        [f"checkpoint={trained_run.checkpoint}", "episodes=1", "num_envs=1", f"out_dir={tmp_path}"],
        env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    messages = [ln for ln in proc.stderr.splitlines() if "rendering skipped" in ln]
    assert len(messages) == 1 and "MUJOCO_GL='glfw'" in messages[0], proc.stderr[-3000:]
    report = json.loads((tmp_path / "eval.json").read_text())
    assert report["render"]["ok"] is False and "MUJOCO_GL" in report["render"]["reason"]
    assert not (tmp_path / "eval.gif").exists()
    assert len(report["episodes"]) == 1


def test_evaluate_render_false_and_default_out_dir(trained_run):
    proc = _evaluate(
        [f"checkpoint={trained_run.checkpoint}", "episodes=2", "num_envs=2", "render=false"],
        dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rendering skipped" not in proc.stderr
    out = Path(trained_run.run_dir)  # beside the run: <run>/checkpoints/iter_k.pt -> <run>
    report = json.loads((out / "eval.json").read_text())
    assert report["render"] == {"ok": False} and len(report["episodes"]) == 2
    assert "robustness" not in report  # only when asked (robustness=...)


# ---------------------------------------------------------------------------- the Hydra app
FAST = ["episodes=1", "num_envs=1", "render=false", "threads=1"]


def test_evaluate_cli_help_and_cfg_job_touch_nothing(tmp_path):
    proc = _evaluate(["--help"], cwd=tmp_path)
    assert proc.returncode == 0 and "checkpoint: ???" in proc.stdout
    assert "episodes: 8" in proc.stdout
    missing = tmp_path / "x.pt"
    proc = _evaluate(["--cfg", "job", f"checkpoint={missing}", "episodes=3"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"checkpoint: {missing}" in proc.stdout and "episodes: 3" in proc.stdout
    assert list(tmp_path.iterdir()) == []  # no Hydra dirs or logs, and x.pt not created


@pytest.mark.slow  # over ~10 s on 2 cores
def test_evaluate_cli_errors_are_one_line_and_write_nothing(trained_run, tmp_path):
    out = tmp_path / "out"
    (tmp_path / "empty").mkdir()
    (tmp_path / "text.pt").write_text("not a checkpoint")
    cut = tmp_path / "cut.pt"
    cut.write_bytes(trained_run.checkpoint.read_bytes()[:4000])  # a write cut short
    cases = [
        ([f"checkpoint={tmp_path / 'nope.pt'}"], (str(tmp_path / "nope.pt"), "does not exist")),
        ([f"checkpoint={tmp_path / 'empty'}"], (str(tmp_path / "empty"), "no checkpoint")),
        ([f"checkpoint={tmp_path / 'text.pt'}"], (str(tmp_path / "text.pt"), "not a flashsac")),
        ([f"checkpoint={cut}"], (str(cut), "truncated")),
        ([], ("checkpoint=", "is required")),
        ([f"checkpoint={trained_run.checkpoint}", "episods=3"], ("unknown key episods",)),
        ([f"checkpoint={trained_run.checkpoint}", "episodes=0"], ("episodes=0: must be in [1, ",)),
        # a sweep checks every job before the first one runs
        ([f"checkpoint={trained_run.checkpoint},{cut}", "-m"], ("job 1", str(cut))),
    ]
    for args, texts in cases:
        proc = _evaluate([*FAST, f"out_dir={out}", *args])  # the case last: it wins
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
        lines = proc.stderr.strip().splitlines()
        assert lines[0].startswith("flashsac_bench.evaluate: ")
        assert len(lines) == (2 if "-m" in args else 1), proc.stderr
        for text in texts:
            assert text in proc.stderr, proc.stderr
    assert not out.exists()


def test_evaluate_multirun_evaluates_each_checkpoint_where_it_lies(trained_run, tmp_path):
    runs = [tmp_path / "a", tmp_path / "b"]
    for run in runs:
        run.mkdir()
        (run / "iter.pt").write_bytes(trained_run.checkpoint.read_bytes())
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    checkpoints = ",".join(str(run / "iter.pt") for run in runs)
    proc = _evaluate(["-m", f"checkpoint={checkpoints}", *FAST], cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for run in runs:
        report = json.loads((run / "eval.json").read_text())
        assert report["checkpoint"] == str(run / "iter.pt") and len(report["episodes"]) == 1
    assert proc.stdout.count("report: ") == 2
    assert list(cwd.iterdir()) == []  # Hydra's own files stay out of the working dir
