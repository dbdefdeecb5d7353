"""Convert FlashSAC checkpoints between unilab-rl 1.4.15 and flashsac_bench, both ways.

    python -m flashsac_bench.convert source=<file or run dir> [out=FILE] [to=auto] [...]

source is a unilab-rl `model_<iteration>.pt` (what its runner saves:
`FlashSACLearner.get_state_dict()`) or one of our runner checkpoints (a file, a run dir or its
checkpoints dir: the latest). `to=auto` converts to the other kind.

unilab-rl -> flashsac_bench: a learner-only runner checkpoint (networks, target, temperature,
BN statistics, Adam moments and steps, schedule steps, reward statistics), by default
`<source>.flashsac_bench.pt`. It evaluates (`python -m flashsac_bench.evaluate
checkpoint=...`), exports (`python -m flashsac_bench.export checkpoint=...`) and resumes
(`python -m flashsac_bench run.resume=...`: the replay refills first, since UniLab saves none).
A UniLab checkpoint does not record gamma, tau, the LR schedule's shape, ...: they come from
this command's config (the same groups and keys as training: `+experiment=...`,
`learner.tau=0.05`, `run.num_envs=4096`, ...). What the checkpoint does fix (layer sizes,
atoms, support, zeta cdf, LR peak) must agree with the config; a mismatch names the override.

flashsac_bench -> unilab-rl: `FlashSACLearner.get_state_dict()` format, by default
`<run dir>/unilab/model_<update_count>.pt`, loadable by its `load_state_dict` / runner resume;
`unilab_device` (cuda, cpu) sets the Adam flags its optimizers take from the file. The key
`flashsac_bench` in it holds the FlashSACLearner kwargs that match our config. For this
direction the learner config is the checkpoint's (other overrides are ignored).

docs/unilab_differences.md: what differs between the two learners, and why.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch

from flashsac_bench.cli.tool import Tool, run_tool
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.hardware import HardwareConfig
from flashsac_bench.config.root import Config
from flashsac_bench.config.run import MAX_ITERATIONS
from flashsac_bench.interop import unilab as ui
from flashsac_bench.interop.unilab import ConversionError

KINDS = ("flashsac_bench", "unilab")
SCHEMA_NAME = "flashsac_bench_convert_schema"
OPTION_KEYS = ("source", "out", "to", "unilab_device", "overwrite")
SOURCE_HINT = "<unilab-rl model_*.pt, or a flashsac_bench checkpoint / run dir>"


@dataclass
class ConvertConfig(Config):
    """The training config a converted checkpoint carries (all of Config) + the options."""

    source: str = "???"  # a unilab-rl model_*.pt, or our checkpoint / run dir
    out: str | None = None  # output file (default: see the module docstring)
    to: str = "auto"  # auto | flashsac_bench | unilab
    unilab_device: str = "cuda"  # to=unilab: the device the UniLab learner will load it on
    overwrite: bool = False  # replace an existing `out`


# ---------------------------------------------------------------------------- reading
def read_source(source: str) -> tuple[Path, str, dict[str, Any]]:
    """(resolved path, kind, payload) of a checkpoint of either kind."""
    from flashsac_bench.runner.checkpoint import resolve_resume_path
    from flashsac_bench.runner.torch_files import non_finite

    path = Path(source).expanduser()
    if not path.exists():
        raise ConversionError(f"source {path} does not exist")
    if path.is_dir():
        try:
            path = resolve_resume_path(path)
        except FileNotFoundError as err:
            raise ConversionError(str(err)) from None
    payload = _load(path)
    if not isinstance(payload, dict):
        raise ConversionError(f"{path}: not a checkpoint (a {type(payload).__name__})")
    if "learner" in payload and "format" in payload:
        return path, "flashsac_bench", payload
    if "actor" in payload and "critic" in payload and "update_count" in payload:
        count = payload["update_count"]
        if type(count) is not int or not 0 <= count <= MAX_ITERATIONS:
            raise ConversionError(
                f"{path}: update_count={count!r} must be a whole number in [0, "
                f"{MAX_ITERATIONS}] (the iteration a converted checkpoint continues at)"
            )
        ui.architecture(payload)  # raises a one-line ConversionError for a non-FlashSAC one
        if bad := non_finite(payload):
            raise ConversionError(
                f"{path}: non-finite values in {'; '.join(bad[:3])}: a learner that cannot act"
            )
        return path, "unilab", payload
    keys = ", ".join(sorted(map(str, payload))[:8])
    raise ConversionError(
        f"{path}: neither a unilab-rl FlashSAC checkpoint (FlashSACLearner.get_state_dict()) "
        f"nor a flashsac_bench runner checkpoint (keys: {keys})"
    )


def _load(path: Path) -> Any:
    """Either kind of checkpoint, read weights-only after its CRCs are checked
    (runner.torch_files): a UniLab file holds tensors and plain containers only, and so does
    ours; a file that holds pickled objects is refused and runs nothing."""
    from flashsac_bench.runner.checkpoint import LEGACY_NOTE, load_checkpoint
    from flashsac_bench.runner.torch_files import MalformedValueError, from_plain, safe_load

    payload = safe_load(
        path, what="torch checkpoint", error=ConversionError, legacy_note=LEGACY_NOTE
    )
    if isinstance(payload, dict) and "learner" in payload and "format" in payload:
        return load_checkpoint(path)  # ours: its format and values checked too
    try:
        return from_plain(payload)
    except MalformedValueError as err:
        raise ConversionError(f"{path}: {err}") from None


def _save(path: Path, obj: Any, overwrite: bool, source: Path) -> Path:
    """Atomic write (a temporary file, then a rename): an interruption leaves no half file.
    Never over `source` or a run's checkpoint (runner.outputs), whatever `overwrite` says."""
    from flashsac_bench.runner.outputs import refuse_overwriting
    from flashsac_bench.runner.writes import atomic_write

    refuse_overwriting([path], [source], ConversionError, "out")
    if path.exists() and not overwrite:
        raise ConversionError(f"{path} exists; pass overwrite=true to replace it")
    if path.is_dir():
        raise ConversionError(f"out={path} is a directory; name the file to write")
    atomic_write(path, lambda f: torch.save(obj, f), "converted checkpoint")
    return path


# ---------------------------------------------------------------------------- directions
def _task_dims(config: Config) -> tuple[int, int, int] | None:
    """The task's (obs, critic obs, action) dims; None when another env factory is in use."""
    from flashsac_bench.runner.env_factory import ENV_FACTORY_VAR

    if config.task.name != "g1_walk_flat" or os.environ.get(ENV_FACTORY_VAR, "").strip():
        return None
    from flashsac_bench.envs.g1.cpu.walk_flat import CRITIC_OBS_DIM, NUM_JOINTS, OBS_DIM

    return OBS_DIM, CRITIC_OBS_DIM, NUM_JOINTS


def unilab_to_flashsac(
    sd: dict[str, Any], source: Path, config: Config, composed: dict[str, Any]
) -> dict[str, Any]:
    """A learner-only runner checkpoint payload from a UniLab state dict."""
    from flashsac_bench.learner.learner import Dims, FlashSACLearner
    from flashsac_bench.runner import training_config
    from flashsac_bench.runner.checkpoint import CHECKPOINT_FORMAT, LEARNER_ONLY
    from flashsac_bench.runner.checkpoint_tensors import check_restored

    arch = ui.architecture(sd)
    ui.check_architecture(arch, config.learner)
    dims = Dims(arch.obs_dim, arch.critic_obs_dim, arch.action_dim)
    task = _task_dims(config)
    if task is not None and task != (dims.obs, dims.critic_obs, dims.action):
        raise ConversionError(
            f"the checkpoint's (obs, critic obs, action) dims {tuple(dims.__dict__.values())} "
            f"are not task {config.task.name}'s {task}"
        )
    # On the CPU in float32 without GEMM padding, whatever the command's hardware: the
    # checkpoint's tensors are UniLab's, unpadded, and nothing here runs an update.
    cpu = HardwareConfig(name="cpu", device="cpu", dtype="float32", gemm_align=1)
    learner = FlashSACLearner.from_config(config, dims, hardware=cpu, to_act=True)
    ui.load_unilab_state(learner, sd)
    from flashsac_bench.runner.checkpoint_probe import probe_learner

    if problem := probe_learner(learner):
        raise ConversionError(f"{source}: {problem}")
    # The training_config every checkpoint holds.
    tc = {**training_config.static(config), **training_config.learner_fields(learner, dims)}
    update_count = int(sd["update_count"])  # checked when read (read_source)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "kind": LEARNER_ONLY,
        "iteration": update_count,
        "learner": learner.state_dict(),
        "replay": None,
        "env": None,
        "staging": None,
        "episodes": {"returns": [], "lengths": []},
        "rows_all": [],
        "training_config": tc,
        "config": composed,
        "converted_from": {
            "kind": f"unilab-rl {ui.UNILAB_RL_VERSION} FlashSACLearner.get_state_dict()",
            "path": str(source),
            "update_count": update_count,
        },
    }
    # What the UniLab file put into the learner, checked as every loader checks a checkpoint.
    check_restored(source, payload, ConversionError)
    return payload


def flashsac_to_unilab(source: Path, device_type: str) -> tuple[dict[str, Any], int]:
    """(UniLab state dict, its update_count) of one of our runner checkpoints."""
    from flashsac_bench.evaluation.trained import load_trained_learner

    trained = load_trained_learner(source, "cpu", "float32")
    learner = trained.learner
    # UniLab counts learning iterations; each of ours runs n_critic critic updates.
    update_count = int(float(learner.state.critic_sched_step)) // max(learner.n_critic, 1)
    sd = ui.unilab_state(learner, update_count, device_type)
    d = learner.dims
    sd["flashsac_bench"] = {
        "source": str(trained.checkpoint),
        "iteration": trained.iteration,
        "unilab_rl_version": ui.UNILAB_RL_VERSION,
        "learner_kwargs": ui.unilab_learner_kwargs(learner.cfg, d.obs, d.critic_obs, d.action),
    }
    return sd, update_count


def convert(cc: ConvertConfig, composed: dict[str, Any]) -> tuple[Path, str]:
    """Run one conversion; returns (written file, its kind)."""
    if cc.to not in ("auto", *KINDS):
        raise ConversionError(f"to must be auto, flashsac_bench or unilab, got {cc.to!r}")
    path, kind, payload = read_source(cc.source)
    target = cc.to if cc.to != "auto" else KINDS[1 - KINDS.index(kind)]
    if target == kind:
        raise ConversionError(f"{path} is already a {kind} checkpoint")
    if kind == "unilab":
        training = Config(**{f.name: getattr(cc, f.name) for f in fields(Config)})
        training_composed = {k: v for k, v in composed.items() if k not in OPTION_KEYS}
        out_obj = unilab_to_flashsac(payload, path, training, training_composed)
        out = Path(cc.out) if cc.out else path.with_name(f"{path.stem}.flashsac_bench.pt")
    else:
        from flashsac_bench.evaluation.trained import run_dir_of

        out_obj, update_count = flashsac_to_unilab(path, cc.unilab_device)
        default = run_dir_of(path) / "unilab" / f"model_{update_count}.pt"
        out = Path(cc.out) if cc.out else default
    return _save(out.expanduser(), out_obj, cc.overwrite, path), target


# ---------------------------------------------------------------------------- CLI
def _ignored_overrides() -> list[str]:
    try:
        from hydra.core.hydra_config import HydraConfig

        overrides = list(HydraConfig.get().overrides.task)
    except (ImportError, ValueError):
        return []
    return [o for o in overrides if o.split("=", 1)[0].lstrip("+~") not in OPTION_KEYS]


def _job(cc: ConvertConfig, composed: dict[str, Any]) -> int:
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            out, kind = convert(cc, composed)
    except (ConversionError, ConfigError) as err:
        print(f"flashsac_bench.convert: {err}", file=sys.stderr)
        return 2
    for w in caught:
        print(f"flashsac_bench.convert: warning: {w.message}", file=sys.stderr)
    if kind == "unilab" and (ignored := _ignored_overrides()):
        print(
            f"flashsac_bench.convert: note: to=unilab takes the learner config from the "
            f"checkpoint; ignored {' '.join(ignored)}",
            file=sys.stderr,
        )
    print(f"wrote {kind} checkpoint {out}")
    return 0


TOOL = Tool(
    prog="flashsac_bench.convert",
    config_name="convert",
    schema_name=SCHEMA_NAME,
    schema=ConvertConfig,
    job=_job,
    required={"source": SOURCE_HINT},
)


def main() -> None:
    run_tool(TOOL)
