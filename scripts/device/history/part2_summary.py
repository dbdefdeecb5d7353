#!/usr/bin/env python
"""The closing summary of scripts/device/history/learner_part2.sh.

  python scripts/device/history/part2_summary.py WORK_DIR OUT_DIR

Reads what the suite wrote (missing pieces are reported as missing) and prints one short table:
GPU tests, numerics verdicts per pair (worst lockstep difference relative to the cycle's
movement: 0 means bit-identical; bf16 fast paths also their error against the fp32 oracle
relative to eager's), replay stability, every learner row with its speed-up over unilab-rl of
the same (B, u), the kernel profiles and the scaling rows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def load(path: Path):
    return json.loads(path.read_text()) if path.exists() else None


def options(row: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in (row.get("path_options") or {}).items()) or "base"


def main(work: Path, out: Path) -> None:
    print("\n===== learner part 2: summary =====")
    log = work / "logs/gpu_tests.log"
    lines = log.read_text().strip().splitlines() if log.exists() else []
    print("gpu tests:", lines[-1] if lines else "no log")
    for name in ("numerics_bf16", "numerics_bf16_options"):
        report = load(out / f"{name}.json")
        if not report:
            print(f"{name}: missing")
            continue
        for rep in report["reports"]:
            u = rep["setup"]["updates_per_step"]
            for pair in rep["pairs"]:
                worst = max(pair["lockstep_worst_rel"].values())
                acc = pair["accuracy_vs_fp32_oracle"]
                ratio = f", oracle ratio {max(v['ratio'] for v in acc.values()):.2f}" if acc else ""
                verdict = "ok" if pair["ok"] else "FAIL"
                print(f"{name} u{u} {' vs '.join(pair['pair'])}: {worst:.2e}{ratio} {verdict}")
            print(f"{name} u{u} all checks: {'ok' if rep['ok'] else 'FAILED'}")
    for path in (out / "replay_stability.json", work / "replay_stability_fused.json"):
        report = load(path)
        if report is None:
            print(f"stability {path.stem}: missing")
            continue
        failed = [c["check"] for c in report["checks"] if not c["ok"]]
        print(f"stability {path.stem}: {'OK' if not failed else 'FAILED ' + '; '.join(failed)}")
    rows = load(out / "h200_learner_part2.json") or []
    ref = {(r["batch_size"], r["updates_per_step"]): r for r in rows if r["impl"] != "ours"}
    head = ("B", 5), ("u", 2), ("path", 9), ("median", 8), ("p90", 8), ("cold s", 6), ("/unilab", 7)
    print(" ".join(f"{name:>{width}}" for name, width in head) + "  options")
    for r in rows:
        up = ref.get((r["batch_size"], r["updates_per_step"]))
        gain = up["median_ms"] / r["median_ms"] if up and r["impl"] == "ours" else float("nan")
        path = r["path"] if r["impl"] == "ours" else "unilab-rl"
        print(
            f"{r['batch_size']:>5} {r['updates_per_step']:>2} {path:>9} {r['median_ms']:8.3f} "
            f"{r['p90_ms']:8.3f} {r['cold_start_s']:6.1f} {gain:7.2f}  "
            + (options(r) if r["impl"] == "ours" else "")
        )
    for path in (out / "profile_b256_u8.json", work / "profile_b256_u8_fused.json"):
        r = load(path)
        if r:
            print(
                f"profile {path.stem}: {r['kernels_per_cycle']:.0f} kernels/cycle, "
                f"{r['gpu_ms_per_cycle']:.3f} GPU ms, {r['us_per_kernel']:.2f} us/kernel, "
                f"wall {r['wall_median_ms']:.3f} ms"
            )
    for r in load(out / "h200_learner_scaling.json") or []:
        print(
            f"scaling {r['impl']:>9} {r['path']:>9} B={r['batch_size']:<5} "
            f"u{r['updates_per_step']} {r['median_ms']:9.3f} ms"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
