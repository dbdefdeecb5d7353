"""runner/loop.py stays readable: few project imports, and the run dir reached through one
object (runner.run_dir.RunDir), never through the modules behind it."""

from __future__ import annotations

from tests.learner.test_import_graph import import_graph

LOOP = "flashsac_bench.runner.loop"
# What RunDir puts behind one door: the loop must not open these itself.
BEHIND_THE_RUN_DIR = (
    "checkpoint",
    "checkpoint_probe",
    "liveness",
    "resume",
    "signals",
    "summary",
    "torch_files",
    "writes",
)


def test_the_loop_imports_at_most_eight_project_modules():
    imported = import_graph()[LOOP]  # module-level, in functions and type-only alike
    assert len(imported) <= 8, sorted(imported)


def test_the_loop_reaches_the_run_dir_only_through_run_dir():
    graph = import_graph()
    imported = graph[LOOP]
    assert "flashsac_bench.runner.run_dir" in imported
    behind = {f"flashsac_bench.runner.{m}" for m in BEHIND_THE_RUN_DIR}
    assert behind <= set(graph)  # the names above are modules that exist
    assert not imported & behind, sorted(imported & behind)
