"""FlashSAC beside Stable-Baselines3's SAC on Gymnasium tasks: the internals of
scripts/bench_sb3.py (issue 49).

Both learners train on the same task, on the same machine, for the same env-step budget, over
the same seeds; every training runs in its own process, one after another (their wall clocks do
not share the machine), each with a deadline; every run is recorded (runs.jsonl), failures and
runs cut by their deadline included. FlashSAC runs as `python -m flashsac_bench
+experiment=gym_mujoco` (or another task=gymnasium preset; its overrides added); SB3 as
lab.sb3_train with rl-baselines3-zoo's hyperparameters for the task (RL_ZOO).

What is compared, for both learners alike:
- the episodic return at fixed env-step counts: the mean undiscounted return of the last 100
  training episodes finished by then (FlashSAC's rows say it as `episode_return_mean`, SB3's
  episodes are averaged the same way here);
- the wall clock to reach SB3's final return (the median over SB3's seeds of its return at the
  budget's end): seconds from the training process's launch (imports, setup and compile
  included) to the first point whose return is at least that. A run that never does counts as
  "not reached";
- the trained policy's return: the mean of its deterministic episodes (eval_episodes, in a fresh
  env seeded EVAL_SEED) after its training, which the training episodes' return understates
  where learned episodes outlast the budget's last window (a pole balanced for good ends no
  episode).
Each cell: the median over the runs that got there [range], n; `report` writes one table
(sb3_comparison.md, .json) and one plot (sb3_comparison.png).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LEARNERS = ("flashsac", "sb3")
RUNS_NAME = "runs.jsonl"
REPORT_NAME = "sb3_comparison"
WINDOW = 100  # episodes in a return (FlashSAC's runner.records.EPISODE_WINDOW)
EVAL_SEED = 12345  # the final evaluation's env seed (flashsac_bench.evaluate's default)

# rl-baselines3-zoo's SAC hyperparameters (DLR-RM/rl-baselines3-zoo, hyperparams/sac.yml,
# "=== Mujoco Envs ===": `HalfCheetah-v3: &mujoco-defaults` {policy: MlpPolicy, learning_starts:
# 10000, n_timesteps: 1e6}; Ant, Hopper, Walker2d the same; Humanoid the same with n_timesteps
# 2e6; Swimmer the same with gamma 0.9999; `Pendulum-v1`: learning_rate 1e-3). The zoo names the
# v3 ids of these envs; their v5 ids here take the same entries. Everything the zoo leaves out is
# SB3's SAC default (lr 3e-4, buffer 1e6, batch 256, tau 0.005, gamma 0.99, one gradient step per
# env step, ent_coef auto, [256, 256] networks); lab.sb3_train records the resolved values.
# n_timesteps is not here: the benchmark's budget is the same for both learners.
MUJOCO_DEFAULTS: dict[str, Any] = {"learning_starts": 10_000}
RL_ZOO: dict[str, dict[str, Any]] = {
    "HalfCheetah-v5": MUJOCO_DEFAULTS,
    "Ant-v5": MUJOCO_DEFAULTS,
    "Hopper-v5": MUJOCO_DEFAULTS,
    "Walker2d-v5": MUJOCO_DEFAULTS,
    "Humanoid-v5": MUJOCO_DEFAULTS,
    "Swimmer-v5": {**MUJOCO_DEFAULTS, "gamma": 0.9999},
    "Pendulum-v1": {"learning_rate": 1e-3},
    # Not in the zoo: the MuJoCo block's entry with learning_starts 1000 (its 10000 would be
    # most of the short budgets this task is benchmarked with: the CPU proof of the bench).
    "InvertedPendulum-v5": {"learning_starts": 1000},
}


def sb3_hyperparameters(env_id: str) -> dict[str, Any]:
    """SAC's keyword arguments for `env_id` (RL_ZOO); ValueError for an env the table lacks."""
    if env_id not in RL_ZOO:
        raise ValueError(
            f"{env_id} has no rl-baselines3-zoo SAC entry in lab/sb3_bench.py (RL_ZOO has "
            f"{', '.join(RL_ZOO)})"
        )
    return dict(RL_ZOO[env_id])


@dataclass
class Plan:
    """One benchmark invocation."""

    envs: list[str]
    seeds: list[int]
    steps: int  # env steps per training
    out: Path
    deadline_s: float  # for the whole benchmark, report included
    run_limit_s: float  # for one training
    at_steps: list[int]  # the env-step counts the table reports returns at
    # FlashSAC's preset (a task=gymnasium one) and the overrides after it.
    experiment: str = "gym_mujoco"
    flashsac_overrides: list[str] = field(default_factory=list)
    sb3_device: str = "auto"
    sb3_threads: int = 0  # torch's CPU threads in SB3's runs (0: torch's default)
    # Deterministic episodes of each trained policy, after its training (0: none).
    eval_episodes: int = 10
    keep_checkpoints: bool = False
    learners: tuple[str, ...] = LEARNERS
    # Seconds a training is given to end after its deadline's SIGTERM before SIGKILL.
    grace_s: float = 60.0
    # Seconds kept back from the deadline for the report.
    report_s: float = 60.0


@dataclass(frozen=True)
class Spec:
    learner: str
    env_id: str
    seed: int

    @property
    def name(self) -> str:
        return f"{self.learner}_{self.env_id}_s{self.seed}"


def specs(plan: Plan) -> list[Spec]:
    """Every training, pair by pair (env, seed, then each learner): a benchmark cut by its
    deadline keeps whole pairs of the first seeds."""
    return [
        Spec(learner, env_id, seed)
        for env_id in plan.envs
        for seed in plan.seeds
        for learner in plan.learners
    ]


# ---------------------------------------------------------------------------- FlashSAC's run
def flashsac_num_envs(plan: Plan) -> int:
    """The envs of FlashSAC's runs: its preset composed with the overrides as the command line
    will compose them (a bad override fails here, before any training)."""
    from hydra import compose, initialize_config_module

    from flashsac_bench.config import register_configs

    register_configs()
    overrides = [f"+experiment={plan.experiment}", *plan.flashsac_overrides]
    with initialize_config_module("flashsac_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    if cfg.task.name != "gymnasium":
        raise ValueError(f"+experiment={plan.experiment} is no task=gymnasium preset")
    return int(cfg.run.num_envs)


def flashsac_command(spec: Spec, plan: Plan, num_envs: int, limit_s: float) -> list[str]:
    """The training's command line: the budget in iterations (rounded up to whole iterations
    of every env), a time limit inside its deadline (the run then ends complete, its checkpoint
    and summary written before the deadline's SIGTERM)."""
    iterations = -(-plan.steps // num_envs)
    return [
        sys.executable,
        "-m",
        "flashsac_bench",
        f"+experiment={plan.experiment}",
        f"task.env_id={spec.env_id}",
        f"run.seed={spec.seed}",
        f"run.iterations={iterations}",
        # its final checkpoint (the replay ring, GBs) is written after the limit, inside it
        f"run.time_limit_s={max(limit_s - 2 * plan.grace_s, 1.0):.0f}",
        "run.progress=plain",
        "logger=none",
        f"hydra.run.dir={plan.out / 'runs' / spec.name}",
        *plan.flashsac_overrides,
    ]


def flashsac_eval_command(run_dir: Path, plan: Plan) -> list[str]:
    """The trained policy's deterministic episodes (flashsac_bench.evaluate, its default seed
    EVAL_SEED) into run_dir/eval.json."""
    return [
        sys.executable,
        "-m",
        "flashsac_bench.evaluate",
        f"checkpoint={run_dir}",
        f"episodes={plan.eval_episodes}",
        f"num_envs={plan.eval_episodes}",
        f"seed={EVAL_SEED}",
        "render=false",
        "wandb=false",
        "device=auto",
    ]


def sb3_command(spec: Spec, plan: Plan) -> list[str]:
    return [
        sys.executable,
        "-m",
        "lab.sb3_train",
        f"--env={spec.env_id}",
        f"--seed={spec.seed}",
        f"--steps={plan.steps}",
        f"--out={plan.out / 'runs' / spec.name}",
        f"--device={plan.sb3_device}",
        f"--threads={plan.sb3_threads}",
        f"--eval-episodes={plan.eval_episodes}",
    ]


# ---------------------------------------------------------------------------- running
class StoppedError(Exception):
    """The benchmark itself got SIGTERM / SIGINT while a training ran: that training is ended."""


class _Stop:
    """The signal handler: it remembers the signal, and ends a running training at once (the
    loop then records it and skips the rest); the report is written either way."""

    def __init__(self) -> None:
        self.why: str | None = None
        self.training = False

    def __call__(self, signum: int, frame: Any) -> None:
        self.why = signal.Signals(signum).name
        if self.training:
            raise StoppedError(self.why)


def run_training(cmd: list[str], limit_s: float, log: Path, grace_s: float) -> tuple[int, str]:
    """Run `cmd` (cwd: the repo root, so that `lab` imports) for at most limit_s seconds:
    SIGTERM then, SIGKILL grace_s later. Returns (exit status, "ok" / "failed" / "timeout")."""
    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            rc = proc.wait(timeout=limit_s)
            return rc, "ok" if rc == 0 else "failed"
        except subprocess.TimeoutExpired:
            return _end(proc, grace_s), "timeout"
        finally:
            if proc.poll() is None:  # the benchmark was stopped: end the training too
                _end(proc, grace_s)


def _end(proc: subprocess.Popen[bytes], grace_s: float) -> int:
    """SIGTERM (a FlashSAC run then checkpoints and writes its summary), SIGKILL grace_s later;
    the exit status."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def record(plan: Plan, entry: dict[str, Any]) -> None:
    with open(plan.out / RUNS_NAME, "a") as f:
        f.write(json.dumps(entry) + "\n")


def run_all(plan: Plan, say: Any = print) -> None:
    """Every training of the plan within its deadline, each recorded as it ends (also one
    skipped, ended by its deadline, or by a SIGTERM / SIGINT to the benchmark, which skips the
    rest); then the report."""
    t0 = time.monotonic()
    plan.out.mkdir(parents=True, exist_ok=True)
    (plan.out / "runs").mkdir(exist_ok=True)
    (plan.out / "plan.json").write_text(json.dumps(asdict(plan), default=str, indent=1) + "\n")
    num_envs = flashsac_num_envs(plan) if "flashsac" in plan.learners else 0
    stop = _Stop()
    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for spec in specs(plan):
            entry: dict[str, Any] = {**asdict(spec), "steps": plan.steps, "name": spec.name}
            left = plan.deadline_s - plan.report_s - (time.monotonic() - t0)
            limit = min(plan.run_limit_s, left - plan.grace_s)
            if stop.why is not None or limit < 10:
                why = f"the benchmark got {stop.why}" if stop.why else "the deadline"
                record(plan, {**entry, "status": "skipped", "reason": why})
                continue
            run_dir = plan.out / "runs" / spec.name
            run_dir.mkdir(parents=True, exist_ok=True)
            if spec.learner == "flashsac":
                cmd = flashsac_command(spec, plan, num_envs, limit)
            else:
                cmd = sb3_command(spec, plan)
            say(f"bench_sb3: {spec.name} (limit {limit:.0f} s) ...")
            launch = time.time()
            rc, status = _run(stop, cmd, limit, run_dir / "train.log", plan.grace_s)
            wall = time.time() - launch
            entry.update(status=status, rc=rc, launch_unix=launch, wall_s=wall, cmd=cmd)
            if status != "ok":
                entry["reason"] = _last_line(run_dir / "train.log")
            left = plan.deadline_s - plan.report_s - (time.monotonic() - t0) - plan.grace_s
            final = run_dir / "checkpoints"
            if spec.learner == "flashsac" and plan.eval_episodes and final.is_dir() and left > 10:
                # SB3's run evaluates its policy itself (lab.sb3_train --eval-episodes).
                cmd = flashsac_eval_command(run_dir, plan)
                entry["eval_status"] = _run(stop, cmd, left, run_dir / "eval.log", plan.grace_s)[1]
            if spec.learner == "flashsac" and not plan.keep_checkpoints:
                shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)  # the replay: GBs
            record(plan, entry)
            say(f"bench_sb3: {spec.name} {status} in {wall:.0f} s")
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if stop.why:
        say(f"bench_sb3: stopped by {stop.why}; the report of what finished")
    report(plan.out)


def _run(
    stop: _Stop, cmd: list[str], limit_s: float, log: Path, grace_s: float
) -> tuple[int | None, str]:
    """run_training, ended (status "stopped") by a SIGTERM / SIGINT to the benchmark."""
    try:
        stop.training = True
        return run_training(cmd, limit_s, log, grace_s)
    except StoppedError:
        return None, "stopped"
    finally:
        stop.training = False


def _last_line(log: Path) -> str:
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1][-300:] if lines else "no output"


# ---------------------------------------------------------------------------- results
@dataclass
class Curve:
    """One training's episodic return over env steps and wall clock (from its launch)."""

    steps: list[int]  # where a point was taken (an episode's end, an iteration)
    returns: list[float]  # the mean of the last WINDOW finished episodes
    seconds: list[float]
    reached: int = 0  # the env steps the training got to


def flashsac_curve(run_dir: Path, launch_unix: float) -> Curve | None:
    """From summary.json's rows: every iteration's env steps and episode_return_mean; its
    seconds from the launch: the runner's start, its setup and the row's loop time."""
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    start = float(summary.get("writer", {}).get("started_unix", launch_unix)) - launch_unix
    setup = float(summary.get("setup_s") or 0.0)
    curve = Curve([], [], [])
    for row in summary.get("rows_all") or []:
        curve.reached = max(curve.reached, int(row.get("env_steps") or 0))
        ret = row.get("episode_return_mean")
        if ret is None or row.get("time_s") is None:
            continue
        curve.steps.append(int(row["env_steps"]))
        curve.returns.append(float(ret))
        curve.seconds.append(start + setup + float(row["time_s"]))
    return curve


def sb3_curve(run_dir: Path, launch_unix: float) -> Curve | None:
    """From episodes.jsonl: at every episode's end, the mean of the last WINDOW returns; the
    steps it got to from meta.json (a run cut short: its last episode's end)."""
    try:
        lines = (run_dir / "episodes.jsonl").read_text().splitlines()
    except OSError:
        return None
    try:
        reached = int(json.loads((run_dir / "meta.json").read_text())["num_timesteps"])
    except (OSError, KeyError, ValueError, TypeError):
        reached = 0
    curve = Curve([], [], [], reached)
    window: list[float] = []
    for line in lines:
        try:
            ep = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by the deadline's kill
        window = [*window[-(WINDOW - 1) :], float(ep["return"])]
        curve.steps.append(int(ep["steps"]))
        curve.returns.append(sum(window) / len(window))
        curve.seconds.append(float(ep["unix"]) - launch_unix)
    curve.reached = max(curve.reached, curve.steps[-1] if curve.steps else 0)
    return curve


def final_eval(run_dir: Path, learner: str) -> float | None:
    """The mean return of a trained policy's deterministic episodes (None: not evaluated)."""
    try:
        if learner == "flashsac":
            episodes = json.loads((run_dir / "eval.json").read_text())["episodes"]
            returns = [float(e["return"]) for e in episodes]
        else:
            returns = json.loads((run_dir / "meta.json").read_text())["eval"]["returns"]
    except (OSError, KeyError, ValueError, TypeError):
        return None
    return sum(returns) / len(returns) if returns else None


def return_at(curve: Curve, step: int) -> float | None:
    """The return at `step`: that of the last point at or before it, where the training got
    that far (None: it did not, or no episode had ended by then)."""
    if curve.reached < step:
        return None
    before = [r for s, r in zip(curve.steps, curve.returns, strict=True) if s <= step]
    return before[-1] if before else None


def seconds_to(curve: Curve, target: float) -> float | None:
    """Seconds from the launch to the first point whose return is at least `target`."""
    for r, t in zip(curve.returns, curve.seconds, strict=True):
        if r >= target:
            return t
    return None


def cell(values: list[float | None], n: int, fmt: str = "{:.0f}") -> str:
    """median [min-max], n (of all runs, the missing ones said)."""
    got = [v for v in values if v is not None and math.isfinite(v)]
    if not got:
        return f"-, 0 of {n}"
    med = fmt.format(statistics.median(got))
    span = f" [{fmt.format(min(got))}-{fmt.format(max(got))}]" if len(got) > 1 else ""
    return f"{med}{span}, n={len(got)}" + (f" of {n}" if len(got) < n else "")


def load_runs(out: Path) -> list[dict[str, Any]]:
    try:
        lines = (out / RUNS_NAME).read_text().splitlines()
    except OSError:
        return []
    return [json.loads(ln) for ln in lines if ln.strip()]


def report(out: Path) -> dict[str, Any]:
    """sb3_comparison.json / .md / .png from out/runs.jsonl and the runs' own files."""
    plan = json.loads((out / "plan.json").read_text())
    budget, at_steps = int(plan["steps"]), [int(s) for s in plan["at_steps"]]
    runs = load_runs(out)
    for run in runs:
        curve = None
        if "launch_unix" in run:
            read = flashsac_curve if run["learner"] == "flashsac" else sb3_curve
            curve = read(out / "runs" / run["name"], float(run["launch_unix"]))
        run["curve"] = asdict(curve) if curve is not None else None
    table: dict[str, Any] = {"budget": budget, "at_steps": at_steps, "envs": {}}
    for env_id in plan["envs"]:
        rows = {}
        sb3_final = [
            return_at(Curve(**r["curve"]), budget)
            for r in runs
            if r["env_id"] == env_id and r["learner"] == "sb3" and r["curve"]
        ]
        finals = [v for v in sb3_final if v is not None]
        target = statistics.median(finals) if finals else None
        for learner in plan["learners"]:
            mine = [r for r in runs if r["env_id"] == env_id and r["learner"] == learner]
            curves = [Curve(**r["curve"]) if r["curve"] else None for r in mine]
            returns = {s: [return_at(c, s) if c else None for c in curves] for s in at_steps}
            to_target = [
                seconds_to(c, target) if c is not None and target is not None else None
                for c in curves
            ]
            rows[learner] = {
                "runs": len(mine),
                "ok": sum(r.get("status") == "ok" for r in mine),
                "statuses": [r.get("status") for r in mine],
                "returns": {str(s): v for s, v in returns.items()},
                "seconds_to_sb3_final": to_target,
                "eval_return": [final_eval(out / "runs" / r["name"], learner) for r in mine],
                "wall_s": [r.get("wall_s") for r in mine],
            }
        sec = {k: [v for v in rows[k]["seconds_to_sb3_final"] if v is not None] for k in rows}
        ratio = None
        if sec.get("sb3") and sec.get("flashsac"):
            ratio = statistics.median(sec["sb3"]) / statistics.median(sec["flashsac"])
        table["envs"][env_id] = {"sb3_final_return": target, "rows": rows, "ratio": ratio}
    (out / f"{REPORT_NAME}.json").write_text(
        json.dumps({"table": table, "runs": runs}, indent=1) + "\n"
    )
    (out / f"{REPORT_NAME}.md").write_text(markdown(table))
    plot(runs, table, out / f"{REPORT_NAME}.png")
    return table


def markdown(table: dict[str, Any]) -> str:
    at = table["at_steps"]
    head = ["env", "learner", "runs ok"] + [f"return @ {_steps(s)}" for s in at]
    head += ["s to SB3's final return", "trained policy's return", "wall s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for env_id, entry in table["envs"].items():
        for learner, row in entry["rows"].items():
            n = row["runs"]
            cells = [env_id, learner, f"{row['ok']} of {n}"]
            cells += [cell(row["returns"][str(s)], n) for s in at]
            reached = row["seconds_to_sb3_final"]
            cells += [cell(reached, n), cell(row["eval_return"], n), cell(row["wall_s"], n)]
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for env_id, entry in table["envs"].items():
        target, ratio = entry["sb3_final_return"], entry["ratio"]
        said = "-" if target is None else f"{target:.0f}"
        lines.append(
            f"- {env_id}: SB3's final return (median over its seeds at {_steps(table['budget'])} "
            f"steps) {said}; SB3 / FlashSAC wall clock to it "
            + ("-" if ratio is None else f"{ratio:.1f}x (medians)")
        )
    lines.append(
        "- return: the mean of the last 100 training episodes finished by that env step; "
        "seconds from each training process's launch; trained policy's return: the mean of "
        "its deterministic episodes after training (lab/sb3_bench.py); median [range], n of "
        "the runs that got there."
    )
    return "\n".join(lines) + "\n"


def _steps(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k" if n >= 1000 else str(n)


def plot(runs: list[dict[str, Any]], table: dict[str, Any], path: Path) -> None:
    """Per env, the return over env steps and over wall clock: each learner's median over its
    runs (a step function on a common grid), its range shaded; SB3's final return dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    envs = list(table["envs"])
    fig, axes = plt.subplots(len(envs), 2, figsize=(11, 3.6 * len(envs)), squeeze=False)
    colors = {"flashsac": "tab:orange", "sb3": "tab:blue"}
    for row, env_id in enumerate(envs):
        for col, (axis, label) in enumerate(
            (("steps", "env steps"), ("seconds", "wall clock (s)"))
        ):
            ax = axes[row][col]
            drawn = False
            for learner in table["envs"][env_id]["rows"]:
                curves = [
                    r["curve"]
                    for r in runs
                    if r["env_id"] == env_id
                    and r["learner"] == learner
                    and r["curve"]
                    and r["curve"]["steps"]
                ]
                if not curves:
                    continue
                top = max(max(c[axis]) for c in curves)
                grid = np.linspace(0, top, 200)
                ys = np.full((len(curves), grid.size), np.nan)
                for i, c in enumerate(curves):
                    x, y = np.asarray(c[axis]), np.asarray(c["returns"])
                    idx = np.searchsorted(x, grid, side="right") - 1
                    ok = (idx >= 0) & (grid <= x[-1])
                    ys[i, ok] = y[idx[ok]]
                with warnings.catch_warnings():  # a grid point no run reached: NaN, not drawn
                    warnings.simplefilter("ignore", RuntimeWarning)
                    med = np.nanmedian(ys, axis=0) if len(curves) > 1 else ys[0]
                    lo, hi = np.nanmin(ys, axis=0), np.nanmax(ys, axis=0)
                ax.plot(grid, med, color=colors.get(learner), label=f"{learner} (n={len(curves)})")
                ax.fill_between(grid, lo, hi, color=colors.get(learner), alpha=0.2, lw=0)
                drawn = True
            target = table["envs"][env_id]["sb3_final_return"]
            if target is not None:
                ax.axhline(target, color="gray", ls="--", lw=1)
            ax.set_xlabel(label)
            ax.set_ylabel("return (last 100 episodes)")
            ax.set_title(env_id)
            if drawn:
                ax.legend(loc="lower right", fontsize=8)
            else:
                ax.text(0.5, 0.5, "no finished training", ha="center", transform=ax.transAxes)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
