"""Host cost of one G1 worker shard's control step without its physics (bench.shard_host_bench).

python scripts/bench_shard_host.py --num-envs 34 68
git worktree add /tmp/base <commit> && python scripts/bench_shard_host.py --baseline /tmp/base
"""

from __future__ import annotations

import argparse
import json

from flashsac_bench.bench.shard_host_bench import time_shard_host


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--num-envs", type=int, nargs="+", default=[34, 68])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--per-round", type=int, default=50)
    p.add_argument(
        "--baseline",
        help="another checkout's root (e.g. a git worktree): timed interleaved in this process",
    )
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args(argv)
    results = []
    for n in args.num_envs:
        r = time_shard_host(n, args.rounds, args.per_round, args.baseline)
        results.append(r)
        for name in ("baseline", "current"):
            if name in r:
                x = r[name]
                print(
                    f"{n:4d} envs {name:8s}: step {x['step_median_us']:.0f} us "
                    f"(p90 {x['step_p90_us']:.0f}), reset of 2 envs {x['reset2_median_us']:.0f} us "
                    f"(p90 {x['reset2_p90_us']:.0f})"
                )
        if "baseline" in r:
            b, c = r["baseline"], r["current"]
            print(
                f"{n:4d} envs current / baseline: step "
                f"{c['step_median_us'] / b['step_median_us']:.2f}, reset "
                f"{c['reset2_median_us'] / b['reset2_median_us']:.2f}; "
                f"same outputs: {r['same_outputs']}"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
