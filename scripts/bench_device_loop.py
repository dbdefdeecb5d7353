"""The training loop with a device env (backend=mjwarp), timed per lane in one process: the env
step alone, the learner alone, one after the other, and beside each other on two streams
(lab/bench/device_loop.py says exactly what each mode runs).

    python scripts/bench_device_loop.py +experiment=g1_walk_warp run.num_envs=2048 \
        update.updates_per_step=16 replay.batch_size=2048 \
        --iterations 200 --rounds 3 --deadline 150 --json $OUT/device_loop.json

Positional arguments are Hydra overrides of the training config; the modes take turns for
`--rounds` rounds (a round is not started past `--deadline` seconds). Prints a table; `--json`
keeps every figure.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _repo  # noqa: F401  (the repository root on sys.path: lab/ is not installed)

from lab.bench import device_loop


def compose(overrides: list[str]):
    from hydra import compose, initialize_config_module

    from flashsac_bench.cli.preflight import CONFIG_MODULE
    from flashsac_bench.config.root import to_config
    from flashsac_bench.config.store import register_configs

    register_configs()
    with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
        return to_config(compose(config_name="config", overrides=overrides))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("overrides", nargs="*", help="Hydra overrides of the training config")
    p.add_argument("--modes", nargs="+", default=list(device_loop.MODES))
    p.add_argument("--iterations", type=int, default=200, help="per mode and round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--deadline", type=float, default=0.0, help="seconds; 0 = none")
    p.add_argument("--json", type=Path, help="write the result here")
    args = p.parse_args(argv)
    overrides = ["run.progress=plain", "logger=none", *args.overrides]
    result = device_loop.run(
        compose(overrides), tuple(args.modes), args.iterations, args.rounds, args.deadline
    )
    if args.json:
        device_loop.write(result, args.json)
    print(device_loop.table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
