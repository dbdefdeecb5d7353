"""Whether the captured Warp step computes the eager step's bits in deterministic mode, and
what breaks it. Two envs built as tests/envs/test_g1_warp_gpu.py builds them (6 worlds,
deterministic, background builds), compared step by step over 40 control steps:

  graph        b captured (torch graphs around Warp's), a not: the GPU test's comparison
  eager        neither captured (both replay Warp's physics graphs, the task eager)
  warp_eager   a's physics as eager Warp launches (its Warp graphs dropped), b's replayed
  unlocked     `graph` with physics.WARP_WORK a no-op: the two builds and the first capture may
               use Warp at once (run it in a process of its own: it may fault)
  run_to_run   `eager`, then `graph`, with Warp's own deterministic mode on for every module
               (wp.config.deterministic = RUN_TO_RUN; MuJoCo Warp's opt.deterministic sets it
               only on the kernels it marks, not on every kernel): whether every kernel's
               atomics are what keeps two eager envs from repeating each other's bits (a process
               of its own: the setting changes every module Warp builds)

export PYTHONPATH=/tmp/site:$PWD   # Warp and the wheels as warp_carry.sh installs them
python3 scripts/device/diagnose/warp_det.py graph eager warp_eager
python3 scripts/device/diagnose/warp_det.py unlocked
python3 scripts/device/diagnose/warp_det.py run_to_run
"""

import contextlib
import os
import sys

sys.path.insert(0, os.getcwd())
import numpy as np
import torch

from flashsac_bench.config.backend import MjwarpConfig, WarpOptions
from flashsac_bench.envs import make_env
from flashsac_bench.envs.g1.warp import physics
from tests.envs.test_g1_warp import TASK, _actions, _snapshot

DEV = "cuda:0"


def env():
    return make_env(TASK, MjwarpConfig(warp=WarpOptions(device=DEV, deterministic=True)), 6, 5)


acts = torch.as_tensor(_actions(n=6, steps=40, seed=3), device=DEV)


def worst_difference(got, want):
    a, b = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def run(mode):
    if mode == "unlocked":
        physics.WARP_WORK = contextlib.nullcontext()
    if mode == "run_to_run":
        import warp as wp

        wp.config.deterministic = wp.DeterministicMode.RUN_TO_RUN
        for inner in ("eager", "graph"):
            run(inner)
        return
    with env() as a, env() as b:
        a.reset()
        b.reset()
        static = torch.zeros_like(acts[0])
        captured = mode in ("graph", "unlocked")
        if captured:
            assert b.capture(static), b.capture_error
        if mode == "warp_eager":
            a.physics._graphs = {}
        print(f"WARP {mode}: step modes a={a.step_mode} b={b.step_mode}", flush=True)
        first, worst, differing = None, {}, 0
        for i, x in enumerate(acts):
            want = _snapshot(a.step(x))
            static.copy_(x)
            got = _snapshot(b.step(static if captured else x))
            for k in want:
                d = worst_difference(got[k], want[k])
                worst[k] = max(worst.get(k, 0.0), d)
                if d and first is None:
                    first = (i, k, d)
            differing = int(np.sum(np.asarray(got["obs"]) != np.asarray(want["obs"])))
        print(
            f"WARP {mode}: first difference {first}; obs differing at the last step {differing};"
            " worst",
            {k: f"{v:.2g}" for k, v in worst.items() if v},
            flush=True,
        )


for m in sys.argv[1:] or ("graph", "eager", "warp_eager"):
    try:
        run(m)
    except Exception as e:
        print(f"WARP {m}: error {type(e).__name__}: {e}", flush=True)
