"""Deterministic evaluation of a trained policy, with an offscreen video of one episode.

    python -m flashsac_bench.evaluate checkpoint=<run dir or .pt> [key=value ...]

The command line: it checks a command before any job runs and prints each job's result; the
evaluation itself is flashsac_bench.evaluation.evaluate.

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

import math
import os
import sys
from typing import Any

from flashsac_bench.cli.tool import Tool, run_tool
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.envs.g1.offer import g1_config
from flashsac_bench.envs.tasks import task_of
from flashsac_bench.evaluation.config import EvalConfig
from flashsac_bench.evaluation.evaluate import evaluate, output_dir, wandb_state
from flashsac_bench.evaluation.render import frame_stride
from flashsac_bench.evaluation.robustness import report_line


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
    offer = task_of(cfg.task)
    if ec.robustness and not offer.robustness:
        raise ConfigError(
            f"robustness: its conditions (pushes, link masses, commands) are the G1's, and the "
            f"checkpoint's task is {cfg.task.name}: pass robustness=false"
        )
    if ec.render and offer.renders == "states":
        try:
            frame_stride(g1_config(cfg.task).ctrl_dt, ec.render_fps)
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
