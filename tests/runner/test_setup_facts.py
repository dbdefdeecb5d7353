"""runner.setup's compile facts (summary.json's `compile`): what torch's compiler did between two
reads of its own metrics and counters."""

from __future__ import annotations

import pytest

from flashsac_bench.learner.compile_store import StoredCompile, StoreReport, summarize
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


def _stored(report: StoreReport) -> StoredCompile:
    stored = StoredCompile(len, dynamic=False)
    stored.report = report
    return stored


def test_a_warm_start_skipped_tracing_only_where_every_update_was_loaded() -> None:
    """summary.json's compile with the learner's saved compiles (learner.compile_store):
    their tracing and compiling are Dynamo's and the backend's seconds too; `tracing_skipped`
    only where every compiled function came from a saved file and Dynamo traced nothing."""
    zero = {"dynamo_s": 0.0, "backend_s": 0.0, "frames_traced": 0}
    loaded = StoreReport(loaded=1, load_s=0.5)
    warm = setup.with_saved_compiles(zero, summarize((_stored(loaded), _stored(loaded))))
    assert warm["tracing_skipped"] and warm["artifacts_loaded"] == 2
    assert warm["artifacts_load_s"] == 1.0 and warm["dynamo_s"] == 0.0
    compiled = StoreReport(compiled=1, trace_s=2.0, backend_s=3.0, notes=["x.bin not used: ..."])
    cold = setup.with_saved_compiles(zero, summarize((_stored(loaded), _stored(compiled))))
    assert not cold["tracing_skipped"] and cold["artifacts_notes"] == ["x.bin not used: ..."]
    assert (cold["dynamo_s"], cold["backend_s"]) == (2.0, 3.0)
    traced = setup.with_saved_compiles({**zero, "frames_traced": 1}, summarize((_stored(loaded),)))
    assert not traced["tracing_skipped"]  # a plain torch.compile traced meanwhile
    plain = StoreReport(fallback="Inductor's caches are disabled")
    facts = setup.with_saved_compiles(zero, summarize((_stored(plain),)))
    assert not facts["tracing_skipped"]
    assert facts["artifacts_notes"] == [
        "builtins.len: plain torch.compile (Inductor's caches are disabled)"
    ]
