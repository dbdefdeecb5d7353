"""runner.setup's compile facts (summary.json's `compile`): what torch's compiler did between two
reads of its own metrics and counters."""

from __future__ import annotations

import pytest

from flashsac_bench.runner import setup


def test_the_facts_are_what_happened_between_two_reads() -> None:
    import torch._dynamo.utils as du

    before = setup.compile_facts()
    added = {"_compile.compile_inner": 2.5, "OutputGraph.call_user_compiler": 2.0}
    counts = {("inductor", "fxgraph_cache_hit"): 3, ("aot_autograd", "autograd_cache_miss"): 1}
    try:
        for key, s in added.items():
            du.compilation_time_metrics.setdefault(key, []).append(s)
        for (group, name), n in counts.items():
            du.counters[group][name] += n
        facts = setup.compile_delta(before, setup.compile_facts())
    finally:
        for key in added:
            du.compilation_time_metrics[key].pop()
        for (group, name), n in counts.items():
            du.counters[group][name] -= n
    assert facts["dynamo_s"] == pytest.approx(0.5) and facts["backend_s"] == pytest.approx(2.0)
    assert facts["fx_graph_cache_hits"] == 3 and facts["aot_autograd_cache_misses"] == 1
    assert facts["fx_graph_cache_misses"] == 0 and facts["aot_autograd_cache_hits"] == 0
    assert facts["fx_graph_cache"] is True and facts["aot_autograd_cache"] is True


def test_nothing_compiled_where_the_compiler_never_loaded() -> None:
    assert setup.compile_delta(None, None) == {}
