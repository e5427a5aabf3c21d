"""The package's structure, measured from its files: the figures of the "one model" issue
(issue 40) beside their goals.

    python -m benchmarks.structure [--json benchmarks/results/structure.json]

Read with Python's ``ast`` (and radon's cyclomatic complexity, a test extra), never by
running the code:

- **design-type checks**: ``isinstance`` calls that name ``Design`` or ``GraphDesign``;
- **design-type questions**: the calls, outside ``gym/system/compiled.py``, that ask it
  which type a design is: ``addons`` (the crawler's add-ons, to show a crawler-only
  figure), ``graph_design`` (a graph's own path) and ``either`` (both, where a path has a
  twin for each: the fix's moves, the search space, the rounding warnings). The
  isinstance figure counts the checks; this one the places that still depend on the
  answer;
- **request-engine paths**: the places in ``gym/sim/request`` that build a run's record
  (``RunRecord(...)``): one per way a design can be run;
- **flow latency paths**: the functions in ``gym/sim`` that estimate a flow run's latency
  (``graph_latency.estimate``; until issue 40 also ``estimate_flow``, the crawler's own);
- **functions over 80 lines** (and over 100), and **blocks rated D-F** by radon (a
  cyclomatic complexity over 20);
- **files naming a kind outside its home**: a file names a kind when it has the kind's name
  as a string (``"fleet"``), names its declaration's classes (``FleetNode``,
  ``FleetParams``) or imports its modules (``gym.system.kinds.fleet``,
  ``gym.sim.flow.fleet``, ``gym.sim.request.fleet``); its homes are the modules named after
  it;
- **class names defined twice** in the package, and **framework internals** touched: a
  private name of typer, click or SimPy;
- **kinds a batch runs run by run**: the shipped kinds whose flow rule has no component
  for a batch of runs, or none for some of their nodes (a graph's slotted fleet);
- **crawler words in the engines**: lines of ``gym/sim`` that name a crawler component
  or add-on (fetch, frontier, page store, async writer, resolver, seen set, DNS, content
  hashing, duplicate bodies, Bloom filter, politeness, crawl delay) rather than a kind;
  and the engine modules that **import the crawler's compile step**
  (``gym.system.crawler``, however written), or **a design type** (``Design``,
  ``GraphDesign``: an engine is handed the topology). The crawler's words belong where it
  is compiled and in what a crawler run prints.

Prints a table and writes the figures as JSON; exits 0 (a measure, not a gate: the tests
hold what has been reached).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gym"
KINDS = ("source", "queue", "fleet", "cache", "service", "write_buffer", "store", "lookup", "links")
LONG = 80
PRIVATE = re.compile(r"\b(typer|click|simpy|env)\.(?:\w+\.)*_[a-z]\w*")


def modules() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(), str(p)) for p in sorted(PACKAGE.rglob("*.py"))}


def rel(path: Path) -> str:
    """``path`` from the project's root (as given, outside it: a test's files)."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def design_checks(trees: dict[Path, ast.Module]) -> list[str]:
    """Each ``isinstance`` naming a design type, as ``file:line``."""
    found = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and len(node.args) == 2
                and {"Design", "GraphDesign"} & _names(node.args[1])
            ):
                found.append(f"{rel(path)}:{node.lineno}")
    return found


def design_questions(trees: dict[Path, ast.Module]) -> dict[str, list[str]]:
    """Per question (``addons``, ``graph_design``, ``either``), each call outside the
    compile step, as ``file:line``."""
    found: dict[str, list[str]] = {"addons": [], "graph_design": [], "either": []}
    for path, tree in trees.items():
        if rel(path) == "gym/system/compiled.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
                name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                if name in found:
                    found[name].append(f"{rel(path)}:{node.lineno}")
    return found


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def record_builders(trees: dict[Path, ast.Module], folder: str) -> list[str]:
    """Each call building a ``RunRecord`` in ``folder``."""
    return [
        f"{rel(path)}:{node.lineno}"
        for path, tree in trees.items()
        if rel(path).startswith(folder)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and "RunRecord" in _names(node.func)
    ]


def flow_latency_paths(trees: dict[Path, ast.Module]) -> list[str]:
    """The estimators of a flow run's latency: ``estimate`` in its graph latency model,
    and ``estimate_flow`` in ``gym/sim/latency.py`` (the crawler's own, gone since issue
    40: were it back, it would count)."""
    wanted = {"gym/sim/latency.py": "estimate_flow", "gym/sim/flow/graph_latency.py": "estimate"}
    return [
        f"{rel(path)}:{node.name}"
        for path, tree in trees.items()
        if rel(path) in wanted
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == wanted[rel(path)]
    ]


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, ast.AST]]:
    """Every function and method under ``tree``, by its qualified name (``Class.method``,
    ``outer.inner``)."""
    found: list[tuple[str, ast.AST]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                found.append((name, node))
            found += _functions(node, f"{name}.")
        else:
            found += _functions(node, prefix)
    return found


def long_functions(trees: dict[Path, ast.Module], root: Path = ROOT) -> list[tuple[int, str, str]]:
    """(lines, file, qualified name) of each function over ``LONG`` lines, longest first
    (its ``def`` to its last line; decorators not counted)."""
    rows = []
    for path, tree in trees.items():
        for name, node in _functions(tree):
            assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            if size > LONG:
                rows.append((size, str(path.relative_to(root)), name))
    return sorted(rows, reverse=True)


def complex_blocks() -> list[tuple[str, str, int]] | None:
    """(file, qualified name, complexity) of the blocks radon rates D, E or F (cyclomatic
    complexity over 20); None without radon."""
    try:
        from radon.complexity import cc_rank, cc_visit
    except ImportError:
        return None
    return [
        (rel(path), block.fullname, block.complexity)
        for path in sorted(PACKAGE.rglob("*.py"))
        for block in cc_visit(path.read_text())
        if cc_rank(block.complexity) in "DEF"
    ]


def kind_mentions(trees: dict[Path, ast.Module], root: Path = ROOT) -> dict[str, list[str]]:
    """For each kind, the files outside its homes that name it."""
    found: dict[str, list[str]] = defaultdict(list)
    for path, tree in trees.items():
        strings = {
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        }
        names = _names(tree) | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.alias) for a in [n]
        }
        imported = _imported(tree)
        for kind in KINDS:
            if path.stem == kind:
                continue
            camel = "".join(w.title() for w in kind.split("_"))
            homes = {f"{package}.{kind}" for package in HOME_PACKAGES}
            if kind in strings or {f"{camel}Node", f"{camel}Params"} & names or homes & imported:
                found[kind].append(str(path.relative_to(root)))
    return dict(found)


#: The packages that hold a module for each kind (its declaration, its engines' rules).
HOME_PACKAGES = ("gym.system.kinds", "gym.sim.flow", "gym.sim.request")


def _imported(tree: ast.Module, path: Path | None = None) -> set[str]:
    """The modules a module imports (``from a import b``: ``a`` and ``a.b``, either of
    which may be the module; a relative import resolved from the module's ``path``, taken
    as under ``gym/``)."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            module = _absolute(n, path)
            if module:
                out |= {module} | {f"{module}.{a.name}" for a in n.names}
    return out


def _absolute(node: ast.ImportFrom, path: Path | None) -> str:
    """An import's module, a relative one resolved from ``path`` (the package its file is
    in, as under ``gym/``: ``gym/sim/flow/x.py`` is in ``gym.sim.flow``)."""
    if not node.level:
        return node.module or ""
    if path is None:
        return ""
    parts = list(path.parts)
    package = parts[len(parts) - 1 - parts[::-1].index("gym") : -1] if "gym" in parts else []
    base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
    return ".".join([*base, *([node.module] if node.module else [])])


def twice_named(trees: dict[Path, ast.Module]) -> dict[str, list[str]]:
    where: dict[str, list[str]] = defaultdict(list)
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(rel(path))
    return {name: paths for name, paths in sorted(where.items()) if len(paths) > 1}


#: A crawler component's word, where an engine should say the kind's.
CRAWLER_WORDS = re.compile(
    r"fetch|frontier|page.?store|async.?writer|writer|resolver|seen.?set|seen-url|dns"
    r"|content.?hash|duplicate.?bod|bloom.?filter|politeness|crawl.?delay",
    re.IGNORECASE,
)
ENGINES = PACKAGE / "sim"


def crawler_words(root: Path = ENGINES) -> list[str]:
    """Each line of the engines' modules that names a crawler component, as ``file:line``."""
    return [
        f"{rel(path)}:{i}"
        for path in sorted(root.rglob("*.py"))
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if CRAWLER_WORDS.search(line)
    ]


def crawler_imports(trees: dict[Path, ast.Module], root: Path = ENGINES) -> list[str]:
    """The engine modules that import the crawler's compile step (``gym.system.crawler``,
    however written: ``from gym.system import crawler`` and relative imports too)."""
    return [
        rel(path)
        for path, tree in trees.items()
        if path.is_relative_to(root) and "gym.system.crawler" in _imported(tree, path)
    ]


def design_imports(trees: dict[Path, ast.Module], root: Path = ENGINES) -> list[str]:
    """The engine modules that import a design type (``Design``, ``GraphDesign``): an
    engine is handed the topology, never the design."""
    return [
        rel(path)
        for path, tree in trees.items()
        if path.is_relative_to(root)
        and any(
            a.name in ("Design", "GraphDesign")
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom)
            for a in n.names
        )
    ]


def per_run_kinds(trees: dict[Path, ast.Module], root: Path = ROOT) -> list[str]:
    """The shipped kinds whose flow rule has no component for a batch of runs (no
    ``batch``), or none for some nodes (a ``batch`` that may return None): a batch then
    runs their nodes run by run, through the engine's adapters (``Each``, ``Stacked``)."""
    out = []
    for kind in KINDS:
        tree = trees.get(root / "gym" / "sim" / "flow" / f"{kind}.py")
        if tree is None:
            continue
        found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "batch"]
        if not found:
            out.append(kind)
        elif found[0].returns is None or "None" in ast.unparse(found[0].returns):
            out.append(f"{kind} (some nodes)")
    return out


def internals() -> list[str]:
    return [
        f"{rel(path)}:{i} {m.group(0)}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for i, line in enumerate(path.read_text().splitlines(), 1)
        for m in PRIVATE.finditer(line)
    ]


def measure() -> dict[str, Any]:
    trees = modules()
    checks = design_checks(trees)
    long = long_functions(trees)
    blocks = complex_blocks()
    kinds = kind_mentions(trees)
    return {
        "modules": len(trees),
        "lines": sum(len(p.read_text().splitlines()) for p in trees),
        "largest_module_kb": max(p.stat().st_size for p in trees) / 1024,
        "design_type_checks": len(checks),
        "design_type_check_files": len({c.split(":")[0] for c in checks}),
        "design_type_check_sites": checks,
        "design_type_questions": design_questions(trees),
        "request_paths": record_builders(trees, "gym/sim/request/"),
        "flow_latency_paths": flow_latency_paths(trees),
        "functions_over_80": [f"{n} {path} {name}" for n, path, name in long],
        "functions_over_100": sum(n > 100 for n, _, _ in long),
        "blocks_d_to_f": None if blocks is None else [f"{p} {n} ({c})" for p, n, c in blocks],
        "kind_files_outside_home": {k: len(v) for k, v in sorted(kinds.items())},
        "kind_files": kinds,
        "class_names_twice": twice_named(trees),
        "framework_internals": internals(),
        "crawler_words_in_engines": crawler_words(),
        "engines_importing_the_crawler": crawler_imports(trees),
        "engines_importing_a_design_type": design_imports(trees),
        "kinds_run_by_run_in_a_batch": per_run_kinds(trees),
    }


GOALS = [
    ("isinstance checks of a design type", "design_type_checks", 5),
    ("request-engine paths", "request_paths", 1),
    ("flow latency paths", "flow_latency_paths", 1),
    ("functions over 80 lines", "functions_over_80", 0),
    ("blocks rated D-F", "blocks_d_to_f", 5),
    ("class names defined twice", "class_names_twice", 0),
    ("framework internals touched", "framework_internals", 0),
    ("crawler words in the engines (lines)", "crawler_words_in_engines", 0),
    ("engine modules importing the crawler", "engines_importing_the_crawler", 0),
    ("engine modules importing a design type", "engines_importing_a_design_type", 0),
    ("kinds a batch runs run by run", "kinds_run_by_run_in_a_batch", 0),
]


def table(m: dict[str, Any]) -> str:
    lines = ["| what | now | goal | met |", "|---|---|---|---|"]
    for label, key, goal in GOALS:
        value = m[key]
        now = len(value) if isinstance(value, list | dict) else value
        if value is None:
            lines.append(f"| {label} | (radon missing) | <= {goal} | ? |")
            continue
        lines.append(f"| {label} | {now} | <= {goal} | {'yes' if now <= goal else 'no'} |")
    asked = m["design_type_questions"]
    for question, sites in asked.items():
        files = len({s.split(":")[0] for s in sites})
        lines.append(f"| calls of compiled.{question} | {len(sites)} in {files} files | - | - |")
    counts = Counter(m["kind_files_outside_home"])
    named = ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))
    lines.append(f"| files naming a kind outside its home | {named} | one registry line | - |")
    lines.append(f"| largest module | {m['largest_module_kb']:.1f} KB | - | - |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "structure.json")
    args = p.parse_args()
    m = measure()
    print(table(m))
    args.json.write_text(json.dumps(m, indent=2) + "\n")


if __name__ == "__main__":
    main()
