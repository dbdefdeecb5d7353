"""Env-steps/s of the G1 Walk Flat env per num_envs and layout, beside its physics ceiling.

    python scripts/bench_env.py --num-envs 64 --threads 2 --workers 1 2 --ceiling
    python scripts/bench_env.py --num-envs 256 1024 --workers 15 --threads 16 --ceiling \
        --results docs/results/h200_env.json --deadline 400
    python scripts/bench_env.py --num-envs 64 --threads 1 --profile --mj-timers --compare-rollout
    python scripts/bench_env.py --backend mjwarp --num-envs 1024 4096 --ceiling   # MuJoCo Warp
    python scripts/bench_env.py --backend mujoco mjwarp --num-envs 1024 --workers 15 --ceiling

Layouts: `--threads T` = the in-process thread pool of T threads (backend.mode=threads),
`--workers K` = K worker processes (backend.workers=K). `--ceiling` adds, for every layout, the
raw physics of the same model in the same layout (lab/bench/env_bench.py says
exactly what it runs), so each figure is also a fraction of what the machine can do.
`--results` appends one row per (layout, num_envs) to a JSON list; `--deadline` stops starting
new measurements after that many seconds (what finished is kept and written).

`--backend mjwarp` (the [mjwarp] extra) adds one row per num_envs for the MuJoCo Warp backend on
`--warp-device` (auto: CUDA when present; Warp's CPU device is for testing), mode "device", with
`--ceiling` its physics-only rate in the same worlds (lab/bench/env_bench_warp.py);
`--backend mujoco mjwarp` times both, side by side. Every row says its `backend`.
"""

from __future__ import annotations

import argparse

import _repo  # noqa: F401  (the repository root on sys.path: lab/ is not installed)

from lab.bench.env_grid import run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--num-envs", type=int, nargs="+", default=[16, 64, 256])
    p.add_argument("--threads", type=int, nargs="*", default=[], help="thread-pool layouts")
    p.add_argument("--workers", type=int, nargs="*", default=[], help="worker-process layouts")
    p.add_argument("--ceiling", action="store_true", help="raw-physics row of every layout")
    p.add_argument(
        "--backend",
        nargs="+",
        choices=["mujoco", "mjwarp"],
        default=["mujoco"],
        help="mujoco: the CPU layouts; mjwarp: MuJoCo Warp on --warp-device",
    )
    p.add_argument("--warp-device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--steps", type=int, default=200, help="timed steps per repeat")
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--actions", choices=["random", "zero"], default="random")
    p.add_argument("--profile", action="store_true", help="step-time breakdown (1 thread)")
    p.add_argument("--compare-rollout", action="store_true", help="pool vs mujoco.rollout")
    p.add_argument("--mj-timers", action="store_true", help="MuJoCo's internal timers")
    p.add_argument("--json", metavar="PATH", help="write every result as JSON")
    p.add_argument("--results", metavar="PATH", help="append rows to this JSON list")
    p.add_argument("--deadline", type=float, default=0.0, help="seconds; 0 = none")
    p.add_argument(
        "--idle-probe",
        type=float,
        default=0.0,
        help="time only while the 2-thread probe speedup is >= this (shared boxes)",
    )
    p.add_argument("--idle-timeout", type=float, default=900.0)  # fmt: skip
    a = p.parse_args(argv)
    return run(a, argv)


if __name__ == "__main__":
    raise SystemExit(main())
