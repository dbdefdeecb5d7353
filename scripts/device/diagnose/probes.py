"""torch's own mechanism, no project code: which cuBLAS-workspace sequences fault on replay."""

import sys
import traceback

import torch

v = sys.argv[1]
dev = "cuda"
a = torch.randn(2048, 2048, device=dev)
b = torch.randn(2048, 2048, device=dev)


def gemm_graph(stream=None):
    g = torch.cuda.CUDAGraph()
    out = {}
    with torch.cuda.graph(g, stream=stream):
        out["y"] = a @ b
    return g, out


try:
    ref = a @ b
    if v == "destroy_sibling":  # pytorch#193402: two graphs on one stream, the first destroyed
        g1, o1 = gemm_graph()
        g2, o2 = gemm_graph()
        del g1, o1
        torch.cuda.empty_cache()
        junk = torch.full((64, 2**20), 7.0, device=dev)
        g2.replay()
        torch.cuda.synchronize()
        print("max err", (o2["y"] - ref).abs().max().item())
    elif v == "clear_after_capture":  # a graph's workspace dropped from torch's cache afterwards
        g1, o1 = gemm_graph()
        torch._C._cuda_clearCublasWorkspaces()
        g2, o2 = gemm_graph()
        torch.cuda.empty_cache()
        junk = torch.full((64, 2**20), 7.0, device=dev)
        g1.replay()
        torch.cuda.synchronize()
        print("max err", (o1["y"] - ref).abs().max().item())
    elif (
        v == "eager_ws_then_capture_then_clear"
    ):  # workspace cached by eager work on the capture stream
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            _ = a @ b
        torch.cuda.current_stream().wait_stream(s)
        g1, o1 = gemm_graph(stream=s)
        torch._C._cuda_clearCublasWorkspaces()
        torch.cuda.empty_cache()
        junk = torch.full((64, 2**20), 7.0, device=dev)
        g1.replay()
        torch.cuda.synchronize()
        print("max err", (o1["y"] - ref).abs().max().item())
    elif v == "stream_pool":  # do pooled streams repeat?
        s0 = torch.cuda.graph.default_capture_stream or torch.cuda.Stream()
        ids = [torch.cuda.Stream().cuda_stream for _ in range(70)]
        print(
            "distinct",
            len(set(ids)),
            "first repeat after",
            next((i for i in range(1, 70) if ids[i] in ids[:i]), None),
        )
    print(f"PROBE {v}: ok", flush=True)
except Exception:
    traceback.print_exc()
    print(f"PROBE {v}: FAILED", flush=True)
