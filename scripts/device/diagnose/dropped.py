"""The dropped-graph GPU test's sequence in variants (one per process): which part faults.

python3 dropped.py VARIANT [TREE]   (scripts/device/diagnose/run.sh runs them)
"""

import gc
import os
import sys
import traceback
import weakref

import torch

sys.path.insert(0, os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "."))
from flashsac_bench.learner import graphs as G
from flashsac_bench.learner import paths as P
from flashsac_bench.runner.collector import Staging
from flashsac_bench.runner.device_steps import DeviceSteps
from lab.bench.synthetic import Setup, build_learner

SETUP = Setup(batch_size=64, updates_per_step=2, num_envs=32, tiny=True, device="cuda")
v = sys.argv[1]


def mb():
    alloc, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    return f"alloc={alloc / 2**20:.1f}MiB reserved={reserved / 2**20:.1f}MiB"


def diff(a, b):
    ta, tb = a.state.tensors(), b.state.tensors()
    return max((ta[k].double() - tb[k].double()).abs().max().item() for k in ta)


if v == "no_trees":
    orig = P.compile_update
    P.compile_update = lambda fn, trees, options: orig(fn, False, options)
if v in ("clear_before_capture", "clear_only"):
    orig_cap = G.GraphSet.capture

    def cap(self, name, fn):
        G.clear_cublas_workspaces()
        return orig_cap(self, name, fn)

    G.GraphSet.capture = cap
if v == "clear_only":
    import flashsac_bench.runner.device_steps as DS

    P.collect_dead_graphs = DS.collect_dead_graphs = lambda keep=(): False
try:
    gc.disable()
    if v != "no_drop":
        old = build_learner(SETUP, "eager")
        steps = DeviceSteps(old, Staging(old.ring.layout, SETUP.num_envs, pin=True), capture=True)
        steps.capture()
        assert steps.mode == "cuda_graphs"
        print("capture stream", torch.cuda.graph.default_capture_stream, flush=True)
        steps.me = steps
        gone = weakref.ref(steps)
        del old, steps
        if v == "collect_first":
            gc.collect()
            G.clear_cublas_workspaces()
        print("after drop", mb(), flush=True)
    graph = build_learner(SETUP, "cudagraph")
    comp = build_learner(SETUP, "eager" if v == "comp_eager" else "compile")
    graph.update()
    torch.cuda.synchronize()
    print("graph captured", mb(), "gone:", v == "no_drop" or gone() is None, flush=True)
    comp.update()
    torch.cuda.synchronize()
    print("comp warm", mb(), flush=True)
    gc.collect()
    torch.cuda.synchronize()
    for i in range(3):
        graph.update()
        torch.cuda.synchronize()
        print(f"graph replay {i} ok", flush=True)
        comp.update()
        torch.cuda.synchronize()
        print(f"comp update {i} ok", mb(), flush=True)
    d = diff(graph, comp)
    print(f"RESULT {v}: ok diff={d:.3g}", flush=True)
except Exception:
    traceback.print_exc()
    print(f"RESULT {v}: FAILED", flush=True)
    sys.exit(1)
