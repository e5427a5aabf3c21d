"""The package's structure holds: no import cycle among gym's modules (every import
outside ``TYPE_CHECKING`` counted, those inside functions too), no module over 25 KB, and
every package says its job. The layers themselves are an import-linter contract
(``[tool.importlinter]`` in pyproject.toml), checked by ``lint-imports`` in .ci/run and
below when import-linter is installed."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "gym"
MAX_MODULE_BYTES = 25 * 1024


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _under_type_checking(tree: ast.Module) -> set[int]:
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(n) for n in ast.walk(node))
    return hidden


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the gym modules it imports, wherever in the module the import stands."""
    paths = {_module_name(p, root.parent): p for p in sorted(root.rglob("*.py"))}

    def known(name: str) -> str:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        hidden = _under_type_checking(tree)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in hidden:
                continue
            if isinstance(node, ast.Import):
                found.update(known(a.name) for a in node.names if a.name.split(".")[0] == "gym")
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                if base.split(".")[0] != "gym":
                    continue
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    found.add(full if full in paths else known(base))
        found.discard(module)
        found.discard("")
        graph[module] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path) -> None:
    """The check can fail: a package whose two modules import each other (one of them
    inside a function) is a cycle; the same imports under TYPE_CHECKING are not."""
    pkg = tmp_path / "gym"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from gym import b\n")
    (pkg / "b.py").write_text("def f():\n    from gym.a import x\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import gym.d\n"
    )
    (pkg / "d.py").write_text("from . import c\n")
    assert cycles(import_graph(pkg)) == [["gym.a", "gym.b"]]


def test_no_import_cycle() -> None:
    """No two gym modules import each other, directly or through others."""
    assert cycles(import_graph()) == []


def test_no_module_over_25_kb() -> None:
    """Every module of the package stays small enough to read."""
    big = {
        str(p.relative_to(ROOT)): p.stat().st_size
        for p in PACKAGE.rglob("*.py")
        if p.stat().st_size > MAX_MODULE_BYTES
    }
    assert big == {}


def test_every_package_says_its_job() -> None:
    """Each folder of the package opens with a docstring of its job."""
    for init in PACKAGE.rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc.split()) >= 8, init


def test_layers_contract() -> None:
    """lint-imports keeps the layers contract and finds no cycle among siblings."""
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which(
        "lint-imports"
    )
    if lint is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    proc = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:]
