"""learner.compile_store: a function compiled once, saved, and loaded by the next StoredCompile
of it (as a later process would) without tracing; the same bits as plain torch.compile; a file
that does not check out is compiled anew, never used. Small functions on the CPU (the learner's
updates: tests/runner/test_warm_start.py)."""

from __future__ import annotations

import contextlib
import json

import pytest
import torch

from flashsac_bench.learner import compile_artifacts as artifacts
from flashsac_bench.learner import compile_store
from flashsac_bench.learner.compile_store import CUDA_PLAIN, StoredCompile, plain_on

pytestmark = pytest.mark.slow  # every test compiles (seconds each on 2 cores)


class Holder:
    """What a compiled update closes over: tensors it reads and writes, and a constant."""

    def __init__(self, n: int = 3) -> None:
        self.w = torch.linspace(0.5, 1.5, n)
        self.total = torch.zeros(n)
        self.scale = 1.25


def make_step(h: Holder):
    def step(x: torch.Tensor) -> torch.Tensor:
        y = torch.tanh(x * h.w * h.scale) + x.sum()
        h.total.add_(
            y.reshape(-1, h.w.numel()).sum(0)
        )  # an in-place write into the closure's state (the cudagraph path's kind)
        return y

    return step


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    return tmp_path / "inductor"


def _run(stored: StoredCompile, holder: Holder, x: torch.Tensor):
    y = stored(x)
    return y, holder.total.clone()


def test_a_warm_start_loads_the_cold_starts_code_and_computes_the_same_bits():
    x = torch.linspace(-1, 1, 3)
    plain_holder = Holder()
    expected = torch.compile(make_step(plain_holder), fullgraph=True, dynamic=False)(x)
    cold_holder, warm_holder = Holder(), Holder()
    cold = StoredCompile(make_step(cold_holder), dynamic=False)
    y_cold, total_cold = _run(cold, cold_holder, x)
    assert (cold.report.compiled, cold.report.loaded) == (1, 0) and cold.file.is_file()
    assert cold.report.trace_s > 0 and cold.report.backend_s > 0
    warm = StoredCompile(make_step(warm_holder), dynamic=False)
    y_warm, total_warm = _run(warm, warm_holder, x)
    assert (warm.report.compiled, warm.report.loaded, warm.report.notes) == (0, 1, [])
    assert torch.equal(y_cold, expected) and torch.equal(y_warm, expected)
    assert torch.equal(total_cold, plain_holder.total) and torch.equal(total_warm, total_cold)
    # The loaded code reads and writes the live objects, never copies saved with it.
    warm_holder.w.mul_(2.0)
    y_again = warm(x)
    assert torch.equal(warm_holder.total, total_warm + y_again)
    torch.testing.assert_close(y_again, torch.tanh(x * warm_holder.w * 1.25) + x.sum())
    assert not torch.allclose(y_again, y_warm)


def test_a_call_no_variant_serves_is_compiled_and_saved_beside_the_others():
    """(The file is named by the first call's inputs: a later process calls in the same
    order, as the update cycle does.)"""
    first = StoredCompile(make_step(Holder()), dynamic=False)
    calls = (torch.ones(3), torch.ones(2, 3), torch.ones(3))  # another shape: new guards
    outs = [first(x) for x in calls]
    assert first.report.compiled == 2 and len(first.variants) == 2
    again = StoredCompile(make_step(Holder()), dynamic=False)
    assert all(torch.equal(again(x), y) for x, y in zip(calls, outs, strict=True))
    assert (again.report.loaded, again.report.compiled) == (2, 0)


def _damage(file, how: str) -> None:
    lines = file.read_bytes().split(b"\n", 2)
    if how == "corrupt":
        blob = bytearray(lines[2])
        blob[len(blob) // 2] ^= 0xFF
        lines[2] = bytes(blob)
    else:
        header = json.loads(lines[1])
        header["key"]["environment"]["torch"] = "2.11.0"
        lines[1] = json.dumps(header, sort_keys=True).encode()
    file.write_bytes(b"\n".join(lines))


@pytest.mark.parametrize("how", ["corrupt", "other torch", "other settings"])
def test_a_file_that_does_not_check_out_is_compiled_anew_never_used(how, monkeypatch):
    x = torch.ones(3)
    if how == "other settings":  # a file left under the name by other settings
        monkeypatch.setattr(artifacts, "key_name", lambda key: "one_name.bin")
        StoredCompile(make_step(Holder(4)), dynamic=False)(torch.ones(4))
    else:
        cold = StoredCompile(make_step(Holder()), dynamic=False)
        cold(x)
        _damage(cold.file, how)
    h = Holder()
    stored = StoredCompile(make_step(h), dynamic=False)
    y = stored(x)
    assert (stored.report.loaded, stored.report.compiled) == (0, 1)
    (note,) = stored.report.notes
    expected = {
        "corrupt": "variant 0 is corrupt",
        "other torch": f"torch 2.11.0 (this is {torch.__version__})",
        "other settings": "made for other settings: args, closure",
    }[how]
    assert expected in note and note.endswith("compiling anew")
    torch.testing.assert_close(y, make_step(Holder())(x))
    # The file was replaced: the next one loads it.
    after = StoredCompile(make_step(Holder()), dynamic=False)
    after(x)
    assert (after.report.loaded, after.report.compiled, after.report.notes) == (1, 0, [])


@pytest.mark.parametrize("missing", ["aot_compile", "caches"])
def test_where_nothing_can_be_saved_it_is_plain_torch_compile(missing, monkeypatch, cache_dir):
    # torch's config modules are patched with their own `patch` (a monkeypatch's undo may
    # delete the attribute, which hides the option for every later test).
    caches_off = torch._inductor.config.patch(force_disable_caches=True)
    if missing == "aot_compile":  # a torch without the facility
        monkeypatch.delattr(torch.compiler, "load_compiled_function")
        caches_off = contextlib.nullcontext()
    h = Holder()
    stored = StoredCompile(make_step(h), dynamic=False)
    x = torch.ones(3)
    with caches_off:
        y = stored(x)
    reason = stored.report.fallback or ""
    assert ("has no aot_compile" if missing == "aot_compile" else "caches are disabled") in reason
    assert (stored.report.loaded, stored.report.compiled) == (0, 0)
    assert not (cache_dir / "flashsac_bench_compiled").exists()
    torch.testing.assert_close(y, make_step(Holder())(x))


def test_cuda_compiles_with_graph_trees_are_plain_and_every_other_one_stored():
    trees = {"triton.cudagraphs": True, "combo_kernels": True}
    assert plain_on({"cuda:0"}, trees) == plain_on({"cpu", "cuda"}, trees) == CUDA_PLAIN
    assert plain_on({"cuda:0"}, {"triton.cudagraphs": False}) is None
    assert plain_on({"cuda:0"}, None) is None and plain_on({"cuda:0"}) is None
    assert plain_on({"cpu"}, trees) is None and plain_on(set(), trees) is None


def test_inputs_on_a_device_not_stored_run_plainly_without_a_warning(
    monkeypatch, cache_dir, caplog
):
    """The CUDA rule's wiring, on the CPU: inputs described as living on CUDA compile as plain
    torch.compile, saved nowhere, said in the report at INFO (a design rule, not a failure)."""
    monkeypatch.setattr(compile_store, "_devices", lambda described: {"cuda:0"})
    h = Holder()
    stored = StoredCompile(make_step(h), dynamic=False, options={"triton.cudagraphs": True})
    x = torch.linspace(-1, 1, 3)
    with caplog.at_level("INFO", logger=compile_store.__name__):
        y = stored(x)
    assert stored.report.fallback == CUDA_PLAIN
    assert (stored.report.loaded, stored.report.compiled) == (0, 0)
    assert not (cache_dir / "flashsac_bench_compiled").exists()
    assert [r.levelname for r in caplog.records if CUDA_PLAIN in r.getMessage()] == ["INFO"]
    torch.testing.assert_close(y, make_step(Holder())(x))


def test_torchs_aot_compile_flag_is_opened_for_the_compile():
    """torch gives a compiled function `aot_compile` only while Dynamo's enable_aot_compile is
    on (off by default in earlier releases): the store opens it for its own calls."""
    with torch._dynamo.config.patch(enable_aot_compile=False):
        stored = StoredCompile(make_step(Holder()), dynamic=False)
        stored(torch.ones(3))
        assert (stored.report.compiled, stored.report.fallback) == (1, None)
        assert torch._dynamo.config.enable_aot_compile is False


def test_inputs_it_cannot_key_run_as_plain_torch_compile():
    nested: list = [torch.ones(3)]
    for _ in range(20):  # deeper than a key describes
        nested = [nested]

    def deep(x: torch.Tensor) -> torch.Tensor:
        inner = nested
        while isinstance(inner, list):
            inner = inner[0]
        return x + inner

    stored = StoredCompile(deep, dynamic=False)
    assert torch.equal(stored(torch.ones(3)), torch.full((3,), 2.0))
    assert "no key for its inputs (ValueError" in (stored.report.fallback or "")


def test_fallbacks_of_one_functions_closures_compile_each_their_own_code():
    """Two learners' updates are closures of one function: as plain torch.compile, each is
    traced for itself (Dynamo keeps compiled code per code object; shared, the second would
    run the first one's code and count toward its recompile limit), and each computes its
    own closure's bits."""
    from torch._dynamo.utils import counters

    holders = [Holder(), Holder()]
    holders[1].w = holders[1].w * 2  # the same guards: only its values differ
    x = torch.ones(3)
    want = [make_step(h)(x) for h in (Holder(), holders[1])]
    before = counters["stats"]["unique_graphs"]
    with torch._inductor.config.patch(force_disable_caches=True):
        stored = [StoredCompile(make_step(h), dynamic=False) for h in holders]
        got = [s(x) for s in stored]
    assert counters["stats"]["unique_graphs"] - before == 2
    assert all("caches are disabled" in (s.report.fallback or "") for s in stored)
    torch.testing.assert_close(got, want)


def test_a_closure_reaching_another_stored_compile_is_still_saved_and_loaded():
    """An update's closure reaches the RNG, which on CUDA holds the compiled hash (a used
    StoredCompile): torch pickles what the trace's guards reach, and the hash's loaded code
    does not pickle. It pickles as its definition, so the update is saved and loaded."""

    def double(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    x = torch.ones(3)
    steps = []
    for _ in range(2):  # the second as a later process: it loads what the first saved
        h = Holder()
        h._hash = StoredCompile(double, dynamic=True)  # type: ignore[attr-defined]
        h._hash(x)  # used: it holds compiled code (private, as the RNG keeps it)
        steps.append(StoredCompile(make_step(h), dynamic=False))
        steps[-1](x)
    reports = [(s.report.compiled, s.report.loaded, s.report.fallback) for s in steps]
    assert reports == [(1, 0, None), (0, 1, None)]
