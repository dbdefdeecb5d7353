"""The sweep's winner as Hydra overrides: of the runs that reached the walking thresholds, the
one with the fewest loop seconds to walk (since start less the run's setup: a point's first run
pays a cold compile that a warm cache does not; ties: fewer iterations). Prints the overrides on one
line (nothing, exit 1, where no run walked), for `warp_loop.sh walk DEADLINE $(cat FILE)`.

    python3 scripts/sweep_winner.py RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _repo  # noqa: F401  (the repository root on sys.path: lab/ is not installed)

from lab.analysis.parity_runs import load_run
from lab.analysis.walk_utd import walk_record

KEYS = (
    ("update", "updates_per_step"),
    ("run", "num_envs"),
    ("replay", "batch_size"),
    ("learner", "lr_init"),
    ("learner", "lr_peak"),
    ("learner", "lr_end"),
)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("run_dirs", nargs="+", type=Path)
    walked = []
    for d in ap.parse_args(argv).run_dirs:
        if not (d / "summary.json").is_file():
            continue
        run = load_run(d)
        r = walk_record(run)
        if r.get("reached"):
            walked.append((r["since_start_s"] - r["setup_s"], r["iteration"], run))
    if not walked:
        print("sweep_winner: no run reached the walking thresholds", file=sys.stderr)
        return 1
    loop_s, iteration, run = min(walked, key=lambda w: (w[0], w[1]))
    config = run.summary["config"]
    print(" ".join(f"{g}.{k}={config[g][k]}" for g, k in KEYS))
    name = run.run_dir.name
    print(f"sweep_winner: {name} ({loop_s:.1f} loop s, iteration {iteration})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
