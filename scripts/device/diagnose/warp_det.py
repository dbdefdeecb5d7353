"""Which part of the captured Warp step differs from the eager step in deterministic mode.

export PYTHONPATH=/tmp/site:$PWD   # Warp and the wheels as warp_carry.sh installs them
python3 scripts/device/diagnose/warp_det.py
"""

import os
import sys

sys.path.insert(0, os.getcwd())
import numpy as np
import torch

from flashsac_bench.config.backend import MjwarpConfig, WarpOptions
from flashsac_bench.envs import make_env
from tests.envs.test_g1_warp import TASK, _actions, _snapshot

DEV = "cuda:0"


def env():
    return make_env(TASK, MjwarpConfig(warp=WarpOptions(device=DEV, deterministic=True)), 6, 5)


acts = torch.as_tensor(_actions(n=6, steps=40, seed=3), device=DEV)


def run(mode):
    with env() as a, env() as b:
        a.reset()
        b.reset()
        static = torch.zeros_like(acts[0])
        if mode == "graph":
            assert b.capture(static), b.capture_error
        elif mode == "warm_step_undone":  # capture()'s eager warm step and undo, no graphs
            st = b._get_state()
            b._step(static)
            b._set_state(st)
            torch.cuda.synchronize()
        first = None
        worst = {}
        for i, x in enumerate(acts):
            want = _snapshot(a.step(x))
            static.copy_(x)
            got = _snapshot(b.step(static if mode == "graph" else x))
            for k in want:
                d = (
                    float(
                        np.max(
                            np.abs(
                                np.asarray(got[k], dtype=np.float64)
                                - np.asarray(want[k], dtype=np.float64)
                            )
                        )
                    )
                    if np.size(want[k])
                    else 0.0
                )
                worst[k] = max(worst.get(k, 0.0), d)
                if d and first is None:
                    first = (i, k, d)
        print(
            f"WARP {mode}: first difference {first}; worst",
            {k: f"{v:.2g}" for k, v in worst.items() if v},
            flush=True,
        )


for m in ("eager", "warm_step_undone", "graph"):
    try:
        run(m)
    except Exception as e:
        print(f"WARP {m}: error {type(e).__name__}: {e}", flush=True)
