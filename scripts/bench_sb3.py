"""FlashSAC beside Stable-Baselines3's SAC on Gymnasium tasks (issue 49): the same task, machine,
env-step budget and seeds, one training at a time, each in its own process with a deadline.

    python scripts/bench_sb3.py --envs HalfCheetah-v5 Humanoid-v5 --seeds 1 2 3 \\
        --steps 1000000 --out docs/results/sb3/<date> --deadline-s 36000

Writes into --out: runs.jsonl (every training, failures and cut ones included), runs/<name>/
(FlashSAC's run dir, or SB3's episodes.jsonl and meta.json, and each one's train.log), and one
table and one plot: sb3_comparison.md / .json / .png (the episodic return at fixed env-step
counts, the wall clock to SB3's final return, the trained policies' deterministic return).
--report-only rebuilds them from --out. Needs the [gymnasium] and [sb3] extras. The
comparison's definitions: lab/sb3_bench.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _repo  # noqa: F401

from lab.sb3_bench import LEARNERS, RL_ZOO, Plan, report, run_all


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--envs", nargs="+", default=["HalfCheetah-v5", "Humanoid-v5"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    ap.add_argument("--steps", type=int, default=1_000_000, help="env steps per training")
    ap.add_argument("--at", nargs="+", type=int, help="env steps the table reports returns at")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--deadline-s", type=float, default=36_000.0, help="the whole benchmark")
    ap.add_argument("--run-limit-s", type=float, default=10_800.0, help="one training")
    ap.add_argument("--learners", nargs="+", choices=LEARNERS, default=list(LEARNERS))
    ap.add_argument("--experiment", default="gym_mujoco", help="FlashSAC's task=gymnasium preset")
    ap.add_argument(
        "--flashsac", nargs="*", default=[], metavar="KEY=VALUE",
        help="Hydra overrides of FlashSAC's runs (after its preset)",
    )  # fmt: skip
    ap.add_argument("--sb3-device", default="auto", help="SB3's device (auto: CUDA when there)")
    ap.add_argument("--sb3-threads", type=int, default=0, help="SB3's torch threads (0: default)")
    ap.add_argument("--eval-episodes", type=int, default=10, help="of each trained policy")
    ap.add_argument("--keep-checkpoints", action="store_true", help="FlashSAC's (GBs each)")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    if args.report_only:
        if not (args.out / "plan.json").is_file():
            print(f"bench_sb3.py: {args.out} holds no benchmark (plan.json)", file=sys.stderr)
            return 2
        report(args.out)
        print((args.out / "sb3_comparison.md").read_text())
        return 0
    unknown = [e for e in args.envs if e not in RL_ZOO] if "sb3" in args.learners else []
    if unknown:
        print(f"bench_sb3.py: no rl-baselines3-zoo entry for {unknown[0]} (lab/sb3_bench.py "
              f"RL_ZOO: {', '.join(RL_ZOO)})", file=sys.stderr)  # fmt: skip
        return 2
    if (args.out / "runs.jsonl").exists():
        print(f"bench_sb3.py: {args.out} holds a benchmark already: another --out",
              file=sys.stderr)  # fmt: skip
        return 2
    at = sorted(set(args.at or [args.steps * k // 4 for k in (1, 2, 3, 4)]))
    plan = Plan(
        envs=args.envs,
        seeds=args.seeds,
        steps=args.steps,
        out=args.out,
        deadline_s=args.deadline_s,
        run_limit_s=args.run_limit_s,
        at_steps=at,
        experiment=args.experiment,
        flashsac_overrides=args.flashsac,
        sb3_device=args.sb3_device,
        sb3_threads=args.sb3_threads,
        eval_episodes=args.eval_episodes,
        keep_checkpoints=args.keep_checkpoints,
        learners=tuple(args.learners),
    )
    run_all(plan)
    print((args.out / "sb3_comparison.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
