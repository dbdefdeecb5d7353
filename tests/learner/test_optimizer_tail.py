"""The fused optimizer tail (path.fused_optimizer): the Triton kernel vs the torch reference.

Exactness target: the reference is today's math (`optimizer_tail.tail_candidate`: Adam,
projection, Polyak, finite gate as torch ops); the kernel must equal it to fp32 rounding:

* Adam moments: every op rounds as torch's does (no implicit FMA contraction; torch.lerp's one
  FMA written as tl.fma), so on CUDA they can be bit-identical. Triton's CPU interpreter
  evaluates tl.fma as a multiply then an add (two roundings), so there they may differ by an
  ulp of the lerp's terms: bound 2 ulp of |m| + |(1 - beta1) (g - m)| (and of v's terms).
* Parameters and target: the row's sum of squares is a tree reduction in the kernel and a
  different order in torch. Each is within ~log2(L) ulps of the exact sum of a row of L
  elements (blocked / pairwise summation), so the two projection factors differ by at most
  ~2 log2(L) ulps: bound (4 + 2 log2 L) ulp of |value| + |its movement| (L the longest row:
  26 ulp for the critic, L = 2048), plus the moments' bound carried through the Adam step.
A wrong constant is far outside that (the sabotage check: tau 0.011 instead of 0.01 fails).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import state_diff, tiny_learner

from flashsac_bench.learner.adam import AdamConfig, adam_hyper
from flashsac_bench.learner.networks import actor_layouts, critic_layouts
from flashsac_bench.learner.optimizer_tail import OptimizerTail, make_hyper, tail_candidate
from flashsac_bench.learner.projection import Projector

ROOT = Path(__file__).resolve().parents[2]
ULP = 2.0**-23  # fp32: ULP * |x| >= half an ulp of x


def case(layout, device="cpu", seed=0, scale=1.0):
    """Random (params, grad, m, v, target) for one layout; params already projected."""
    g = torch.Generator().manual_seed(seed)
    n = layout.numel

    def r(*s):
        return torch.randn(*s, generator=g)

    p = Projector(layout, "cpu")(r(n))
    v = torch.rand(n, generator=g) * 1e-5
    tensors = (p, r(n) * 1e-2 * scale, r(n) * 1e-3, v, p + r(n) * 1e-3)
    return [t.to(device) for t in tensors]


def hyper_for(step: float, ok: bool, device="cpu") -> torch.Tensor:
    s = torch.tensor(step, device=device)
    step_size, bc2_sqrt, _ = adam_hyper(torch.tensor(3e-4, device=device), s, AdamConfig())
    return make_hyper(step_size, bc2_sqrt, torch.tensor(ok, device=device))


def violations(before, ref, out, cfg: AdamConfig, hyper, tau: float, longest: int):
    """Worst |out - ref| / bound per tensor (<= 1 passes); bounds from the module docstring.

    The parameters' bound adds the moments' bound carried through the Adam step
    (step_size * bound_m / denom): where m cancels to almost nothing, an ulp of the lerp's
    terms is a large part of m, and the step inherits it; the target inherits tau of that.
    """
    p0, g, m0, v0, t0 = (t.double() for t in before)
    ref = [t.double() for t in ref]
    step_size, bc2_sqrt = hyper[0].double(), hyper[1].double()
    bound_m = 2 * ULP * (m0.abs() + (1 - cfg.beta1) * (g - m0).abs() + ref[2].abs())
    carried = step_size * bound_m / (ref[3].sqrt() / bc2_sqrt + cfg.eps)
    rel = (4 + 2 * math.log2(longest)) * ULP  # elementwise roundings + two sum orders
    bounds = {
        "params": rel * (ref[0].abs() + (ref[0] - p0).abs()) + carried,
        "exp_avg": bound_m,
        "exp_avg_sq": 2 * ULP * (v0.abs() + g * g + ref[3].abs()),
        "target": rel * (ref[4].abs() + (ref[4] - t0).abs()) + max(tau, 1 - tau) * carried,
    }
    pairs = {"params": 0, "exp_avg": 2, "exp_avg_sq": 3, "target": 4}
    return {
        name: ((out[i].double() - ref[i]).abs() / bounds[name].clamp_min(1e-30)).max().item()
        for name, i in pairs.items()
    }


def longest(projector: Projector) -> int:
    return max(g.length for g in projector.groups)


def test_reference_tail_is_tail_candidate_in_place_and_gated():
    _, layout, _ = critic_layouts(10, 20, 2, 4, 11)
    proj, cfg = Projector(layout, "cpu"), AdamConfig()
    before = case(layout)
    tail = OptimizerTail(proj, cfg, 0.01, "cpu", "torch")
    hyper = hyper_for(4.0, True)
    expected = tail_candidate(
        proj, cfg, 0.01, before[0], before[1], before[2], before[3], before[4],
        hyper[0], hyper[1], torch.tensor(True),
    )  # fmt: skip
    work = [t.clone() for t in before]
    tail(work[0], work[1], work[2], work[3], work[4], hyper)
    for got, want in zip([work[0], work[2], work[3], work[4]], expected, strict=True):
        assert torch.equal(got, want)
    assert torch.equal(work[1], before[1])  # the gradient is read only
    # A non-finite step (ok = 0) writes nothing.
    work = [t.clone() for t in before]
    tail(work[0], work[1], work[2], work[3], work[4], hyper_for(4.0, False))
    assert all(torch.equal(a, b) for a, b in zip(work, before, strict=True))


@pytest.mark.parametrize("path", ["eager", "compile"])
def test_fused_option_on_cpu_computes_what_the_default_computes(path):
    """On the CPU the fused option runs the reference tail after the (compiled) step; the
    learner must train exactly as without it (eager: bit for bit)."""
    fused = tiny_learner(path, path_options={"fused_optimizer": True})
    plain = tiny_learner(path)
    assert fused.tails["critic"].backend == "torch"
    for _ in range(3):
        fused.update()
        plain.update()
    diff = state_diff(fused, plain)
    if path == "eager":
        assert max(diff.values()) == 0.0, diff
    else:  # the tail runs eagerly instead of inside Inductor's kernels: fp32 rounding
        assert max(diff.values()) < 1e-5, diff
    torch._dynamo.reset()


def test_the_tail_called_inside_the_compiled_step_trains_as_after_it():
    """path.fused_optimizer_in_graph on the CPU: the compiled (writing) step applies the
    reference tail itself. It must train as the tail applied right after the step does, and
    the tail must really have moved inside the graph: the step then returns no tail."""
    writing = {"fused_optimizer": True, "functional_steps": False}
    inside = tiny_learner("compile", path_options={**writing, "fused_optimizer_in_graph": True})
    after = tiny_learner("compile", path_options=writing)
    for learner in (inside, after):
        learner.executor.warmup()  # compiled on one cycle, state restored
    s = inside.state
    snapshot = s.snapshot()
    rows = inside.buffers.batch[: inside.batch_size]
    eps = torch.zeros(inside.batch_size, inside.dims.action)
    scalars, writes, tail = inside.executor.kernels[0](rows, eps, torch.tensor(1.0), True)
    assert writes == () and tail == ()  # nothing left to write or apply after the step ...
    assert not torch.equal(s.critic_params, snapshot["critic.params"])  # ... it moved them
    assert not torch.equal(s.target_params, snapshot["target.params"])
    s.restore(snapshot)
    for _ in range(3):
        inside.update()
        after.update()
    diff = state_diff(inside, after)
    assert max(diff.values()) < 1e-5, diff  # Inductor fuses the tail's ops: fp32 rounding
    assert inside.state.critic_adam.step.item() == after.state.critic_adam.step.item() > 0
    torch._dynamo.reset()


@pytest.mark.parametrize(
    "options, says",
    [
        ({"name": "compile"}, "set path.fused_optimizer=true"),
        ({"name": "eager", "fused_optimizer": True}, "only compiled steps"),
        ({"name": "cudagraph", "fused_optimizer": True, "compiled_steps": False}, "compiled"),
        ({"name": "compile", "fused_optimizer": True}, "functional_steps=false"),
    ],
)
def test_the_in_graph_tail_needs_a_compiled_writing_step(options, says):
    from flashsac_bench.config.errors import ConfigError
    from flashsac_bench.config.path import PathConfig

    with pytest.raises(ConfigError, match=says):
        PathConfig(fused_optimizer_in_graph=True, **options)
    # the cudagraph path's own (writing) steps take it as they are
    PathConfig(name="cudagraph", fused_optimizer=True, fused_optimizer_in_graph=True)


# Runs in a fresh interpreter: TRITON_INTERPRET must be set before the kernel is defined.
_INTERPRETED = r"""
import json, sys, torch
sys.path.insert(0, sys.argv[1])
from test_optimizer_tail import case, hyper_for, longest, violations
from helpers import state_diff, tiny_learner
from flashsac_bench.learner.adam import AdamConfig
from flashsac_bench.learner.networks import actor_layouts, critic_layouts
from flashsac_bench.learner.optimizer_tail import OptimizerTail
from flashsac_bench.learner.projection import Projector

cfg, out = AdamConfig(), {}
layouts = {
    "tiny_critic": critic_layouts(10, 20, 2, 4, 11)[1],
    "tiny_actor": actor_layouts(6, 3, 12, 2, 4)[1],
    "g1_actor": actor_layouts(98, 29, 128, 2, 4)[1],
}
for name, layout in layouts.items():
    proj = Projector(layout, "cpu")
    for tau in (0.01, 0.7):
        before = case(layout, seed=len(name))
        ref, fused = [t.clone() for t in before], [t.clone() for t in before]
        h = hyper_for(7.0, True)
        OptimizerTail(proj, cfg, tau, "cpu", "torch")(*ref, h)
        OptimizerTail(proj, cfg, tau, "cpu", "triton")(*fused, h)
        out[f"{name}_tau{tau}"] = violations(before, ref, fused, cfg, h, tau, longest(proj))
    # The sabotage check: a kernel with tau 0.011 against the tau 0.01 reference.
    before = case(layout, seed=1)
    ref, fused = [t.clone() for t in before], [t.clone() for t in before]
    h = hyper_for(3.0, True)
    OptimizerTail(proj, cfg, 0.01, "cpu", "torch")(*ref, h)
    OptimizerTail(proj, cfg, 0.011, "cpu", "triton")(*fused, h)
    out[f"{name}_sabotage"] = violations(before, ref, fused, cfg, h, 0.01, longest(proj))
    # No target (actor, or a critic update without Polyak) and the gate.
    work = [t.clone() for t in before]
    OptimizerTail(proj, cfg, 0.01, "cpu", "triton")(*work[:4], None, hyper_for(3.0, False))
    out[f"{name}_gated_unchanged"] = all(torch.equal(a, b) for a, b in zip(work, before))
    work = [t.clone() for t in before]
    OptimizerTail(proj, cfg, 0.01, "cpu", "triton")(*work[:4], None, hyper_for(3.0, True))
    out[f"{name}_no_target_leaves_target"] = torch.equal(work[4], before[4])

# Through the learner: the fused kernel in place of the reference tail, 3 eager cycles.
kernel = tiny_learner(path_options={"fused_optimizer": True})
reference = tiny_learner(path_options={"fused_optimizer": True})
for key, tail in kernel.tails.items():
    kernel.tails[key] = OptimizerTail(tail.projector, tail.cfg, tail.tau, "cpu", "triton")
for _ in range(3):
    kernel.update()
    reference.update()
out["learner_diff"] = max(state_diff(kernel, reference).values())
out["learner_steps"] = kernel.state.critic_adam.step.item()
print("RESULT", json.dumps(out))
"""


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_triton_kernel_under_the_interpreter_matches_the_reference():
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", _INTERPRETED, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT ") :])
    for key, value in out.items():
        if key.endswith("_sabotage"):
            assert value["target"] > 10, (key, value)  # a wrong tau is far outside the bound
        elif key.endswith(("_unchanged", "_leaves_target")):
            assert value is True, key
        elif key.startswith("learner"):
            continue
        else:
            assert max(value.values()) <= 1.0, (key, value)
    # Three cycles of the tiny learner: the kernel's ulps stay ulps (state ~1, moves ~1e-3).
    assert out["learner_steps"] == 6.0
    assert 0.0 <= out["learner_diff"] < 1e-5, out["learner_diff"]


@pytest.mark.gpu
def test_triton_kernel_on_cuda_matches_the_reference_on_g1_layouts():
    cfg = AdamConfig()
    for layout in (critic_layouts(130, 256, 2, 4, 101)[1], actor_layouts(98, 29, 128, 2, 4)[1]):
        proj = Projector(layout, "cuda")
        before = case(layout, device="cuda")
        ref, fused = [t.clone() for t in before], [t.clone() for t in before]
        h = hyper_for(7.0, True, "cuda")
        OptimizerTail(proj, cfg, 0.01, "cuda", "torch")(*ref, h)
        OptimizerTail(proj, cfg, 0.01, "cuda", "triton")(*fused, h)
        worst = violations(before, ref, fused, cfg, h, 0.01, longest(proj))
        assert max(worst.values()) <= 1.0, worst
        work = [t.clone() for t in before]
        OptimizerTail(proj, cfg, 0.01, "cuda", "triton")(*work, hyper_for(7.0, False, "cuda"))
        assert all(torch.equal(a, b) for a, b in zip(work, before, strict=True))
