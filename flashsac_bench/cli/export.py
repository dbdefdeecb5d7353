"""The trained actor for deployment, saved as TorchScript / ONNX.

    python -m flashsac_bench.export checkpoint=<run dir or .pt> [out_dir=DIR] [onnx=auto|true|false]

writes `policy.torchscript.pt` (always), `policy.onnx` (when `onnx` and `onnxscript` are
importable; `onnx=auto` skips it otherwise, `onnx=true` fails up front) and `policy.json`
(inputs, outputs, joint order, default pose, action scale) into `<run dir>/export/`. A Hydra
app (conf/export.yaml, options: ExportConfig): --help, --cfg job, -m; bad input is one line.

The module written is flashsac_bench.evaluation.policy.DeterministicActor (tanh(mean) through
the learner's own actor function), of the learner that flashsac_bench.evaluation.trained
rebuilds from the checkpoint, as evaluate does.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from flashsac_bench.cli.tool import Tool, run_tool
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.evaluation.policy import DeterministicActor
from flashsac_bench.evaluation.trained import (
    DTYPES,
    TrainedLearner,
    load_trained_learner,
    run_dir_of,
)
from flashsac_bench.runner.checkpoint import resolve_resume_path

EXPORT_FORMAT = 1
TORCHSCRIPT_NAME = "policy.torchscript.pt"
ONNX_NAME = "policy.onnx"
META_NAME = "policy.json"
ONNX_MODES = ("auto", "true", "false")


def _say(text: str) -> None:
    """A progress line (stderr: stdout names the files written)."""
    print(f"flashsac_bench.export: {text}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- files
def export_torchscript(module: DeterministicActor, path: Path, meta: dict[str, Any]) -> Path:
    """Trace the module (all network structure is Python-level constant, so the trace is the
    whole computation and generic in the batch size) and save it with `policy.json` embedded."""
    example = torch.zeros(2, module.obs_dim, device=module.actor_params.device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit is deprecated upstream
        # The tracer warns where Python branches on a tensor's shape: the weights' padding and
        # the feature width, constants of the network that do not depend on the batch, so the
        # trace is the same function at every batch size (tests/evaluation/
        # test_command_discipline.py checks batch sizes 1, 3 and 7 against the module).
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        traced = torch.jit.trace(module, example, check_trace=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.jit.save(traced, str(path), _extra_files={META_NAME: json.dumps(meta)})
    return path


def load_torchscript(path: str | Path) -> tuple[torch.jit.ScriptModule, dict[str, Any]]:
    extra = {META_NAME: ""}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
    return module, json.loads(extra[META_NAME])


def onnx_available() -> bool:
    # torch.onnx.export(dynamo=True) needs both packages.
    return all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxscript"))


@contextlib.contextmanager
def _quiet_onnx_exporter() -> Iterator[None]:
    """The export prints only its own lines: torch's ONNX exporter reports its steps
    (`verbose=False` below), logs a warning per torchvision op it cannot register and passes on
    its dependencies' deprecation warnings, none of which concern this policy (a failure
    still raises). Only here: torch's logging and warning filters are restored after."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        logger.setLevel(level)


def export_onnx(module: DeterministicActor, path: Path) -> Path:
    """ONNX through torch.export (dynamic batch dimension). Needs `onnx` and `onnxscript`."""
    example = torch.zeros(2, module.obs_dim, device=module.actor_params.device)
    batch = torch.export.Dim("batch", min=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _quiet_onnx_exporter():
        torch.onnx.export(
            module,
            (example,),
            str(path),
            input_names=["obs"],
            output_names=["action"],
            dynamo=True,
            dynamic_shapes={"obs": {0: batch}},
            external_data=False,
            verbose=False,
        )
    return path


def policy_metadata(trained: TrainedLearner, module: DeterministicActor) -> dict[str, Any]:
    """What a deployment needs besides the weights: shapes, joint order, the action mapping."""
    cfg = trained.config
    meta: dict[str, Any] = {
        "format": EXPORT_FORMAT,
        "checkpoint": str(trained.checkpoint),
        "iteration": trained.iteration,
        "task": cfg.task.name,
        "obs_dim": module.obs_dim,
        "action_dim": trained.learner.dims.action,
        "matmul_dtype": str(module.mm_dtype).removeprefix("torch."),
        "input": "obs float32 [batch, obs_dim]: the task's policy observation",
        "output": "action float32 [batch, action_dim] in [-1, 1] = tanh(mean): deterministic",
    }
    from flashsac_bench.envs.tasks import task_of
    from flashsac_bench.evaluation.trained import trained_task

    # The task's own fields, of the model the checkpoint carries (the G1's default pose), not
    # of whatever the file is now.
    with trained_task(trained) as task:
        meta.update(task_of(task).export_fields(task, trained.payload.get("model") or {}))
    return meta


def export_checkpoint(
    checkpoint: str | Path,
    out_dir: str | Path | None = None,
    onnx: str = "auto",
    dtype: str = "float32",
) -> dict[str, Any]:
    """Write the TorchScript (and ONNX) policy of a checkpoint; returns what was written."""
    out = output_dir(checkpoint, out_dir, onnx)  # a bad onnx option fails before any write
    trained = load_trained_learner(checkpoint, "cpu", dtype)
    _say(f"{trained.checkpoint} (iteration {trained.iteration}) loaded")
    module = DeterministicActor.from_learner(trained.learner)
    meta = policy_metadata(trained, module)
    result: dict[str, Any] = {"meta": meta}
    _say("tracing the policy to TorchScript ...")
    result["torchscript"] = str(export_torchscript(module, out / TORCHSCRIPT_NAME, meta))
    if onnx == "false":
        result["onnx"] = None
    elif onnx_available():
        _say("exporting the policy to ONNX (torch.export) ...")
        result["onnx"] = str(export_onnx(module, out / ONNX_NAME))
    else:
        result["onnx"] = None
        result["onnx_skipped"] = "onnx / onnxscript not installed"
    (out / META_NAME).write_text(json.dumps(meta, indent=1) + "\n")
    result["meta_path"] = str(out / META_NAME)
    return result


def output_dir(checkpoint: str | Path, out_dir: str | Path | None, onnx: str) -> Path:
    """Where the policy files go (default: <run dir>/export); raises ConfigError for an onnx
    option that cannot be honoured, naming the file it would have written."""
    from flashsac_bench.cli.writable import probe_writable
    from flashsac_bench.runner.outputs import refuse_overwriting

    if onnx not in ONNX_MODES:
        raise ConfigError(f"onnx must be auto, true or false, got {onnx!r}")
    source = resolve_resume_path(checkpoint)
    out = Path(out_dir) if out_dir else run_dir_of(source) / "export"
    names = (TORCHSCRIPT_NAME, ONNX_NAME, META_NAME)
    refuse_overwriting([out / n for n in names], [source], ConfigError, "out_dir")
    if problem := probe_writable(out):
        raise ConfigError(problem.replace("the run dir", "out_dir"))
    if onnx == "true" and not onnx_available():
        raise ConfigError(
            f"onnx=true cannot write {out / ONNX_NAME}: it needs the onnx and onnxscript "
            "packages (pip install -e '.[onnx]'), or pass onnx=auto / onnx=false"
        )
    return out


# ---------------------------------------------------------------------------- CLI
@dataclass
class ExportConfig:
    checkpoint: str = "???"  # run dir, checkpoints dir or iter_*.pt (required)
    out_dir: str | None = None  # default: <run dir>/export
    # auto: when onnx + onnxscript are installed; true: insist; false: skip. Any, not str: Hydra
    # reads onnx=true as a bool (a str field would hold "True").
    onnx: Any = "auto"
    dtype: str = "float32"  # matmuls of the exported policy: float32, bfloat16, checkpoint

    def __post_init__(self) -> None:
        self.onnx = str(self.onnx).lower()
        if self.onnx not in ONNX_MODES:
            raise ConfigError(f"onnx must be auto, true or false, got {self.onnx!r}")
        if self.dtype not in (*DTYPES, "checkpoint"):
            raise ConfigError(f"dtype must be float32, bfloat16 or checkpoint, got {self.dtype!r}")


def _check(xc: ExportConfig) -> None:
    """Before anything is written: a readable checkpoint whose tensors fit its config, an onnx
    option that can be met, an out_dir that can be written."""
    from flashsac_bench.cli.runtime_checks import check_stored_model

    output_dir(xc.checkpoint, xc.out_dir, xc.onnx)
    check_stored_model(load_trained_learner(xc.checkpoint, "cpu", xc.dtype))


def _job(xc: ExportConfig, composed: dict[str, Any]) -> int:
    result = export_checkpoint(xc.checkpoint, xc.out_dir, xc.onnx, xc.dtype)
    print(f"TorchScript policy: {result['torchscript']}")
    print(f"ONNX policy: {result['onnx'] or 'skipped (' + result.get('onnx_skipped', 'off') + ')'}")
    print(f"metadata: {result['meta_path']}")
    return 0


TOOL = Tool(
    prog="flashsac_bench.export",
    config_name="export",
    schema_name="flashsac_bench_export_schema",
    schema=ExportConfig,
    job=_job,
    required={"checkpoint": "<run dir, checkpoints dir or .pt>"},
    check=_check,
)


def main() -> None:
    run_tool(TOOL)
