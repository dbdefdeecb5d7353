"""torch.compile whose traced and compiled code later processes load instead of tracing again.

torch.compile traces a function with Dynamo on its first call in every process: Inductor's and
AOTAutograd's caches make the backend's part a load, never the tracing (seconds per update).
torch's ahead-of-time compile (`torch.compile(fn, fullgraph=True).aot_compile(example)`, with
`torch.compiler.load_compiled_function`) saves what a trace produced (guards, the calling
bytecode, Inductor's code) and loads it without Dynamo. `StoredCompile(fn)` stands for
`torch.compile(fn, fullgraph=True, dynamic=..., options=...)` and uses it so:

- On the first call it loads the variants saved under its key (learner.compile_artifacts: the
  function, the structure of what it closes over and of its arguments, its options, torch's
  version, the device), or traces and compiles one with aot_compile and saves it.
- Each call runs the first variant whose guards (torch's checks of the inputs) pass; a call no
  variant serves is traced and compiled as a new variant, saved with the others.
- A saved variant holds code, never data: everything the function closes over is passed to
  torch's pickler as external data and bound to the live objects on load.
- Whatever cannot be used (a file of other settings, changed sources, corrupt bytes, a load
  torch refuses) is reported in `report.notes` and compiled anew; the new file replaces it.
- Where torch has no aot_compile, Inductor's caches are off, or the ahead-of-time compile
  fails, it is plain torch.compile (`report.fallback` says why): the same code, traced in
  every process.

The compiled code is the same either way (tests/learner/test_compile_store.py checks the bits
against plain torch.compile).
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from flashsac_bench.learner import compile_artifacts as artifacts

log = logging.getLogger(__name__)

# Dynamo's timers (torch._dynamo.utils.compilation_time_metrics) around an ahead-of-time
# compile: the whole capture, and AOTAutograd + Inductor within it.
_CAPTURE, _BACKEND = "fullgraph_capture", "create_aot_dispatcher_function"


@dataclass
class StoreReport:
    """What one StoredCompile did in this process."""

    loaded: int = 0  # variants loaded from a saved file
    compiled: int = 0  # variants traced and compiled here (and saved)
    load_s: float = 0.0
    trace_s: float = 0.0  # Dynamo's share of compiling them
    backend_s: float = 0.0  # AOTAutograd's and Inductor's share
    save_s: float = 0.0
    notes: list[str] = field(default_factory=list)  # saved files not used, and why
    fallback: str | None = None  # why it runs as plain torch.compile (None: it does not)


class StoredCompile:
    """torch.compile(fn, fullgraph=True, dynamic=dynamic, options=options), its compiled code
    saved after the first process traced it and loaded by the next ones."""

    def __init__(
        self, fn: Callable[..., Any], *, dynamic: bool, options: dict[str, Any] | None = None
    ) -> None:
        self.fn, self.dynamic, self.options = fn, dynamic, options
        self.name = f"{fn.__module__}.{fn.__qualname__}"
        self.report = StoreReport()
        self.variants: list[Any] = []  # torch's AOTCompiledFunction; __call__ checks guards
        self._blobs: list[bytes] = []  # each variant's saved bytes
        self._modules: set[str] = set()  # the package's modules the variants traced
        self._plain: Callable[..., Any] | None = None
        self._opened = False
        self._key: dict[str, Any] = {}
        self.file: Path | None = None  # where the variants are saved (named by the key)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as what it stands for (the function and its settings), never its loaded
        code: torch pickles what a traced function's guards reach (an update's closure
        reaches the RNG, which holds its compiled hash), and compiled code holds guard
        managers that do not pickle."""
        return (_unopened, (self.fn, self.dynamic, self.options))

    def __call__(self, *args: Any) -> Any:
        if self._plain is None:
            for variant in self.variants:
                if variant.guard_check(*args):
                    return variant(*args)
            variant = self._new_variant(args)
            if variant is not None:
                return variant(*args)
        assert self._plain is not None
        return self._plain(*args)

    def _new_variant(self, args: tuple[Any, ...]) -> Any:
        """The saved variant that serves `args`, else one compiled now (and saved); None
        where this runs as plain torch.compile from now on."""
        if not self._opened:
            self._opened = True
            missing = unavailable()
            if missing is not None:
                self._fall_back(missing)
                return None
            try:
                self._open(args)
            except NotStoredError as plain:
                self._fall_back(str(plain), warn=False)
                return None
            except Exception as err:  # noqa: BLE001 - no key, no file: plain torch.compile
                self._fall_back(f"no key for its inputs ({type(err).__name__}: {err})")
                return None
            for variant in self.variants:
                if variant.guard_check(*args):
                    return variant
        try:
            variant = self._compile(args)
        except Exception as err:  # noqa: BLE001 - any failure: plain torch.compile, said why
            self._fall_back(f"aot_compile failed ({type(err).__name__}: {err})")
            return None
        self._save()
        return variant

    def _open(self, args: tuple[Any, ...]) -> None:
        """Key the saved file by the first call's inputs; load its variants where usable."""
        closure = artifacts.structure(self._closure())
        args_key = [_arg_key(a, self.dynamic) for a in args]
        devices = _devices([closure, args_key])
        plain = plain_on(devices, self.options)
        if plain is not None:
            raise NotStoredError(plain)
        self._key = {
            "function": self.name,
            "dynamic": self.dynamic,
            "options": artifacts.structure(self.options or {}),
            "closure": closure,
            "args": args_key,
            "environment": artifacts.environment(devices),
        }
        self.file = artifacts.artifact_dir() / artifacts.key_name(self._key)
        if not self.file.is_file():
            return
        start = time.perf_counter()
        try:
            for blob in artifacts.read(self.file, self._key):
                self._add(self._load(blob), blob)
        except Exception as err:  # noqa: BLE001 - never used: compiled anew, said why
            self.variants, self._blobs, self._modules = [], [], set()
            reason = str(err) if isinstance(err, artifacts.UnusableError) else repr(err)
            self._note(f"{self.file.name} not used: {reason}; compiling anew")
            return
        self.report.loaded += len(self.variants)
        self.report.load_s += time.perf_counter() - start

    def _closure(self) -> dict[str, Any]:
        """The objects `fn` closes over, by name: the saved variants' external data."""
        cells = self.fn.__closure__ or ()
        return {
            f"closure.{name}": cell.cell_contents
            for name, cell in zip(self.fn.__code__.co_freevars, cells, strict=True)
        }

    def _load(self, blob: bytes) -> Any:
        from torch._guards import TracingContext, tracing

        module = sys.modules[self.fn.__module__]
        # Unpickling the guards rebuilds sources that register guards with the current
        # tracing context: they get a throwaway one (the guards come from the saved state).
        with tracing(TracingContext(None)):
            return torch.compiler.load_compiled_function(
                io.BytesIO(blob), f_globals=vars(module), external_data=self._closure()
            )

    def _compile(self, args: tuple[Any, ...]) -> Any:
        """Trace and compile a variant for `args` (ahead of time: it is not run here)."""
        from torch._dynamo.utils import compilation_time_metrics as metrics

        before = {k: len(metrics.get(k, ())) for k in (_CAPTURE, _BACKEND)}
        with aot_compile_gate_open():
            compiled = torch.compile(
                self.fn, fullgraph=True, dynamic=self.dynamic, options=self.options
            )
            variant = compiled.aot_compile((args, {}))  # type: ignore[attr-defined]
        capture, backend = (sum(metrics.get(k, [])[before[k] :]) for k in (_CAPTURE, _BACKEND))
        self.report.compiled += 1
        self.report.backend_s += backend
        self.report.trace_s += max(capture - backend, 0.0)
        blob = type(variant).serialize(variant, self._closure()).serialized_data
        self._add(variant, blob)
        return variant

    def _add(self, variant: Any, blob: bytes) -> None:
        variant.disable_guard_check()  # __call__ checks them before it calls
        self.variants.append(variant)
        self._blobs.append(blob)
        self._modules |= traced_modules(variant, self.fn.__module__)

    def _save(self) -> None:
        """Write every variant (a failure leaves them in use here, unsaved, said why)."""
        start = time.perf_counter()
        try:
            sources = artifacts.source_hashes(self._modules)
            assert self.file is not None  # named by _open, before any variant
            artifacts.write(self.file, self._key, sources, self._blobs)
        except Exception as err:  # noqa: BLE001 - not saved: the next process traces again
            self._note(f"could not save {self.name} ({type(err).__name__}: {err})")
            return
        self.report.save_s += time.perf_counter() - start

    def _fall_back(self, reason: str, *, warn: bool = True) -> None:
        """Plain torch.compile from now on; a warning where a saved compile was expected."""
        self.report.fallback = reason
        log.log(
            logging.WARNING if warn else logging.INFO,
            "%s runs as plain torch.compile: %s",
            self.name,
            reason,
        )
        self._plain = torch.compile(
            own_code(self.fn), fullgraph=True, dynamic=self.dynamic, options=self.options
        )

    def _note(self, note: str) -> None:
        self.report.notes.append(note)
        log.warning("%s", note)


# Where the compiled updates are not stored, by design (not a failure: no warning). A loaded
# ahead-of-time artifact runs without Inductor's CUDA graph trees, so a CUDA compile that replays
# as graph trees (the compile path's updates: options "triton.cudagraphs") compiles as plain
# torch.compile; CUDA compiles without them (the cudagraph path's updates, captured whole by the
# path itself, and the RNG's hash) are stored as on the CPU (docs/paths.md, "The compile store").
CUDA_PLAIN = (
    "on CUDA compiles that replay as Inductor's CUDA graph trees are not stored (a loaded "
    "artifact runs without them: docs/paths.md)"
)


class NotStoredError(Exception):
    """A function whose compiles this store does not keep, by design (the message says why)."""


def plain_on(devices: set[str], options: dict[str, Any] | None = None) -> str | None:
    """Why a compile with `options` whose inputs live on `devices` runs as plain torch.compile
    (None: stored)."""
    on_cuda = any(d.startswith("cuda") for d in devices)
    return CUDA_PLAIN if on_cuda and (options or {}).get("triton.cudagraphs") else None


def _unopened(fn: Callable[..., Any], dynamic: bool, options: dict[str, Any] | None) -> Any:
    """A StoredCompile of `fn` that has loaded and compiled nothing yet (its unpickling)."""
    return StoredCompile(fn, dynamic=dynamic, options=options)


def own_code(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with a code object of its own. Dynamo keeps compiled code per code object, so
    closures of one function (each learner's updates) would share entries: a later learner
    could run code another one compiled, under its options and guards, and add to that code's
    recompile limit. Its own code object makes each one compile as in a fresh process."""
    copy = types.FunctionType(
        fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
    )
    copy.__kwdefaults__, copy.__qualname__ = fn.__kwdefaults__, fn.__qualname__
    copy.__module__ = fn.__module__
    return copy


def aot_compile_gate_open() -> contextlib.AbstractContextManager[Any]:
    """torch releases that gate aot_compile behind Dynamo's `enable_aot_compile` (the
    compiled function then has no `aot_compile` unless it was on at torch.compile): opened
    for the call; a no-op where there is no such flag."""
    from torch._dynamo import config as dynamo_config

    if hasattr(dynamo_config, "enable_aot_compile"):
        return dynamo_config.patch(enable_aot_compile=True)
    return contextlib.nullcontext()


def unavailable() -> str | None:
    """Why this torch cannot save compiled functions (None: it can)."""
    from torch._inductor import config as inductor_config

    with aot_compile_gate_open():
        probe = torch.compile(lambda: None, fullgraph=True)
    if not hasattr(probe, "aot_compile") or not hasattr(torch.compiler, "load_compiled_function"):
        return f"torch {torch.__version__} has no aot_compile / load_compiled_function"
    if inductor_config.force_disable_caches:
        return "Inductor's caches are disabled (TORCHINDUCTOR_FORCE_DISABLE_CACHES)"
    return None


def traced_modules(variant: Any, module: str) -> set[str]:
    """The modules of `module`'s top-level package whose code the variant traced (torch's
    own are covered by its version in the key)."""
    package = module.split(".")[0]
    info = variant.source_info()
    names = {source.module for source in info.inlined_sources}
    return {n for n in names if n == package or n.startswith(package + ".")} | {module}


def _arg_key(arg: Any, dynamic: bool) -> Any:
    """An argument's part of the key; with dynamic shapes a tensor's sizes are not."""
    if dynamic and isinstance(arg, torch.Tensor):
        return ["tensor", str(arg.dtype), arg.dim(), str(arg.device)]
    return artifacts.structure(arg)


def _devices(described: Any) -> set[str]:
    """The devices of every tensor in a structure (compile_artifacts.structure)."""
    if isinstance(described, list) and described[:1] == ["tensor"]:
        return {described[-1]}
    values = described.values() if isinstance(described, dict) else described
    if not isinstance(values, (list, type({}.values()))):
        return set()
    return set().union(*(_devices(v) for v in values))


def summarize(stored: tuple[StoredCompile, ...]) -> dict[str, Any]:
    """What a path's stored compiles did (runner.setup merges it into summary.json's
    `compile`): variants loaded and compiled, their seconds, and every note and fallback."""
    reports = [s.report for s in stored]
    notes = [n for s in stored for n in s.report.notes]
    notes += [
        f"{s.name}: plain torch.compile ({s.report.fallback})" for s in stored if s.report.fallback
    ]
    return {
        "artifacts_loaded": sum(r.loaded for r in reports),
        "artifacts_compiled": sum(r.compiled for r in reports),
        "artifacts_load_s": round(sum(r.load_s for r in reports), 3),
        "artifacts_save_s": round(sum(r.save_s for r in reports), 3),
        "artifacts_trace_s": sum(r.trace_s for r in reports),
        "artifacts_backend_s": sum(r.backend_s for r in reports),
        "artifacts_notes": notes,
    }
