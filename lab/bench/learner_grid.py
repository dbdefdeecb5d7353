"""The learner-only timing grid of scripts/bench_learner.py: batch sizes x update ratios x
paths x (gemm align, PathConfig variants), optionally beside upstream unilab-rl, one row per
configuration appended to --output as it finishes, then the ratios between this run's rows."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import sys
import time

import torch

from lab.bench.learner_bench import plot_scaling, time_ours, time_unilab
from lab.bench.synthetic import Setup, parse_options


def run(args: argparse.Namespace) -> int:
    """scripts/bench_learner.py: its grid, or with --plot-from only the plot of earlier rows."""
    if args.plot_from:
        plot_scaling(json.loads(args.plot_from.read_text()), args.plot)
        print(f"wrote {args.plot}")
        return 0
    rows, failures = measure(args)
    print_ratios(rows)
    if args.plot and rows:
        try:
            plot_scaling(rows, args.plot)
            print(f"wrote {args.plot}")
        except ImportError as err:  # a device image without matplotlib: plot later (--plot-from)
            print(f"no plot ({err}); make it with --plot-from {args.output}")
    if failures:
        print(f"\n{len(failures)} configuration(s) failed:", *failures, sep="\n  ", flush=True)
        return 1
    return 0


def measure(args: argparse.Namespace) -> tuple[list[dict], list[str]]:
    """Time every configuration of the grid (rows written to --output as they finish); also
    the configurations that raised, each reported as it fails while the grid goes on."""
    start = time.perf_counter()

    def out_of_time(what: str) -> bool:
        late = args.deadline_s > 0 and time.perf_counter() - start > args.deadline_s
        if late:
            print(f"skipped (deadline {args.deadline_s:.0f} s): {what}", flush=True)
        return late

    torch.set_float32_matmul_precision(args.matmul_precision)
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    meta = {
        "device": _device_name(args.device),
        "torch": torch.__version__,
        "date": dt.date.today().isoformat(),
        "command": command,
    }
    rows: list[dict] = []
    failures: list[str] = []  # configurations that raised (reported, the grid goes on)

    def record(impl: str, path: str, setup: Setup, timing) -> None:
        row = {
            "impl": impl,
            "path": path,
            "batch_size": setup.batch_size,
            "updates_per_step": setup.updates_per_step,
            "policy_frequency": setup.policy_frequency,
            "dtype": setup.dtype,
            "gemm_align": setup.resolved_gemm_align if impl == "ours" else None,
            "path_options": dict(setup.path_options) if impl == "ours" else None,
            "median_ms": round(timing.median_ms, 4),
            "p90_ms": round(timing.p90_ms, 4),
            "mean_ms": round(timing.mean_ms, 4),
            "cycles": len(timing.samples_ms),
            "cold_start_s": round(timing.cold_start_s, 2),
            **meta,
        }
        rows.append(row)
        opts = _label(setup.path_options)
        align = f"align {setup.resolved_gemm_align} {opts}" if impl == "ours" else "(upstream)"
        print(
            f"{impl:>9} {path:>9} {align:>10} B={setup.batch_size:<5} u{setup.updates_per_step:<2} "
            f"median {timing.median_ms:9.3f} ms  p90 {timing.p90_ms:9.3f} ms  "
            f"cold {timing.cold_start_s:6.1f} s",
            flush=True,
        )
        if args.output:
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(json.dumps(rows, indent=2) + "\n")

    ref_configs = (
        None if args.reference_configs == "all" else set(args.reference_configs.split(","))
    )
    variants = [
        parse_options("" if v.strip() == "base" else v)
        for v in (args.path_variants.split(";") if args.path_variants else [""])
    ]
    configs = [(int(a), v) for a in args.gemm_align.split(",") for v in variants]
    for b in (int(x) for x in args.batch_sizes.split(",")):
        for u in (int(x) for x in args.updates.split(",")):
            last = None
            ran_eager = referenced = False
            timed: set = set()  # (align, path, options that matter on that path)
            wanted = ref_configs is None or f"{b}x{u}" in ref_configs
            for align, options in configs:
                setup = Setup(
                    batch_size=b,
                    updates_per_step=u,
                    policy_frequency=args.policy_frequency,
                    capacity_batches=4,
                    tiny=args.tiny,
                    dtype=args.dtype,
                    device=args.device,
                    gemm_align=align,
                    path_options=options,
                )
                for path in args.paths.split(","):
                    key = (align, path, _label(_relevant(path, options)))
                    if key in timed or out_of_time(f"{path} B={b} u{u} {_label(options)}"):
                        continue  # a repeat (options that do not change this path) or too late
                    cycles = args.eager_cycles if path == "eager" else args.cycles
                    last = None  # one learner (and its compiled graphs) alive at a time
                    try:
                        timing, last = time_ours(setup, path, cycles, min(args.warmup, cycles))
                    except Exception as err:  # noqa: BLE001 - one bad variant must not end a sweep
                        what = f"{path} B={b} u{u} {_label(options)}"
                        failures.append(f"{what}: {type(err).__name__}: {_first_line(err)}")
                        print(f"     ours {what} FAILED: {failures[-1]}", flush=True)
                        continue
                    timed.add(key)
                    ran_eager |= path == "eager"
                    record("ours", path, setup, timing)
                # The reference right after the first variant whose last path ran (it times
                # upstream on that learner's data), whatever the deadline says: the ratios need
                # it, and --deadline-s cuts our later variants instead. Its eager mode beside
                # ours where ours ran eager, its graph always.
                if not referenced and args.reference == "unilab-rl" and wanted and last is not None:
                    referenced = True
                    modes = [m for m in ("eager", "cudagraph") if m != "eager" or ran_eager]
                    for mode in modes:
                        eager = mode == "eager"
                        cycles = args.eager_cycles if eager else args.cycles
                        try:
                            timing = time_unilab(
                                setup, last, cycles, min(args.warmup, cycles), eager=eager
                            )
                            record("unilab-rl", mode, setup, timing)
                        except Exception as err:  # noqa: BLE001 - report, keep measuring ours
                            kind = type(err).__name__
                            print(f"unilab-rl {mode} B={b} u{u} failed: {kind}: {err}", flush=True)
            last = None
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    return rows, failures


def print_ratios(rows: list[dict]) -> None:
    """Median ms per cycle of every (B, u, align, variant), ours beside upstream's eager and
    graph, and the ratios within this run: ours eager / upstream eager, our eager / our
    cudagraph, upstream graph / our cudagraph."""
    print("\nmedian ms per cycle (ratios within this run)")
    columns = ["eager", "compile", "cudagraph", "up eager", "up graph"]
    print(
        f"{'B':>5} {'u':>3} {'align':>5} "
        + " ".join(f"{c:>10}" for c in columns)
        + "  eager/up-eager  eager/graph  up-graph/graph"
    )
    keyed = {
        (
            r["impl"],
            r["path"],
            r["batch_size"],
            r["updates_per_step"],
            r["gemm_align"],
            _label(r["path_options"]),
        ): r
        for r in rows
    }
    ref = {
        (r["path"], r["batch_size"], r["updates_per_step"]): r for r in rows if r["impl"] != "ours"
    }
    for b in sorted({r["batch_size"] for r in rows}):
        for u in sorted({r["updates_per_step"] for r in rows}):
            ours = sorted(
                {(r["gemm_align"], _label(r["path_options"])) for r in rows if r["impl"] == "ours"}
            )
            for a, var in ours:
                vals = [
                    keyed.get(("ours", p, b, u, a, var)) for p in ("eager", "compile", "cudagraph")
                ]
                vals += [ref.get((p, b, u)) for p in ("eager", "cudagraph")]
                if not any(vals[:3]):
                    continue
                med = [v["median_ms"] if v else float("nan") for v in vals]
                print(
                    f"{b:>5} {u:>3} {a:>5} "
                    + " ".join(f"{m:10.3f}" for m in med)
                    + f"  {med[0] / med[3]:13.2f}x  {med[0] / med[2]:10.2f}x"
                    + f"  {med[4] / med[2]:13.2f}x  {var}"
                )


def _device_name(device: str) -> str:
    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return "cpu"


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else ""


def _label(options) -> str:
    """'inductor_options={...}' for a set of PathConfig options, 'base' for the defaults."""
    return ",".join(f"{k}={v}" for k, v in dict(options or {}).items()) or "base"


def _relevant(path: str, options) -> tuple:
    """The options that change what `path` runs (rows with equal ones would repeat): the eager
    path compiles nothing and captures nothing, so no PathConfig option changes it."""
    return () if path == "eager" else tuple(options)
