"""What a resume may and may not change, and which checkpoint it continues from.

A checkpoint continues bit for bit only under the config that wrote it. `check_compatible`
compares the whole composed config with the checkpoint's and names every differing key that is
not in RESUME_MAY_CHANGE (the single list of keys a resume may change; README "Reliability").
`find_checkpoint` loads the newest intact checkpoint of a run dir, falling back (with a
warning naming every file it could not read) when the newest is missing or unreadable.
`plan_resume` puts it together for the runner, including `run.resume=auto` (continue this run
dir if it has a checkpoint, skip it when it is complete, else start fresh: how an interrupted
sweep is resumed), and refuses a resume that would write over another run's checkpoints or
its own newer ones. The commands that continue a run: runner.resume_commands.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.keys import flatten
from flashsac_bench.config.root import Config
from flashsac_bench.config.stored import upgrade_stored_config
from flashsac_bench.envs.contract.api import NOT_RESUMABLE
from flashsac_bench.runner.checkpoint import (
    CHECKPOINT_DIR,
    LATEST_NAME,
    CheckpointError,
    checkpoint_folder,
    is_learner_only,
    list_checkpoints,
    load_checkpoint,
)
from flashsac_bench.runner.checkpoint_probe import probe_payload
from flashsac_bench.runner.liveness import HEARTBEAT_NAME, run_dir_writer
from flashsac_bench.runner.resume_commands import AUTO
from flashsac_bench.runner.summary import SUMMARY_NAME, load_summary
from flashsac_bench.runner.torch_files import file_identity
from flashsac_bench.runner.writes import move_aside

log = logging.getLogger("flashsac_bench.runner")


# The only keys a resume may change. Each leaves every computed number as it was: they decide
# how long the run goes on, what is logged and summarized, and when checkpoints are written.
RESUME_MAY_CHANGE: dict[str, str] = {
    "run.iterations": "how far the continued run goes (must exceed the checkpoint's iteration)",
    "run.time_limit_s": "wall-clock limit of the continued run",
    "run.stop_at_walk": "whether the continued run ends once the walking thresholds are met",
    "run.resume": "where to continue from",
    "run.checkpoint_every": "checkpoint cadence",
    "run.log_every": "logging / TensorBoard cadence",
    "run.progress": "progress display",
    "logger.name": "where the scalars go: TensorBoard, W&B or nowhere",
    "run.summary_last": "which rows summary.json's statistics use",
    # Every env computes the same numbers in any layout (per-env random streams, row-wise math:
    # tests/envs/test_g1_sharded.py), and its checkpointed state is per env in env order.
    "backend.mode": "where the envs run: worker processes or the in-process thread pool",
    "backend.workers": "how many worker processes",
    # Gymnasium's envs step one by one either way, each from its own seed.
    "task.vectorization": "where the Gymnasium envs run: this process or worker processes",
    "backend.num_threads": "threads of the in-process pool",
    "backend.worker_timeout_s": "when a silent worker counts as hung",
}
# Derived settings that must match too (the same config can resolve differently elsewhere,
# e.g. hardware=auto on a GPU machine and on a CPU one).
RESOLVED_KEYS = {
    "device": "hardware.device (resolved)",
    "dtype": "hardware.dtype (resolved)",
    "gemm_align": "hardware.gemm_align (resolved)",
}


class ResumeError(ConfigError):
    """A resume that cannot continue the checkpoint (raised before any work)."""

    label = "cannot resume"


class RunDirInUseError(ConfigError):
    """A new run aimed at a dir that holds another run's outputs (raised before any work)."""

    label = "run dir in use"


class RunDirLayoutError(ConfigError):
    """A run dir whose own entries are not what a run keeps there (raised before any work)."""

    label = "unusable run dir"


@dataclass
class ResumePlan:
    path: Path | None = None  # the checkpoint to continue from (None: start fresh)
    payload: dict[str, Any] | None = None
    iteration: int = 0
    skip: bool = False  # run.resume=auto on a complete run: nothing to do
    notes: list[str] = field(default_factory=list)  # warnings / info for the log
    # run.resume=auto starting fresh over an attempt that stopped before its first checkpoint:
    # that attempt's outputs, to be moved aside (set_aside_earlier_attempt) before this run writes
    set_aside: list[Path] = field(default_factory=list)
    # The checkpoints beside `path` when the plan was made (name -> file_identity): a file that
    # is not among them under the writer lock was written since, by another run (recheck_locked).
    seen: dict[str, tuple[int, ...]] = field(default_factory=dict)


def _stamps(folder: Path) -> dict[str, tuple[int, ...]]:
    stamps: dict[str, tuple[int, ...]] = {}
    for f in list_checkpoints(folder):
        with contextlib.suppress(OSError):  # removed meanwhile: not there to be newer
            stamps[f.name] = file_identity(f)
    return stamps


# ---------------------------------------------------------------------------- which checkpoint
def find_checkpoint(spec: str | os.PathLike[str], *, mmap: bool = False) -> ResumePlan:
    """The checkpoint `spec` names: a file (loaded as is), or a run / checkpoints dir (its
    newest intact checkpoint; older ones are tried when the newest is missing or unreadable)."""
    p = Path(spec).expanduser()
    if not p.exists():
        raise ResumeError(f"run.resume={spec}: no such file or directory")
    if p.is_file():
        payload = load_checkpoint(p, mmap=mmap)
        plan = ResumePlan(path=p, payload=payload, iteration=int(payload["iteration"]))
        plan.seen = _stamps(p.parent)
        return plan
    folder = checkpoint_folder(p)
    files = list_checkpoints(folder)
    named = _latest_named(folder)
    seen = _stamps(folder)
    if not files:
        hint = f" ({LATEST_NAME} names {named.name}, which is missing)" if named else ""
        raise ResumeError(f"run.resume={spec}: no checkpoint (checkpoints/iter_*.pt) in {p}{hint}")
    newest = max([*files, *([named] if named else [])], key=lambda f: f.name)
    problems: list[str] = []
    if not newest.exists():
        problems.append(f"{newest} (named by {LATEST_NAME}) is missing")
    for candidate in reversed(files):
        try:
            payload = load_checkpoint(candidate, mmap=mmap)
        except CheckpointError as err:
            problems.append(str(err))
            continue
        plan = ResumePlan(path=candidate, payload=payload, iteration=int(payload["iteration"]))
        plan.seen = seen
        if problems:
            plan.notes.append(
                f"newest checkpoint unusable: {'; '.join(problems)}; falling back to "
                f"{candidate}, the newest intact one (iteration {plan.iteration})"
            )
        return plan
    raise CheckpointError(f"no intact checkpoint in {folder}: {'; '.join(problems)}")


def _latest_named(folder: Path) -> Path | None:
    """The checkpoint latest.txt names (None without one); ResumeError naming latest.txt when
    it cannot be read or names no checkpoint (it is written atomically: such a file was
    written by something else)."""
    pointer = folder / LATEST_NAME
    try:
        raw = pointer.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise ResumeError(f"cannot read {pointer}: {err.strerror or err}") from None
    name = raw.decode("utf-8", errors="replace").strip()
    if re.fullmatch(r"iter_\d+\.pt", name):
        return folder / name
    shown = name if len(name) <= 40 and name.isprintable() else f"{len(raw)} bytes"
    raise ResumeError(
        f"{pointer} names no checkpoint ({shown!r}, not iter_<k>.pt): it is not what a run "
        "writes there; delete it to resume from the newest intact checkpoint"
    )


# ---------------------------------------------------------------------------- compatibility
def _fmt(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def config_differences(saved: dict[str, Any], config: Config) -> list[str]:
    """'key (checkpoint X, now Y)' for every key outside RESUME_MAY_CHANGE that differs.
    Keys the checkpoint lacks (written by an older version) count as their default; keys it
    has that this version removed read as config.stored says (or raise ConfigError)."""
    now = flatten(asdict(config))
    defaults = flatten(asdict(Config()))
    old = flatten(upgrade_stored_config(copy.deepcopy(saved)))
    diffs = []
    for key, value in now.items():
        if key in RESUME_MAY_CHANGE or key.startswith("hydra."):
            continue
        before = old.get(key, defaults.get(key))
        if before != value:
            diffs.append(f"{key} (checkpoint {_fmt(before)}, now {_fmt(value)})")
    return diffs


def _resolved_differences(saved_tc: dict[str, Any], training_config: dict[str, Any]) -> list[str]:
    diffs = []
    for key, label in RESOLVED_KEYS.items():
        before, now = saved_tc.get(key), training_config.get(key)
        if key == "device" and isinstance(before, str) and isinstance(now, str):
            before, now = before.split(":")[0], now.split(":")[0]  # cuda:0 -> cuda:1 is fine
        if before is not None and before != now:
            diffs.append(f"{label} (checkpoint {_fmt(before)}, now {_fmt(now)})")
    return diffs


def model_difference(saved: Any, model: dict[str, Any] | None) -> str | None:
    """What differs between the model a checkpoint's envs ran (its `model` record) and the one
    this run would build (envs.task_record; None: a custom env, not compared)."""
    if model is None or not isinstance(saved, dict) or saved.get("sha256") == model["sha256"]:
        return None
    short = f"sha256 {str(saved.get('sha256'))[:12]}..., now {model['sha256'][:12]}..."
    if "env_id" in model:  # a Gymnasium env (envs.gymnasium.env.EnvFacts.record)
        return (
            f"the Gymnasium env {model['env_id']} (gymnasium {model.get('gymnasium')}) differs "
            f"from the checkpoint's {saved.get('env_id')} (gymnasium {saved.get('gymnasium')}; "
            f"{short})"
        )
    if model["model_file"] is None:
        return (
            f"the built-in G1 model differs from the one the checkpoint was trained with ({short}:"
            " another flashsac_bench or MuJoCo version)"
        )
    return (
        f"task.model_file={model['model_file']} changed since the checkpoint was written "
        f"({short}, over the MJCF and the files it reads)"
    )


def check_compatible(
    plan: ResumePlan,
    config: Config,
    training_config: dict[str, Any] | None = None,
    model: dict[str, Any] | None = None,
) -> None:
    """Refuse (ResumeError, one message naming every key) what the checkpoint cannot continue.
    `model`: the model this run's envs will step (its record), compared with the checkpoint's."""
    payload = plan.payload or {}
    env_state = payload.get("env")
    if isinstance(env_state, dict) and NOT_RESUMABLE in env_state:
        raise ResumeError(
            f"{plan.path} cannot be continued: {env_state[NOT_RESUMABLE]}; evaluate or export it, "
            "or start a new run"
        )
    changed = model_difference(payload.get("model"), model)
    if changed:
        raise ResumeError(
            f"{plan.path}: {changed}; a continued run would step another robot than the one it "
            "learned on: restore the model the checkpoint was written with, or start a new run"
        )
    diffs = config_differences(payload.get("config") or {}, config)
    if is_learner_only(payload):
        # Only a learner to continue (no replay, env or rows): a new run around it may differ in
        # everything but the networks and the per-env learner state (exploration noise, reward
        # returns), whose shapes follow run.num_envs. Its flat fp32 state suits any device.
        diffs = [d for d in diffs if d.startswith(("learner.", "run.num_envs "))]
    elif training_config is not None:
        diffs += _resolved_differences(payload.get("training_config") or {}, training_config)
    if diffs and is_learner_only(payload):
        raise ResumeError(
            f"{plan.path} holds a learner only, for other networks or envs: {'; '.join(diffs)}. "
            "Pass the checkpoint's learner.* and run.num_envs (everything else may differ)"
        )
    if diffs:
        allowed = ", ".join(RESUME_MAY_CHANGE)
        raise ResumeError(
            f"{plan.path} was written with a different config: {'; '.join(diffs)}. A resume "
            f"may change only {allowed}; pass the checkpoint's values or start a new run"
        )
    if plan.iteration >= config.run.iterations:
        more = config.run.iterations
        raise ResumeError(
            f"{plan.path} is at iteration {plan.iteration}, so run.iterations="
            f"{config.run.iterations} leaves nothing to do: pass run.iterations=N with "
            f"N > {plan.iteration} (e.g. run.iterations={plan.iteration + more} for {more} more)"
        )


def _refuse_live_writer(run_dir: Path) -> str | None:
    """Refuse to continue a run that another process is still writing; note a stale one."""
    from flashsac_bench.runner.liveness import run_state

    if not (run_dir / "summary.json").is_file():
        return None
    state = run_state(run_dir)
    if state["status"] in ("running", "starting"):
        raise ResumeError(
            f"{run_dir} is still being written ({state['detail']}); stop that run first"
        )
    if state["status"] == "stale":
        return (
            f"{run_dir} is a stale run ({state['detail']}); continuing from its last "
            f"checkpoint {state['last_checkpoint']}"
        )
    return None


def plan_resume(
    config: Config,
    run_dir: Path,
    training_config: dict[str, Any] | None = None,
    *,
    mmap: bool = False,
    model: dict[str, Any] | None = None,
) -> ResumePlan:
    """What run.resume asks for, checked: the plan, or ResumeError / CheckpointError.
    `model`: the record of the model this run's envs will step (None: not compared)."""
    spec = config.run.resume
    run_dir = Path(run_dir)
    checkpoints = run_dir / CHECKPOINT_DIR
    if (checkpoints.exists() or checkpoints.is_symlink()) and not checkpoints.is_dir():
        raise RunDirLayoutError(
            f"{checkpoints} is not a directory: a run keeps its checkpoints there; move it away "
            "or give this run another hydra.run.dir"
        )
    if writer := run_dir_writer(run_dir):
        raise RunDirInUseError(
            f"{writer}; a second writer would mix its files with that run's: wait for it to "
            "end or stop it (its run dir is freed when it exits, however it exits)"
        )
    if not spec:
        if found := earlier_outputs(run_dir):
            raise RunDirInUseError(
                f"{run_dir} holds an earlier run's outputs ({', '.join(found)}), which a new run "
                "would mix with its own: continue that run with run.resume=auto, or give this one "
                "another hydra.run.dir (or delete the old one)"
            )
        return ResumePlan()
    auto = spec == AUTO
    source = run_dir if auto else Path(spec).expanduser()
    if auto and not list_checkpoints(checkpoint_folder(source)):
        if done := _complete_without_checkpoints(run_dir, config):
            return ResumePlan(skip=True, notes=[done])
        plan = ResumePlan(notes=[f"run.resume=auto: no checkpoint in {source}, starting fresh"])
        if earlier_outputs(run_dir):
            if note := _refuse_live_writer(run_dir):
                plan.notes.append(note)
            plan.set_aside = [p for p in (run_dir / n for n in EARLIER_ATTEMPT_FILES) if p.exists()]
        return plan
    stale_note = _refuse_live_writer(source) if source.is_dir() else None
    plan = find_checkpoint(source, mmap=mmap)
    if stale_note:
        plan.notes.append(stale_note)
    if auto and plan.iteration >= config.run.iterations:
        plan.skip = True
        plan.notes.append(
            f"run.resume=auto: {source} is complete ({plan.iteration} of "
            f"{config.run.iterations} iterations), nothing to do"
        )
        return plan
    _refuse_overwriting_checkpoints(plan, run_dir, rewinds=source.is_file())
    check_compatible(plan, config, training_config, model)
    if problem := probe_payload(plan.payload or {}, config.learner):
        raise ResumeError(f"{plan.path}: {problem}")
    return plan


def _refuse_overwriting_checkpoints(plan: ResumePlan, run_dir: Path, rewinds: bool) -> None:
    """A resume writes its checkpoints into run_dir/checkpoints and prunes the oldest there: it
    must not be another run's folder, nor (`rewinds`: a checkpoint file named explicitly) hold
    checkpoints newer than the one it continues from, which it would write over. Newer files a
    run dir's resume skipped as unreadable are no run's to keep."""
    assert plan.path is not None
    own = run_dir / CHECKPOINT_DIR
    held = list_checkpoints(own)
    if plan.path.parent.resolve() != own.resolve():
        if held:
            raise RunDirInUseError(
                f"{run_dir} holds another run's checkpoints ({len(held)}, newest {held[-1].name}), "
                f"which this run's would be mixed with and prune: continue that run with "
                f"run.resume={run_dir}, or give this one another hydra.run.dir"
            )
        return
    newer = [f.name for f in held if f.name > plan.path.name]
    if rewinds and newer:
        raise RunDirInUseError(
            f"run.resume={plan.path} would continue {run_dir} from an older checkpoint and write "
            f"over its newer ones ({', '.join(newer)}): continue from the newest with "
            f"run.resume={run_dir}, or give this run another hydra.run.dir"
        )


def recheck_locked(plan: ResumePlan, run_dir: Path) -> None:
    """Once this run holds the run dir's writer lock: what `plan` was decided on still holds
    (another run may have written the dir between the plan and the lock)."""
    if plan.skip:
        return
    if plan.path is None and not plan.set_aside and (found := earlier_outputs(run_dir)):
        raise RunDirInUseError(
            f"{run_dir} holds an earlier run's outputs ({', '.join(found)}), written while this "
            "run was starting: continue that run with run.resume=auto, or give this one another "
            "hydra.run.dir"
        )
    if plan.path is not None and plan.path.parent == run_dir / CHECKPOINT_DIR:
        written = [
            name
            for name, stamp in _stamps(plan.path.parent).items()
            if name > plan.path.name and plan.seen.get(name) != stamp
        ]
        if written:
            raise ResumeError(
                f"{run_dir} got a newer checkpoint ({written[-1]}) while this run was "
                f"starting from {plan.path.name}: another run wrote it; start this one again"
            )


# ---------------------------------------------------------------------------- earlier runs
# What a run writes into its run dir besides checkpoints/ (Hydra's .hydra/ and log are Hydra's):
# its summary, heartbeat and logger folders (TensorBoard's tb/, W&B's wandb/).
EARLIER_ATTEMPT_FILES = (SUMMARY_NAME, HEARTBEAT_NAME, "tb", "wandb")


def earlier_outputs(run_dir: Path) -> list[str]:
    """What an earlier run left in run_dir that a new run's outputs would mix with: its summary,
    its checkpoints, its TensorBoard event files (a new writer adds a file beside them)."""
    found = []
    if (run_dir / SUMMARY_NAME).is_file():
        found.append(SUMMARY_NAME)
    if n := len(list_checkpoints(run_dir / CHECKPOINT_DIR)):
        found.append(f"{n} checkpoint{'s' if n > 1 else ''}")
    if any((run_dir / "tb").glob("events.out.tfevents.*")):
        found.append("TensorBoard events in tb/")
    return found


def _complete_without_checkpoints(run_dir: Path, config: Config) -> str | None:
    """run.resume=auto on a run that ended as this config asks, whose checkpoints were deleted
    afterwards (they hold the whole replay ring): the note that it is skipped, else None."""
    try:
        summary = load_summary(run_dir)
    except (OSError, ValueError):
        return None
    if not isinstance(summary, dict) or summary.get("complete") is not True:
        return None
    if config_differences(summary.get("config") or {}, config):
        return None
    done = summary.get("iterations_done")
    if not isinstance(done, int) or (
        done < config.run.iterations and not summary.get("stopped_by")
    ):
        return None
    return (
        f"run.resume=auto: {run_dir} is complete ({done} iterations; its checkpoints are gone), "
        "nothing to do"
    )


def set_aside_earlier_attempt(plan: ResumePlan, run_dir: Path) -> Path | None:
    """Move plan.set_aside into run_dir/earlier_attempt_<k>/ (nothing is deleted); the folder."""
    if not plan.set_aside:
        return None
    dest = move_aside(plan.set_aside, run_dir, "earlier_attempt_")
    plan.set_aside = []
    return dest
