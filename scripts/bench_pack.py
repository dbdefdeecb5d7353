"""The collector's packing cost per tick at G1 dims, without the physics (bench.pack_bench).

python scripts/bench_pack.py --num-envs 512 1024
"""

from __future__ import annotations

import argparse

from flashsac_bench.bench.pack_bench import time_pack


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--num-envs", type=int, nargs="+", default=[1024])
    p.add_argument("--ticks", type=int, default=3000)
    args = p.parse_args(argv)
    for n in args.num_envs:
        r = time_pack(n, ticks=args.ticks)
        print(f"{n:6d} envs: pack_tick median {r['median_us']:.0f} us, p90 {r['p90_us']:.0f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
