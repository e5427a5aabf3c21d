"""The playground's state, without a web page: a design being edited field by field, its
runs, and what the page shows of them.

:mod:`gym.playground.page` draws this in a browser (one :class:`Session` per browser
tab). Everything here is plain Python over the gym's own API, so the page says exactly
what ``gym run`` says: a value is checked by the same models (the same one-line messages), a run is
``gym.simulate``, the tables and texts are the HTML report's, the fix is ``gym.explore.fix``.
"""

from __future__ import annotations

import copy
import math
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from gym.core.errors import GymError, Problem
from gym.core.limits import DEFAULT_MAX_URLS
from gym.models import Design, Scenario
from gym.system.compiled import addons
from gym.system.graph import GraphDesign

if TYPE_CHECKING:
    from gym.analysis.result import Result
    from gym.explore.fix import Fix, NoFix
    from gym.explore.headroom import Headroom
    from gym.explore.montecarlo import MonteCarloResult

Kind = Literal["int", "float", "choice"]

#: A slider covers this many times a field's value (or its own range, if narrower); the
#: number box beside it takes any value the schema allows.
SLIDER_REACH = 4.0
#: Steps on a slider at most.
SLIDER_STEPS = 400


@dataclass(frozen=True)
class FieldSpec:
    """One field of the design the page offers: where it is, what it takes."""

    path: str  # as --set writes it: fetchers.replicas, graph.nodes.db.rps
    part: str  # what its units are counted under: a section, or a graph node
    kind: Kind
    description: str
    unit: str
    low: float | None = None  # the schema's bounds
    high: float | None = None
    low_open: bool = False  # > rather than >=
    high_open: bool = False
    options: tuple[Any, ...] = ()  # a choice's values
    optional: bool = False  # may be left empty (null: the default applies)

    def slider(self, value: float) -> tuple[float, float, float]:
        """(start, end, step) of a slider around ``value``: up to SLIDER_REACH times it
        (a fraction's whole range), in at most SLIDER_STEPS round steps, inside the
        schema's bounds."""
        low = self.low if self.low is not None else 0.0
        high = self.high if self.high is not None else math.inf
        if self.kind == "float" and high <= 1.0:
            end = high  # a fraction: the whole range
        else:
            end = min(high, max(abs(value) * SLIDER_REACH, low + 1.0))
        step = _nice_step((end - low) / SLIDER_STEPS)
        if self.kind == "int":
            step = float(max(1, round(step)))
        start = math.ceil(low / step) * step
        if self.low_open and start <= low:
            start += step
        end = max(start + step, math.floor(end / step) * step)
        return start, end, step


def _nice_step(raw: float) -> float:
    """The least of 1, 2 or 5 times a power of ten that is at least ``raw`` (0.001 at
    least): a slider over a range in steps of ``raw`` or more."""
    if raw <= 0.001:
        return 0.001
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * power >= raw * (1 - 1e-12):
            return float(m * power)
    return float(10 * power)


def fields(design: Design | GraphDesign) -> list[FieldSpec]:
    """Every scalar field of ``design`` the page can set, in the order of the file."""
    from pydantic import BaseModel

    from gym.inputs.schema import unit_of

    out: list[FieldSpec] = []

    def walk(model: BaseModel, prefix: str, part: str) -> None:
        for name, info in type(model).model_fields.items():
            key = info.alias or name  # as the file has it (a graph edge's from and to)
            value = getattr(model, name)
            path = f"{prefix}{key}"
            if not prefix and name in ("name", "system"):
                continue
            if isinstance(value, BaseModel):
                walk(value, path + ".", part or key)
                continue
            if isinstance(value, dict):
                for child, node in value.items():
                    if isinstance(node, BaseModel):
                        walk(node, f"{path}.{child}.", str(child))
                continue
            if isinstance(value, list | tuple):
                continue
            spec = _spec(info, path, part or key, unit_of(type(model), name))
            if spec is not None:
                out.append(spec)

    walk(design, "", "")
    return out


def _spec(info: Any, path: str, part: str, unit: str) -> FieldSpec | None:
    annotation = info.annotation
    optional = False
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        if len(args) != 1:
            return None
        annotation = args[0]
    description = info.description or ""
    if typing.get_origin(annotation) is Literal:
        options = typing.get_args(annotation)
        if len(options) < 2:  # a node's kind: fixed
            return None
        return FieldSpec(path, part, "choice", description, unit, options=options)
    if annotation is bool:
        return FieldSpec(path, part, "choice", description, unit, options=(False, True))
    if annotation not in (int, float):
        return None
    bounds: dict[str, float] = {}
    for meta in info.metadata:
        for attr in ("gt", "ge", "lt", "le"):
            v = getattr(meta, attr, None)
            if v is not None:
                bounds[attr] = float(v)
    return FieldSpec(
        path,
        part,
        "int" if annotation is int else "float",
        description,
        unit,
        low=bounds.get("ge", bounds.get("gt")),
        high=bounds.get("le", bounds.get("lt")),
        low_open="gt" in bounds,
        high_open="lt" in bounds,
        optional=optional,
    )


@dataclass
class View:
    """What the page shows of one run."""

    verdict: str  # PASS or FAIL
    engine: str
    cost_units: int
    units: dict[str, int]
    explanations_html: str
    traps_html: str  # the rubric's traps the design took ("" when none)
    budget_html: str
    #: Per second: t (window start, s), saturation per component, offered, served,
    #: failed, the entry queue's backlog.
    t: list[float]
    saturation: dict[str, list[float]]
    offered: list[float]
    served: list[float]
    failed: list[float]
    backlog: list[float]
    entry: str
    buffer: int | None
    ceiling: float | None
    duration_s: float
    #: The scenario's events: (start s, end s, label, kind).
    events: list[tuple[float, float, str, str]]
    result: Result = field(repr=False)
    #: What gym run prints as warnings for this run (a rate rounded to whole slots...).
    warnings: tuple[str, ...] = ()


@dataclass
class Session:
    """One page's design, scenario and runs. Not shared: every browser tab has its own."""

    design: Design | GraphDesign
    scenario: Scenario
    design_file: str  # the name messages give the design (the file it came from)
    seed: int = 0
    max_urls: int = DEFAULT_MAX_URLS  # the request engine's limit (gym serve --max-urls)
    #: The scenario's label, as the page offers it and a share link names it.
    scenario_file: str = "scenario"
    data: dict[str, Any] = field(init=False)
    #: The design as opened (the file, or what the page was started with): what the page's
    #: edits are counted against.
    opened: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.data = _mapping(self.design)
        self.opened = _mapping(self.design)

    def edits(self) -> int:
        """How many fields differ from the design as opened (a section counts once)."""

        def count(a: Any, b: Any) -> int:
            if isinstance(a, dict) and isinstance(b, dict):
                return sum(count(a.get(k), b.get(k)) for k in {*a, *b})
            return int(a != b)

        now = _mapping(self.design)
        n = count(self.opened, now)
        graph, was = now.get("graph"), self.opened.get("graph")
        if (
            isinstance(graph, dict)
            and isinstance(was, dict)
            and set(graph["nodes"]) != set(was["nodes"])
            and graph["edges"] != was["edges"]
        ):
            n -= 1  # a node added (or gone) with its edges: one change
        return n

    # -- editing ---------------------------------------------------------------------------
    def fields(self) -> list[FieldSpec]:
        return fields(self.design)

    def value(self, path: str) -> Any:
        """A field's value in the draft (what the page shows)."""
        return _at(self.data, path)

    def held(self, path: str) -> Any:
        """A field's value in the design (the last draft that held), not the draft's."""
        return _at(_mapping(self.design), path)

    def set(self, path: str, value: Any) -> None:
        """Set one field of the draft, then check the whole draft as a file would be
        checked (the models, then the catalog and the scenario: ``gym validate``). If it
        holds, it becomes the design; if not, :class:`GymError` says why
        (``file: field: message``), the design stays the last one that held, and the draft
        keeps the value, so that a field another depends on (a lognormal's cv) can be
        set next."""
        data = copy.deepcopy(self.data)
        node = data
        keys = path.split(".")
        for key in keys[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                raise GymError.single(self.design_file, path, "no such field in this design")
            node = child
        if keys[-1] not in node:
            raise GymError.single(self.design_file, path, "no such field in this design")
        node[keys[-1]] = value
        self.data = data
        self.design = self._checked(data)

    @property
    def valid(self) -> bool:
        """Whether the draft is the design (every field as the page shows it holds)."""
        return _mapping(self.design) == self.data

    def _checked(self, data: dict[str, Any]) -> Design | GraphDesign:
        """The design ``data`` makes, loaded and checked as ``gym validate`` checks a
        file named ``design_file``; else GymError."""
        from gym.api import section_checks, validate
        from gym.inputs.loading import load_design

        try:
            design = load_design(self.design_file, contents=data)
        except GymError as err:  # what the catalog finds said with it, as gym run says
            more = section_checks(self.design_file, self.scenario, contents=data)
            raise GymError([*err.problems, *more]) from None
        problems = validate(design, self.scenario)
        if problems:
            raise GymError(problems)
        return design

    def sections(self) -> dict[str, bool]:
        """The design's optional sections, and whether it has each (none for a graph)."""
        if addons(self.design) is None:
            return {}
        return {name: self.data.get(name) is not None for name in OPTIONAL_SECTIONS}

    def toggle(self, section: str, on: bool) -> None:
        """Add an optional section (with the values of :data:`OPTIONAL_SECTIONS`: one
        unit's worth), or remove it, in the draft; checked as :meth:`set` checks."""
        if section not in self.sections():
            raise GymError.single(self.design_file, section, "not an optional section")
        data = copy.deepcopy(self.data)
        data[section] = _starting(section, self.scenario) if on else None
        self.data = data
        self.design = self._checked(data)
        self.data = _mapping(self.design)

    def open(
        self,
        content: bytes | str,
        file: str,
        scenario: tuple[Scenario, str] | None = None,
    ) -> None:
        """Replace the design and the draft by a design file's contents (``file``: its
        name, for messages; read as ``gym run`` reads a file), if it is a design that can
        run under the scenario (``scenario``: another one and its label, taken with the
        design); else raise and keep both."""
        from gym.inputs.strict_yaml import parse_yaml_bytes

        previous = self.design_file, self.scenario, self.scenario_file
        self.design_file = file
        if scenario is not None:
            self.scenario, self.scenario_file = scenario
        try:
            raw = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
            design = self._checked(parse_yaml_bytes(raw, file))
        except GymError:
            self.design_file, self.scenario, self.scenario_file = previous
            raise
        self.design = design
        self.data = _mapping(design)
        self.opened = _mapping(design)

    def use_scenario(self, scenario: Scenario, label: str) -> None:
        """Run the design under another scenario, if it can run there (checked as
        ``gym validate`` checks the pair); else raise and keep the one it had."""
        from gym.api import validate

        problems = validate(self.design, scenario)
        if problems:
            raise GymError(problems)
        self.scenario, self.scenario_file = scenario, label

    def use_seed(self, seed: int | str | None) -> None:
        """Run from another seed, a number or as written (its odds take the seeds from it
        on: the last of them must be a seed too)."""
        from gym.core.limits import MAX_SEED
        from gym.playground.links import read_seed

        last = MAX_SEED - ODDS_RUNS + 1
        if isinstance(seed, int) and not isinstance(seed, bool):
            seed = str(seed)
        if not isinstance(seed, str):
            seed = ""  # an empty box
        self.seed = read_seed(seed, last)

    def link(self) -> str:
        """The query of a link to the page as it is: the design, scenario and seed."""
        from gym.playground.links import query

        return query(self.design, self.scenario_file, self.seed)

    def add_node(self, kind: str, name: str, edge: int) -> None:
        """Put a new node of ``kind`` named ``name`` on the graph's edge number ``edge``
        (what went from A to B goes from A to the node, and on from it to B), with one
        unit's parameters under the scenario's catalog (a service: :data:`SERVICE_RPS`);
        checked as :meth:`set` checks."""
        from gym.playground.links import clipped
        from gym.system import kinds
        from gym.system.graph import NODE_NAME_PATTERN

        if addons(self.design) is not None:
            raise GymError.single(self.design_file, "graph", "nodes are added to graph designs")
        edges = self.data["graph"]["edges"]
        if kind not in node_kinds():
            raise GymError.single(None, "kind", f"{kind!r}: one of {', '.join(node_kinds())}")
        if not 0 <= edge < len(edges):
            raise GymError.single(None, "edge", "choose the edge the node goes on")
        if not name:
            raise GymError.single(None, "name", "a name is needed")
        if not re.fullmatch(NODE_NAME_PATTERN, name):
            raise GymError.single(
                None,
                "name",
                f"{clipped(name)!r}: a node's name is a letter, then letters, digits, _ or -"
                " (64 at most)",
            )
        if name in self.data["graph"]["nodes"]:
            raise GymError.single(None, "name", f"{name!r}: a node has this name already")
        scale = kinds.kind(kind).scale
        params = scale(1, self.scenario.catalog) if scale else {"rps": SERVICE_RPS}
        data = copy.deepcopy(self.data)
        data["graph"]["nodes"][name] = {"kind": kind, **params}
        target = data["graph"]["edges"][edge]["to"]
        data["graph"]["edges"][edge]["to"] = name
        data["graph"]["edges"].append({"from": name, "to": target})
        self.design = self._checked(data)  # the draft is kept only if it holds
        self.data = _mapping(self.design)

    def yaml(self) -> str:
        """The design as a file that loads back (every field written out)."""
        from gym.report.files import resolved_yaml

        return resolved_yaml(self.design)

    # -- running ---------------------------------------------------------------------------
    def run(self, engine: str = "flow", progress: Callable[[float], None] | None = None) -> View:
        import gym

        result = gym.simulate(
            self.design,
            self.scenario,
            seed=self.seed,
            engine=engine,
            progress=progress,
            max_urls=self.max_urls,
        )
        return view(result)

    def odds(self, runs: int | None = None) -> MonteCarloResult:
        """The design's pass probability over seeds ``seed .. seed + runs - 1`` (by
        default :data:`ODDS_RUNS`) with the flow engine, as ``gym run --runs`` gives it:
        one batch of runs (:func:`gym.explore.montecarlo.run_many`)."""
        from gym.explore.montecarlo import run_many

        return run_many(self.design, self.scenario, runs=runs or ODDS_RUNS, seed=self.seed)

    def fix(self, result: Result) -> Fix | NoFix | None:
        """The cheapest change that passes, for a failing flow run (None if it passed)."""
        if result.passed:
            return None
        from gym.explore.fix import suggest

        return suggest(result)

    def headroom(self, result: Result) -> Headroom | None:
        """How far a passing run is from failing (None if it failed)."""
        from gym.explore.headroom import AUTO_TICKS, headroom

        return headroom(result, AUTO_TICKS)


#: Seeds the page takes its pass probability over: the design's verdict over many seeds,
#: not one (what ``gym run --runs 20`` gives).
ODDS_RUNS = 20

#: A service node's rate when the page adds one (it costs no units: set it on the page).
SERVICE_RPS = 1000.0


def node_kinds() -> tuple[str, ...]:
    """The kinds of node the page adds to a graph (every kind a graph names but a source:
    a graph has one)."""
    from gym.system import kinds

    return tuple(k for k in kinds.graph_kinds() if k not in kinds.source_kinds())


def new_node_name(kind: str, taken: Any) -> str:
    """``kind``, or ``kind2``, ``kind3``...: the first name no node of the graph has."""
    name, n = kind, 1
    while name in taken:
        n += 1
        name = f"{kind}{n}"
    return name


#: A crawler design's optional sections, as the page offers to add them.
OPTIONAL_SECTIONS = ("async_writer", "retries", "discovery")


def _starting(section: str, scenario: Scenario) -> dict[str, Any]:
    """An optional section's values when the page adds it: one unit of a writer (the
    catalog's), one seen-set shard, retries as designs/levers/retry-backoff.yaml has them."""
    if section == "async_writer":
        return {"buffer": scenario.catalog.async_writer.buffer}
    if section == "discovery":
        return {"shards": 1}
    return {"attempts": 5, "backoff_s": 1.0}


def messages(problems: list[Problem]) -> list[str]:
    """The lines the command line prints for ``problems``: ``error: file: field: message``."""
    from gym.core.text import printable

    return [f"error: {printable(str(p))}" for p in problems]


def _at(data: dict[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` of a design's mapping (None where there is none)."""
    node: Any = data
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _mapping(design: Design | GraphDesign) -> dict[str, Any]:
    data: dict[str, Any] = design.model_dump(mode="json", by_alias=True)
    return data


def _alerts(result: Result) -> str:
    from gym.report import html

    return "" if result.alerts is None else "<h3>Alerts</h3>" + html.alerts_section(result)


def view(result: Result) -> View:
    """The page's figures of a run, from the same table the plots and the report use."""
    from gym.report import html
    from gym.report.plots import context

    df = result.windows()
    ctx = context(result)
    per_window = df.groupby("window", sort=True)
    t = [float(x) for x in per_window["t_s"].first()]
    saturation = {
        # NaN (no demand, or an outage) stays NaN: the plot leaves a gap
        str(name): [float(x) for x in rows["saturation"]]
        for name, rows in df.groupby("component", sort=False)
    }
    entry = df[df["component"] == ctx.entry]
    offered = list(ctx.offered) if ctx.offered is not None else list(entry["demand"])
    failed = per_window["failed"].sum()
    m = result.metrics
    return View(
        verdict=result.verdict.upper(),
        engine=result.engine,
        cost_units=int(m.cost_units),
        units=dict(m.units),
        explanations_html=html.explanation_list(result.explanations),
        traps_html=html.traps_section(result) if result.traps else "",
        budget_html=html.budget_section(result) + _alerts(result),
        t=t,
        saturation=saturation,
        offered=[float(x) for x in offered],
        served=[float(x) for x in per_window["served"].sum()],
        failed=[float(x) for x in failed],
        backlog=[float(x) for x in entry["backlog"]],
        entry=ctx.entry,
        buffer=ctx.frontier_buffer,
        ceiling=ctx.ceiling,
        duration_s=ctx.duration_s,
        events=[(s.start_s, s.end_s, s.label, s.kind) for s in ctx.shades],
        result=result,
        warnings=tuple(result.warnings),
    )
