"""The actor update computes no critic weight gradient -- not merely discards one.

Proof by inspecting the traced aten graph of the actor step: a weight gradient of an ensemble
critic layer is a batched matmul whose output has the weight's shape [2, out, in] (or its
transpose). With every dimension of the tiny learner distinct, such an output cannot be anything
else. The same detector finds those matmuls in the critic step (so it can fail), and the check
is repeated on the graph AOTAutograd hands to Inductor for the compiled path.
"""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.backends.common import aot_autograd
from torch.fx.experimental.proxy_tensor import make_fx

from flashsac_bench.learner.layout import ROWS
from tests.learner.helpers import BATCH, DIMS, tiny_learner

MATMULS = {torch.ops.aten.bmm.default, torch.ops.aten.mm.default, torch.ops.aten.matmul.default}


def weight_shapes(layout, lead: int) -> set[tuple[int, ...]]:
    shapes = set()
    for e in layout.entries.values():
        if e.kind == ROWS and len(e.shape) == lead:
            shapes.add(e.shape)
            shapes.add((*e.shape[:-2], e.shape[-1], e.shape[-2]))
    return shapes


def weight_grad_matmuls(graph: torch.fx.Graph, shapes: set[tuple[int, ...]]) -> list[str]:
    found = []
    for node in graph.nodes:
        if node.op == "call_function" and node.target in MATMULS:
            val = node.meta.get("val")
            if val is not None and tuple(val.shape) in shapes:
                found.append(f"{node.name}{tuple(val.shape)}")
    return found


def _inputs(learner):
    rows = learner.ring.storage[:BATCH].clone()
    eps = torch.randn(BATCH, DIMS.action, generator=torch.Generator().manual_seed(0))
    return rows, eps


def test_eager_actor_step_has_no_critic_weight_grad_but_critic_step_has():
    learner = tiny_learner()
    critic_w = weight_shapes(learner.statics.critic_param_layout, lead=3)
    actor_w = weight_shapes(learner.statics.actor_param_layout, lead=2)
    rows, eps = _inputs(learner)
    actor_graph = make_fx(lambda r, e: learner.path.actor(r, e))(rows, eps).graph
    assert weight_grad_matmuls(actor_graph, critic_w) == []
    assert len(weight_grad_matmuls(actor_graph, actor_w)) >= 6  # embed, 2x2 block, heads
    divisor = torch.tensor(1.0)
    critic_graph = make_fx(lambda r, e: learner.path.critic(r, e, divisor, True))(rows, eps).graph
    # Control: the critic step does compute critic weight gradients (embed, 2x2 block, head).
    assert len(weight_grad_matmuls(critic_graph, critic_w)) >= 6


@pytest.mark.slow
def test_compiled_actor_step_graph_has_no_critic_weight_grad():
    learner = tiny_learner()
    critic_w = weight_shapes(learner.statics.critic_param_layout, lead=3)
    graphs: list[torch.fx.GraphModule] = []

    def capture(gm: torch.fx.GraphModule, example_inputs):
        graphs.append(gm)
        return gm

    backend = aot_autograd(fw_compiler=capture)
    rows, eps = _inputs(learner)
    torch._dynamo.reset()
    compiled = torch.compile(learner.path.actor, backend=backend, fullgraph=True)
    compiled(rows, eps)
    assert graphs, "AOTAutograd produced no graph"
    assert all(weight_grad_matmuls(gm.graph, critic_w) == [] for gm in graphs)
    torch._dynamo.reset()
    graphs.clear()
    compiled_critic = torch.compile(learner.path.critic, backend=backend, fullgraph=True)
    compiled_critic(rows, eps, torch.tensor(1.0), True)
    assert sum(len(weight_grad_matmuls(gm.graph, critic_w)) for gm in graphs) >= 6
    torch._dynamo.reset()


def test_critic_params_never_get_grad_attributes():
    learner = tiny_learner()
    rows, eps = _inputs(learner)
    learner.path.actor(rows, eps)
    assert learner.state.critic_params.grad is None
    assert not learner.state.critic_params.requires_grad
