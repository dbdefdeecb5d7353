#!/usr/bin/env python
"""Learning parity of the update paths: same seeds, same env settings, N iterations each.

GPU (G1 Walk Flat at the H200 preset; about 10 min per run at that preset's size):
    python scripts/learning_parity.py --preset g1_walk_h200 --paths eager,compile,cudagraph \
        --seeds 1,2,3 --iterations 2000 --out parity_h200
CPU (the CI variant, tests/evaluation/test_learning_parity.py):
    python scripts/learning_parity.py --preset parity_cpu --paths eager,compile --seeds 1,2,3 \
        --iterations 16 --out parity_cpu
Runs made elsewhere (e.g. `python -m flashsac_bench -m +experiment=g1_walk_h200
path=compile,cudagraph run.seed=1,2,3`), analysed only:
    python scripts/learning_parity.py --analyze outputs/multirun/<date>/<time> --out parity_h200

Every run is composed exactly as `python -m flashsac_bench +experiment=<preset> path=<p>
run.seed=<s> run.iterations=<N> logger=tensorboard [--override ...]` composes it (Hydra compose,
`to_config`, `cli.train.train`) into OUT/runs/<path>_s<seed>/; a complete run with the same
settings is reused (--fresh re-runs). Curves come from each run's summary.json `rows_all`
(reward/mean, mean episode length / return of the last 100 episodes, wall-clock) and its
TensorBoard `Reward/tracking_*` scalars (one point per run.log_every iterations; shown as the
fraction of the term's maximum weight * ctrl_dt).

Writes OUT/parity.json, OUT/parity.md and OUT/parity.png:
  * per-checkpoint mean ± 95% CI over seeds (Student t) of each metric, per path;
  * an exact (or Monte-Carlo) two-sided permutation test per pair of paths on the final values
    (mean over the last --final-window iterations). Primary: the final episode return, Bonferroni
    over the pairs; the other metrics count only below alpha / (all tests). With n seeds per path
    the smallest attainable p is 2 / C(2n, n) (0.1 at n = 3, 0.029 at 4, 0.008 at 5): too few
    seeds make the comparison undecidable, and the report says so instead of "not
    distinguishable";
  * same-seed lockstep divergence: the paths start from identical weights, replay contents and
    env states (warm-up iterations are checked to be bit-identical), so for the first
    --lockstep-horizon iterations the same-seed curves should differ only by floating-point
    reassociation amplified by the closed loop. Reported as max |A - B| over those iterations
    divided by the seed-to-seed spread of the reference path (mean |ref_s - ref_s'|);
  * time to the walking thresholds (mean episode length >= 900, lin-vel tracking >= 80% of max).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import _repo  # noqa: F401  (the repository root on sys.path: lab/ is not installed)

from flashsac_bench.config.run import WALK_EPISODE_LENGTH, WALK_TRACKING_FRAC
from lab.analysis.parity import run_parity


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--preset", default="g1_walk_h200", help="experiment preset ('' for none)")
    ap.add_argument("--paths", default=None, help="default: eager,compile (+cudagraph on CUDA)")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--override", action="append", default=[], help="extra Hydra override")
    ap.add_argument("--out", type=Path, default=Path("parity"))
    ap.add_argument("--analyze", nargs="+", type=Path, default=None, help="run dirs or sweeps")
    ap.add_argument("--fresh", action="store_true", help="re-run complete runs too")
    ap.add_argument("--checkpoints", type=int, default=10, help="blocks in the table")
    ap.add_argument("--final-window", type=int, default=0, help="default: iterations // 10")
    ap.add_argument("--lockstep-horizon", type=int, default=24)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--permutations", type=int, default=20_000)
    ap.add_argument("--length-threshold", type=float, default=WALK_EPISODE_LENGTH)
    ap.add_argument("--tracking-threshold", type=float, default=WALK_TRACKING_FRAC)
    ap.add_argument("--smooth", type=int, default=0, help="plot smoothing (iterations)")
    args = ap.parse_args(argv)
    args.seeds = [int(s) for s in str(args.seeds).split(",") if s]
    if args.paths is None:
        import torch

        args.paths = "eager,compile" + (",cudagraph" if torch.cuda.is_available() else "")
    args.paths = [p for p in args.paths.split(",") if p]
    args.preset = args.preset or None
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("tensorboard").setLevel(logging.WARNING)  # event-file reader chatter
    return run_parity(args, argv)


if __name__ == "__main__":
    raise SystemExit(main())
