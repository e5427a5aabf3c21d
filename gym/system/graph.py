"""A design given as a graph: named nodes of the kinds in :mod:`gym.system.kinds` and the edges
between them (designs/*.yaml with a ``graph`` key instead of the crawler's sections)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Union

from pydantic import Field, PrivateAttr, ValidationInfo, model_validator

from gym.core.errors import Problem
from gym.core.text import REQUESTS, Unit
from gym.models.common import FieldError, InputModel

if TYPE_CHECKING:
    from gym.models import Catalog, Scenario
    from gym.system.topology import Topology

#: The most nodes and edges one graph may have (a design is read and checked in full).
MAX_NODES = 200
MAX_EDGES = 2_000

#: A node's name: what results, faults and edges call it.
NODE_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
NodeName = Annotated[str, Field(pattern=NODE_NAME_PATTERN)]
#: Names a node may not have: results use them for figures of their own.
RESERVED_NAMES = frozenset({"end_to_end"})


def _node_union() -> Any:
    from gym.system import kinds

    models = kinds.node_models()
    return Annotated[Union[models], Field(discriminator="kind")]  # noqa: UP007


if TYPE_CHECKING:
    NodeSpec = Any  # a kind's node model; which ones, the registry says at run time
else:
    NodeSpec = _node_union()


class EdgeSpec(InputModel):
    """URLs from one node's output to another's input."""

    source: NodeName = Field(alias="from", description="The node the URLs leave.")
    target: NodeName = Field(alias="to", description="The node they reach.")
    share: float = Field(
        1.0,
        description=(
            "Share of the source's output this edge carries, where the source has several "
            "outgoing edges (their shares add up to 1)."
        ),
        gt=0,
        le=1,
    )
    delay_s: float = Field(
        0.0,
        description=(
            "Seconds the URLs spend on the way (a retry's backoff, a link found by a fetch "
            "going back to the queue): on the run's tick grid, at least one tick when above "
            "0. A cycle of edges needs a delay on one of them."
        ),
        ge=0,
        le=3600,
    )


class GraphSpec(InputModel):
    """The nodes and the edges of a system."""

    nodes: dict[NodeName, NodeSpec] = Field(
        description="Named nodes, each with its kind and that kind's parameters.",
        min_length=1,
        max_length=MAX_NODES,
    )
    edges: list[EdgeSpec] = Field(
        description="Edges, each from one node to another.", max_length=MAX_EDGES
    )


class GraphDesign(InputModel):
    """A capacity design given as a graph of typed components."""

    #: What it counts: requests (the crawler counts URLs).
    unit: ClassVar[Unit] = REQUESTS
    _source: str | None = PrivateAttr(None)  # the file it was loaded from

    name: str | None = Field(
        None, description="Name shown in results; defaults to the file name.", max_length=200
    )
    graph: GraphSpec = Field(description="The system: its nodes and edges.")

    @model_validator(mode="after")
    def _a_graph_the_engines_can_run(self, info: ValidationInfo) -> GraphDesign:
        if info.context and info.context.get("graph_problems") == "later":
            return self  # the loader reports every problem, one line each
        problems = graph_problems(self)
        if problems:
            field, message = problems[0]
            raise FieldError(field, message)
        return self


def graph_problems(design: GraphDesign) -> list[tuple[str, str]]:
    """What is wrong with the graph, as (field, message): the structure first
    (:func:`gym.system.topology.problems`), then each kind's rules on what feeds what."""
    from gym.system import kinds
    from gym.system.topology import problems

    graph = topology(design)
    found = [
        (p.field or "graph", p.message)
        for p in problems(graph, sources=kinds.source_kinds(), where="graph")
    ]
    if found:
        return found
    for name in RESERVED_NAMES & set(graph.names):
        found.append(
            (
                f"graph.nodes.{name}",
                f"{name!r} is reserved (results use it for the end-to-end latency); "
                "choose another name",
            )
        )
    sources = [n.name for n in graph.nodes if kinds.kind(n.kind).source]
    for extra in sources[1:]:
        found.append(
            (
                f"graph.nodes.{extra}",
                f"a graph has one source so far ({sources[0]}): it offers the scenario's load",
            )
        )
    for node in graph.nodes:
        found += kinds.kind(node.kind).check(node, graph)
    return found


def topology(design: GraphDesign) -> Topology:
    """The :class:`gym.system.topology.Topology` of a graph design."""
    from gym.system import kinds
    from gym.system.topology import Edge, Node, Topology

    nodes = []
    for name, spec in design.graph.nodes.items():
        kind: str = getattr(spec, "kind")  # noqa: B009  (a union built from the kinds)
        # A source's load is the scenario's: its node carries no parameters.
        nodes.append(Node(name, kind, None if kinds.kind(kind).source else spec))
    edges = tuple(Edge(e.source, e.target, e.share, e.delay_s) for e in design.graph.edges)
    return Topology(tuple(nodes), edges)


def graph_scenario(scenario: Scenario, name: str | None) -> list[Problem]:
    """A graph design (named ``name``) needs a graph scenario."""
    if scenario.system == "graph":
        return []
    return [
        Problem(
            scenario._source,
            "system",
            f"{name or 'the design'} is a graph design; its scenario needs "
            "system: graph (faults then name its nodes)",
        )
    ]


def node_problems(file: str | None, nodes: Mapping[str, Any], catalog: Catalog) -> list[Problem]:
    """What the catalog allows each node of a graph (given by name): each kind's rule
    (:attr:`gym.system.kinds.base.Kind.allowed`: a fleet's rate per replica, a cache's
    hit ratio)."""
    from gym.system import kinds

    return [
        Problem(file, f"graph.nodes.{name}.{field}", message)
        for name, spec in nodes.items()
        for field, message in kinds.kind(spec.kind).allowed(spec, catalog)
    ]


def problems_under(design: GraphDesign, scenario: Scenario) -> list[Problem]:
    """What stops a graph design from running under ``scenario``: the scenario must be
    for graph designs, its faults must hit nodes that can suffer them, and the catalog must
    allow what each node asks."""
    from gym.system import kinds

    problems = graph_scenario(scenario, design.name)
    problems += node_problems(design._source, design.graph.nodes, scenario.catalog)
    nodes = design.graph.nodes
    faults = scenario.faults if scenario.system == "graph" else []  # else: the line above
    for i, fault in enumerate(faults):
        spec = nodes.get(fault.target)

        def suffers(node: object, fault_kind: str = fault.kind) -> bool:
            return fault_kind in kinds.kind(getattr(node, "kind")).faults  # noqa: B009

        unnamed = "target" not in fault.model_fields_set
        if unnamed or spec is None or not suffers(spec):
            can = [n for n, s in nodes.items() if suffers(s)]
            what = {"crash": "crash", "stall": "stall", "slowdown": "slow down"}[fault.kind]
            if unnamed:
                problems.append(
                    Problem(
                        scenario._source,
                        f"faults[{i}].target",
                        f"is required in a graph scenario: the node that should {what} "
                        + (f"({', '.join(can)})" if can else "(the design has none)"),
                    )
                )
                continue
            problems.append(
                Problem(
                    scenario._source,
                    f"faults[{i}].target",
                    f"{fault.target!r} is not a node of {design.name or 'the design'} that can "
                    f"{what}; " + (f"choose {', '.join(can)}" if can else "it has none"),
                )
            )
    return problems
