"""The package's structure holds: no import cycle among gym's modules (every import
outside ``TYPE_CHECKING`` counted, those inside functions too), no function over 80 lines
and no block of high complexity beyond the few still listed (issue 40: the lists only
shrink), and every package says its job. The layers themselves are an import-linter contract
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
#: A function a reader sees on a screen or two (SimPy, Ciw and desmod have 0-1 longer).
MAX_FUNCTION_LINES = 80
#: The functions still longer, with the length none of them may pass: split one and take
#: it off the list (the test says so when one is shorter than listed).
LONG_FUNCTIONS: dict[str, int] = {}
#: The blocks radon still rates D to F (cyclomatic complexity over 20), with the
#: complexity none of them may pass; the goal is at most 5.
COMPLEX_BLOCKS: dict[str, int] = {}
#: Where a design's type may be checked (``isinstance`` naming ``Design`` or
#: ``GraphDesign``): the compile step, and the API's test of whether it was given a design
#: or a path.
TYPE_CHECK_FILES = {"gym/system/compiled.py": 2, "gym/api.py": 1}
#: The most places that ask the compile step which type a design is (issue 40: only
#: fewer). ``graph_design`` and ``either`` still pick a graph's own path where the crawler
#: has a twin.
MAX_QUESTIONS = {"addons": 20, "graph_design": 1, "either": 3}


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


def test_no_function_over_80_lines() -> None:
    """No function of the package is over 80 lines, but those listed, none longer than
    listed; one split (or gone) comes off the list."""
    from benchmarks.structure import long_functions, modules

    found = {f"{path} {name}": n for n, path, name in long_functions(modules())}
    grown = {k: n for k, n in found.items() if n > LONG_FUNCTIONS.get(k, MAX_FUNCTION_LINES)}
    assert grown == {}, "functions over 80 lines (or longer than listed)"
    assert found == LONG_FUNCTIONS, "shorter now: update LONG_FUNCTIONS"


def test_few_complex_blocks() -> None:
    """Radon rates D to F (complexity over 20) only the blocks listed, none more complex
    than listed."""
    from benchmarks.structure import complex_blocks

    found = complex_blocks()
    if found is None:
        pytest.skip("radon is not installed (pip install -e '.[test]')")
    got = {f"{path} {name}": n for path, name, n in found}
    grown = {k: n for k, n in got.items() if n > COMPLEX_BLOCKS.get(k, 20)}
    assert grown == {}, "blocks over complexity 20 (or more complex than listed)"
    assert got == COMPLEX_BLOCKS, "simpler now: update COMPLEX_BLOCKS"


def test_design_types_told_apart_in_the_compile_step() -> None:
    """A design's type is checked only in gym/system/compiled.py (and the API's one test of
    a design or a path); everything else asks it (``addons``, ``graph_design``), at no more
    places than listed."""
    from benchmarks.structure import design_checks, design_questions, modules

    trees = modules()
    files: dict[str, int] = {}
    for site in design_checks(trees):
        name = site.split(":")[0]
        files[name] = files.get(name, 0) + 1
    assert files == TYPE_CHECK_FILES
    asked = {q: len(sites) for q, sites in design_questions(trees).items()}
    assert all(asked[q] <= n for q, n in MAX_QUESTIONS.items()), asked


def test_the_type_check_count_can_fail(tmp_path: Path) -> None:
    """An isinstance naming a design type is found, in a union too; one naming another
    class is not; a call of ``addons`` is counted as a question."""
    from benchmarks.structure import design_checks, design_questions

    src = (
        "isinstance(d, Design)\nisinstance(d, Design | GraphDesign)\nisinstance(d, Scenario)\n"
        "addons(d)\ncompiled.graph_design(d)\n"
    )
    trees = {ROOT / "gym" / "m.py": ast.parse(src)}
    assert design_checks(trees) == ["gym/m.py:1", "gym/m.py:2"]
    assert design_questions(trees) == {
        "addons": ["gym/m.py:4"],
        "graph_design": ["gym/m.py:5"],
        "either": [],
    }


def test_the_length_check_can_fail(tmp_path: Path) -> None:
    """A function of 81 lines is found, one of 80 is not (decorators not counted)."""
    from benchmarks.structure import long_functions

    body = "    x = 1\n"
    src = "@staticmethod\ndef long():\n" + body * 80 + "def short():\n" + body * 79
    tree = ast.parse(src)
    assert long_functions({tmp_path / "m.py": tree}, root=tmp_path) == [(81, "m.py", "long")]


def test_one_flow_latency_path() -> None:
    """The flow engine estimates every design's latency one way (a crawler's as the graph
    it compiles to): no estimator of the crawler's own is back."""
    from benchmarks.structure import flow_latency_paths, modules

    assert flow_latency_paths(modules()) == ["gym/sim/flow/graph_latency.py:estimate"]


#: What reads each kind's hooks (its hint, its changes for the fix, its roundings, where
#: the flow engine was measured off on it): each finds them by the node's kind.
HOOK_READERS = (
    "gym/analysis/explain_graph.py",
    "gym/explore/moves.py",
    "gym/sim/flow/checked.py",
    "gym/sim/rounded.py",
)


def test_the_hook_readers_name_no_kind() -> None:
    """A kind's hint, fix changes, roundings and measured misses live in its homes: the
    modules that read them name no kind (no kind's name as a string, no kind's node or
    parameter class, no kind's module)."""
    from benchmarks.structure import kind_mentions, modules

    named = kind_mentions(modules())
    assert {k: sorted(set(v) & set(HOOK_READERS)) for k, v in named.items()} == {
        k: [] for k in named
    }


def test_the_kind_mention_check_can_fail(tmp_path: Path) -> None:
    """A module testing a node for a kind's name, or naming its parameters, is found;
    one of the kind's own modules is not."""
    from benchmarks.structure import kind_mentions

    found = kind_mentions(
        {
            tmp_path / "reader.py": ast.parse('if node.kind == "fleet": pass'),
            tmp_path / "other.py": ast.parse("from gym.system.kinds.store import StoreParams"),
            tmp_path / "fleet.py": ast.parse('KIND = "fleet"'),
        },
        root=tmp_path,
    )
    assert found == {"fleet": ["reader.py"], "store": ["other.py"]}


def test_the_engines_speak_in_kind_words() -> None:
    """Issue 40: the engines (``gym/sim``) name kinds, not the crawler's components, and
    none imports the crawler's compile step or a design type: a crawler design reaches
    them as the graph its loading compiled (a links node's spread read from its edge, a
    run's causes from its topology), and no engine is handed a design."""
    from benchmarks.structure import crawler_imports, crawler_words, design_imports, modules

    trees = modules()
    assert crawler_words() == []
    assert crawler_imports(trees) == []
    assert design_imports(trees) == []


def test_the_crawler_word_checks_can_fail(tmp_path: Path) -> None:
    """A line naming a crawler component (in prose, CamelCase or snake_case), and an
    engine module importing the crawler's compile step however written, are found; kind
    words, "a crawler design" and other modules are not."""
    from benchmarks.structure import crawler_imports, crawler_words, design_imports

    (tmp_path / "a.py").write_text(
        '"""The page store."""\n# a fleet\'s service\nx = 1  # the Fetchers\n'
        "# a crawler design's graph\n# a deep-crawl surge\n# its writer flushes\n"
        "class SeenSet: ...\nwriter_overflow = 0\n# content hashing saves it\n"
        "# a lookup's false positives\n"
    )
    lines = [w.split(":")[-1] for w in crawler_words(tmp_path)]
    assert lines == ["1", "3", "6", "7", "8", "9"]
    sim = tmp_path / "gym" / "sim"
    trees = {
        sim / "a.py": ast.parse("from gym.system.crawler import CAUSES"),
        sim / "b.py": ast.parse("from gym.system import crawler"),
        sim / "flow" / "c.py": ast.parse("from ...system import crawler"),
        sim / "flow" / "d.py": ast.parse("import gym.system.crawler as c"),
        sim / "e.py": ast.parse("from gym.system.topology import Node"),
        sim / "flow" / "f.py": ast.parse("from ..system import crawler"),  # gym.sim.system
        tmp_path / "gym" / "z.py": ast.parse("import gym.system.crawler"),
    }
    found = crawler_imports(trees, root=sim)
    assert [Path(f).name for f in found] == ["a.py", "b.py", "c.py", "d.py"]
    typed = {
        sim / "g.py": ast.parse("from gym.models import CrashFault, Design"),
        sim / "h.py": ast.parse("from gym.system.graph import GraphDesign"),
        sim / "i.py": ast.parse("from gym.models import Scenario"),
    }
    assert [Path(f).name for f in design_imports(typed, root=sim)] == ["g.py", "h.py"]


def test_a_batch_shares_every_kind() -> None:
    """Issue 40: every shipped kind's flow rule has one component for a batch of runs (a
    row per run), the lookup, links, the write buffer, stations with retries and slotted
    and drawn fleets included."""
    from benchmarks.structure import modules, per_run_kinds

    assert per_run_kinds(modules()) == []


def test_the_per_run_kind_check_can_fail(tmp_path: Path) -> None:
    """A kind's flow module with no ``batch``, or one that may return None, is found."""
    from benchmarks.structure import per_run_kinds

    flow = tmp_path / "gym" / "sim" / "flow"
    trees = {
        flow / "links.py": ast.parse("def build(b, node): ..."),
        flow / "store.py": ast.parse("def batch(builds, node) -> Store | None: ..."),
        flow / "cache.py": ast.parse("def batch(builds, node) -> Cache: ..."),
    }
    assert per_run_kinds(trees, root=tmp_path) == ["store (some nodes)", "links"]


def test_no_framework_internals() -> None:
    """No private name of typer (or its vendored click) or SimPy is touched: the command
    grammar is typer's public classes subclassed (gym/cli/program.py), not patched."""
    from benchmarks.structure import internals

    assert internals() == []


def test_the_internals_check_can_fail() -> None:
    """A private name of typer, click or SimPy is found, imported or patched; a public
    one, or a private name of ours, is not."""
    from benchmarks.structure import PRIVATE

    found = [
        m.group(0)
        for line in (
            "import typer._click.parser",
            "typer.core.TyperArgument._usage_display_name = f",
            "env._queue.clear()",
            "typer.core.TyperCommand",
            "self._queue",
        )
        for m in PRIVATE.finditer(line)
    ]
    assert found == [
        "typer._click",
        "typer.core.TyperArgument._usage_display_name",
        "env._queue",
    ]


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
