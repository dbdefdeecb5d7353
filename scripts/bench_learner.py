#!/usr/bin/env python
"""Learner-only cycle time: batch sizes x update ratios x paths (+ upstream unilab-rl).

  python scripts/bench_learner.py --device cuda --dtype bfloat16 --batch-sizes 256,2048 \
      --updates 2,8 --paths eager,compile,cudagraph --reference unilab-rl \
      --output docs/results/h200_learner.json

Rows are appended to --output (a JSON list) as they finish, so a cut-off run keeps its rows.
Ratios are printed only between rows measured in this process.

Batch-size scaling (issue 13): u8 at B = 256 ... 8192, ours compile + cudagraph and unilab-rl,
one process, rows + a log-log plot (the plot needs matplotlib; without it, make the plot later
from the rows with --plot-from):

  python scripts/bench_learner.py --scaling --cycles 30 --deadline-s 300 \
      --output docs/results/h200_learner_scaling.json --plot docs/results/h200_learner_scaling.png
  python scripts/bench_learner.py --plot-from docs/results/h200_learner_scaling.json \
      --plot docs/results/h200_learner_scaling.png
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import sys
import time
from pathlib import Path

import torch

from flashsac_bench.bench.learner_bench import plot_scaling, time_ours, time_unilab
from flashsac_bench.bench.synthetic import Setup, parse_options


def _device_name(device: str) -> str:
    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return "cpu"


def _label(options) -> str:
    """'compile_rng=True,...' for a set of PathConfig options, 'base' for the defaults."""
    return ",".join(f"{k}={v}" for k, v in dict(options or {}).items()) or "base"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"])
    ap.add_argument("--matmul-precision", default="high", choices=["highest", "high"])
    ap.add_argument("--batch-sizes", default="256,2048")
    ap.add_argument("--updates", default="2,8")
    ap.add_argument("--policy-frequency", type=int, default=2)
    ap.add_argument("--paths", default="eager,compile,cudagraph")
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--eager-cycles", type=int, default=30, help="fewer for the slow eager path")
    ap.add_argument("--reference", choices=["none", "unilab-rl"], default="none")
    ap.add_argument("--reference-configs", default="all", help='"all" or e.g. "2048x8,256x8"')
    ap.add_argument(
        "--gemm-align",
        default="0",
        help="matmul dim padding; a list times each side by side (1,8); 0: 8 on CUDA, 1 on CPU",
    )
    ap.add_argument(
        "--path-variants",
        default="",
        help="';'-separated PathConfig option sets timed side by side, e.g. "
        "'base;compile_rng=true' ('base' or '' = defaults)",
    )
    ap.add_argument("--tiny", action="store_true", help="small networks (CPU smoke test)")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument(
        "--scaling",
        action="store_true",
        help="preset: --batch-sizes 256,1024,2048,4096,8192 --updates 8 --paths compile,cudagraph "
        "--reference unilab-rl --reference-configs all",
    )
    ap.add_argument(
        "--deadline-s",
        type=float,
        default=0.0,
        help="start no new configuration of ours after this many seconds (0: no limit); the "
        "reference of a (B, u) still runs once its first variant has",
    )
    ap.add_argument("--plot", type=Path, default=None, help="PNG: median ms vs batch size")
    ap.add_argument("--plot-from", type=Path, default=None, help="rows JSON: only make --plot")
    args = ap.parse_args(argv)
    if args.plot_from:
        if not args.plot:
            ap.error("--plot-from needs --plot")
        plot_scaling(json.loads(args.plot_from.read_text()), args.plot)
        print(f"wrote {args.plot}")
        return 0
    if args.scaling:
        args.batch_sizes, args.updates = "256,1024,2048,4096,8192", "8"
        args.paths = "compile,cudagraph"
        args.reference, args.reference_configs = "unilab-rl", "all"
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
            timed: set = set()  # (align, path, options that matter on that path)
            wanted = ref_configs is None or f"{b}x{u}" in ref_configs
            for i, (align, options) in enumerate(configs):
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
                    key = (align, path, _relevant(path, options))
                    if key in timed or out_of_time(f"{path} B={b} u{u} {options}"):
                        continue  # a repeat (compile-only options on another path) or too late
                    timed.add(key)
                    cycles = args.eager_cycles if path == "eager" else args.cycles
                    last = None  # one learner (and its compiled graphs) alive at a time
                    timing, last = time_ours(setup, path, cycles, min(args.warmup, cycles))
                    record("ours", path, setup, timing)
                # The reference right after the first variant, whatever the deadline says: the
                # ratios need it, and --deadline-s cuts our later variants instead.
                if i == 0 and args.reference == "unilab-rl" and wanted and last is not None:
                    try:
                        timing = time_unilab(setup, last, args.cycles, args.warmup)
                        record("unilab-rl", "cudagraph", setup, timing)
                    except Exception as err:  # noqa: BLE001 - report and keep measuring ours
                        kind = type(err).__name__
                        print(f"unilab-rl B={b} u{u} failed: {kind}: {err}", flush=True)
            last = None
            if torch.cuda.is_available():
                torch.cuda.empty_cache()

    print("\nmedian ms per cycle (ratios within this run)")
    print(
        f"{'B':>5} {'u':>3} {'align':>5} "
        + " ".join(f"{p:>10}" for p in ["eager", "compile", "cudagraph", "unilab-rl"])
        + "   eager/graph  upstream/graph"
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
    ref = {(r["batch_size"], r["updates_per_step"]): r for r in rows if r["impl"] != "ours"}
    for b in sorted({r["batch_size"] for r in rows}):
        for u in sorted({r["updates_per_step"] for r in rows}):
            ours = sorted(
                {(r["gemm_align"], _label(r["path_options"])) for r in rows if r["impl"] == "ours"}
            )
            for a, var in ours:
                paths = ("eager", "compile", "cudagraph")
                vals = [keyed.get(("ours", p, b, u, a, var)) for p in paths] + [ref.get((b, u))]
                med = [v["median_ms"] if v else float("nan") for v in vals]
                print(
                    f"{b:>5} {u:>3} {a:>5} "
                    + " ".join(f"{m:10.3f}" for m in med)
                    + f"   {med[0] / med[2]:10.2f}x  {med[3] / med[2]:13.2f}x  {var}"
                )
    if args.plot and rows:
        try:
            plot_scaling(rows, args.plot)
            print(f"wrote {args.plot}")
        except ImportError as err:  # the H200 image has no matplotlib: plot later (--plot-from)
            print(f"no plot ({err}); make it with --plot-from {args.output}")
    return 0


# Options that only change the compile path: their cudagraph / eager rows would repeat base.
_COMPILE_ONLY = {"inductor_cudagraphs"}


def _relevant(path: str, options) -> tuple:
    """The options that change what `path` runs (rows with equal ones would repeat)."""
    return tuple((k, v) for k, v in options if path == "compile" or k not in _COMPILE_ONLY)


if __name__ == "__main__":
    raise SystemExit(main())
