"""The package's internal imports form no cycle.

Every module of flashsac_bench is parsed (not imported), and every `import` / `from ... import`
of a flashsac_bench module is an edge: at module level, inside functions, and under
`if TYPE_CHECKING:` alike -- a cycle hidden in a function body or a type-only import is still
two modules that cannot be understood (or moved) one without the other. Importing `a.b.c` also
runs the `__init__` of `a.b`: an edge too, unless that package already encloses the importer.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "flashsac_bench"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path, root: Path, modules: set[str]) -> set[str]:
    """The package modules `path` imports (a `from pkg import name` counts pkg.name when that
    is a module, else pkg)."""
    module, is_package = _module_name(path, root), path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node)
            names = [f"{target}.{alias.name}" for alias in node.names] + [target]
            names = [n for n in names[:-1] if n in modules] or [target]
        else:
            continue
        for name in names:
            # `import a.b.c` depends on a.b.c; keep the longest prefix that is a package module.
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
            found.update(_enclosing_packages(name, module, modules))
    return found


def _enclosing_packages(name: str, importer: str, modules: set[str]) -> set[str]:
    """The packages whose __init__ importing `name` runs, less those enclosing `importer`
    (already imported before it)."""
    parts = name.split(".")
    out = set()
    for i in range(1, len(parts)):
        package = ".".join(parts[:i])
        inside = importer == package or importer.startswith(package + ".")
        if package in modules and not inside:
            out.add(package)
    return out


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports."""
    paths = sorted(root.rglob("*.py"))
    modules = {_module_name(p, root) for p in paths}
    return {_module_name(p, root): _imports(p, root, modules) for p in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle [a, b, ..., a] of the directed graph, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return stack[stack.index(dep) :] + [dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_detector_finds_a_cycle_and_accepts_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_sees_function_level_relative_and_type_only_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for name in ("__init__", "sub/__init__", "sub/c", "d", "e"):
        (pkg / f"{name}.py").write_text("")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import os\n"
        "from pkg.sub import c\n"
        "if TYPE_CHECKING:\n    from pkg import d\n"
        "def f():\n    from . import e\n"
    )
    (pkg / "sub" / "b.py").write_text("from ..a import f\nimport pkg.sub.c\n")
    graph = import_graph(pkg)
    # pkg.sub.c runs pkg/sub/__init__ first: an edge; pkg/__init__ encloses pkg.a: none.
    assert graph["pkg.a"] == {"pkg.sub.c", "pkg.sub", "pkg.d", "pkg.e"}
    assert graph["pkg.sub.b"] == {"pkg.a", "pkg.sub.c"}
    real = import_graph()
    assert "flashsac_bench.learner.paths" in real["flashsac_bench.learner.learner"]


def test_one_update_is_three_layered_modules():
    """learner (the plan) -> paths (how a cycle runs) -> update (the math): the math knows no
    path and no learner, the paths know no learner, the learner knows no runner."""
    real = import_graph()
    learner, paths, update = (f"{PACKAGE}.learner.{m}" for m in ("learner", "paths", "update"))
    assert paths in real[learner] and update in real[paths]
    assert not {learner, paths} & real[update]
    assert learner not in real[paths]
    assert not any(m.startswith(f"{PACKAGE}.runner") for m in real[learner] | real[paths])


def test_a_cycle_through_a_package_init_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("def f():\n    from pkg import app\n")
    (pkg / "sub" / "loop.py").write_text("")
    (pkg / "app.py").write_text("from pkg.sub import loop\n")
    assert find_cycle(import_graph(pkg)) == ["pkg.app", "pkg.sub", "pkg.app"]


def test_no_import_cycle_in_the_package():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_product_knows_no_cli():
    """The command lines call the product and turn its errors into one line, never the other
    way round: nothing in the runner, learner, envs, config, evaluation, interop or analysis
    imports flashsac_bench.cli."""
    real = import_graph()
    product = ("runner", "learner", "envs", "config", "evaluation", "interop", "analysis")
    offenders = {
        module: sorted(dep for dep in deps if dep.startswith(f"{PACKAGE}.cli"))
        for module, deps in real.items()
        if module.split(".")[1:2] and module.split(".")[1] in product
    }
    assert f"{PACKAGE}.cli.train" in real[f"{PACKAGE}.__main__"]  # the detector sees the CLI
    assert not {m: d for m, d in offenders.items() if d}


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed to the package's first-level parts (flashsac_bench.cli,
    flashsac_bench.runner, ...; a top-level module stands for itself)."""

    def part(module: str) -> str:
        return ".".join(module.split(".")[:2])

    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        out.setdefault(part(module), set()).update(part(d) for d in deps if part(d) != part(module))
    return out


def test_no_cycle_between_the_packages_parts():
    """Not only no module cycle: no two parts of the package (cli and analysis, say) import
    each other, through any modules, at module level or in a function."""
    graph = package_graph(import_graph())
    assert f"{PACKAGE}.runner" in graph[f"{PACKAGE}.cli"]  # the detector sees the parts
    cycle = find_cycle(graph)
    assert cycle is None, "cycle between parts: " + " -> ".join(cycle or [])


def test_the_product_never_imports_the_lab():
    """lab/ (benchmarks, parity statistics, walk tables) uses the product and is not installed:
    no module of the package imports it."""
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            offenders += [f"{path.name}: {n}" for n in names if n == "lab" or n.startswith("lab.")]
    assert not offenders
