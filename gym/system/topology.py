"""The system as data: named nodes of typed kinds and the edges between them.

A topology is what both engines run: nodes (a source of load, a queue, a fleet, a cache,
an external service, a write buffer, a store), each of a kind from :mod:`gym.system.kinds`, and
directed edges carrying URLs from one node's output to another's input. Where a node has
several outgoing edges each carries a ``share`` of its output (the shares add up to 1);
where it has none, what it passes on is finished there (served). An edge may carry a
``delay_s`` (at least one tick on the run's grid when it is above 0); a cycle (links found
by fetches going back to the frontier, retries) is allowed when one of its edges has a
delay, so every tick can be computed from ticks before it.

This module is pure structure: which nodes, which edges, in which order an engine visits
them, and what is wrong with a graph (:func:`problems`), one line per problem naming the
node or edge. It imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gym.core.errors import Problem

#: How far the shares of a node's outgoing edges may be from 1 (decimal inputs).
SHARE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Edge:
    """URLs from ``source``'s output to ``target``'s input."""

    source: str
    target: str
    share: float = 1.0  # of the source's output, where it has several edges
    delay_s: float = 0.0  # seconds on the way (a feedback edge needs more than 0)
    #: A tee: the target sees every URL the source passes on (a copy, not a share; the
    #: links a fetched page yields), beside the source's own outgoing edges.
    tee: bool = False

    def delay_ticks(self, tick_ms: int) -> int:
        """The delay on a run's tick grid: the nearest whole number of ticks, at least one
        for any delay above 0."""
        if self.delay_s <= 0:
            return 0
        return max(1, round(self.delay_s * 1000.0 / tick_ms))


@dataclass(frozen=True)
class Node:
    """One component: its name, its kind and the kind's validated parameters."""

    name: str
    kind: str
    params: Any = None
    #: What its failure causes are called: ``<prefix>_<the kind's cause>`` (the node's name
    #: unless given; "" for the kind's own names, the crawler's ``crash_loss``).
    prefix: str | None = None
    #: A retry policy for what fails at it (a loss station's lookups or writes), or None.
    retry: Any = None
    #: How its design names it, when that is not as a graph design's ``graph.nodes.<name>``
    #: (set by the crawler's compile step): a figure's path under the node (``rps``,
    #: ``service.mean_ms``; "" for the node) to the field a user changes to move it (the
    #: crawler's ``resolver.rps``; its cache's ``rps``, bought in units, to
    #: ``cache.service.mean_ms``), and "job" to what one unit of its work is called (the
    #: crawler's fetchers': "fetch"). Words, not the node: left out of equality and hash.
    names: Mapping[str, str] | None = field(default=None, compare=False)

    def causes(self, suffixes: tuple[str, ...]) -> tuple[str, ...]:
        """The node's cause names for its kind's ``suffixes``."""
        prefix = self.name if self.prefix is None else self.prefix
        return tuple(f"{prefix}_{s}" if prefix else s for s in suffixes)


@dataclass(frozen=True)
class Topology:
    """Nodes in declaration order and the edges between them."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    #: Every failure cause a run of it lists, in the order results show them (the crawler
    #: lists all of its own, in its pipeline's order); empty: each node's, in the nodes'
    #: visiting order.
    causes: tuple[str, ...] = ()
    _by_name: dict[str, Node] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name.update({n.name: n for n in self.nodes})

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)

    def node(self, name: str) -> Node:
        return self._by_name[name]

    def inputs(self, name: str) -> tuple[Edge, ...]:
        """Edges into ``name``, in declaration order."""
        return tuple(e for e in self.edges if e.target == name)

    def outputs(self, name: str) -> tuple[Edge, ...]:
        """Edges out of ``name`` that share its output, in declaration order (tees left
        out: :meth:`tees`)."""
        return tuple(e for e in self.edges if e.source == name and not e.tee)

    def tees(self, name: str) -> tuple[Edge, ...]:
        """Tee edges out of ``name``: each sees a copy of what it passes on."""
        return tuple(e for e in self.edges if e.source == name and e.tee)

    def leaving(self, name: str) -> tuple[Edge, ...]:
        """Every edge out of ``name``, tees included."""
        return tuple(e for e in self.edges if e.source == name)

    def order(self) -> tuple[str, ...]:
        """The nodes in an order an engine can visit them tick by tick: every node after
        the nodes feeding it without a delay (Kahn's algorithm, declaration order among
        the ready ones, so a chain keeps its order). Raises ValueError on a cycle
        without a delay (:func:`problems` names it first)."""
        return self._visited

    @cached_property
    def _visited(self) -> tuple[str, ...]:  # once: the topology does not change
        waiting = {n: 0 for n in self.names}
        for e in self.edges:
            if not e.delay_s and e.target in waiting and e.source in waiting:
                waiting[e.target] += 1
        done: list[str] = []
        ready = [n for n in self.names if waiting[n] == 0]
        while ready:
            name = ready.pop(0)
            done.append(name)
            for e in self.leaving(name):
                if not e.delay_s and e.target in waiting:
                    waiting[e.target] -= 1
                    if waiting[e.target] == 0:
                        ready.append(e.target)
            ready.sort(key=self.names.index)
        if len(done) != len(self.nodes):
            stuck = [n for n in self.names if n not in done]
            raise ValueError(f"a cycle without a delay through {', '.join(stuck)}")
        return tuple(done)


#: One finding: where it is (below the graph's ``where``) and what is wrong there.
_Finding = tuple[str, str]


def problems(
    topology: Topology,
    *,
    sources: Iterable[str],
    file: str | None = None,
    where: str = "graph",
) -> list[Problem]:
    """Everything structurally wrong with ``topology``, one :class:`Problem` per finding,
    each naming the node or edge: an edge to or from a node that does not exist, a node
    whose edges' shares do not add up to 1, a cycle without a delay, a node nothing
    reaches from a source, a source with an input. ``sources`` are the kinds that
    offer load."""
    source_kinds = set(sources)
    found = [*_edge_findings(topology), *_duplicate_edges(topology)]
    if not found:  # the other checks need every edge between existing nodes
        for node in topology.nodes:
            for rule in _NODE_RULES:
                message = rule(topology, node, source_kinds)
                if message:
                    found.append((f"nodes.{node.name}", message))
        found += _cycle_findings(topology)
        found += _reach_findings(topology, source_kinds)
    return [Problem(file, f"{where}.{at}", message) for at, message in found]


def _edge_findings(topology: Topology) -> list[_Finding]:
    """Per edge: an end that is not a node, a share outside (0, 1]."""
    found: list[_Finding] = []
    names = set(topology.names)
    listing = ", ".join(topology.names)
    for i, e in enumerate(topology.edges):
        for end, name in (("from", e.source), ("to", e.target)):
            if name not in names:
                found.append(
                    (f"edges[{i}].{end}", f"{name!r} is not a node; the nodes are {listing}")
                )
        if not 0.0 < e.share <= 1.0:
            found.append((f"edges[{i}].share", f"{e.share:g} is not in (0, 1]"))
    return found


def _duplicate_edges(topology: Topology) -> list[_Finding]:
    """Each edge listed again from the same source to the same target."""
    found: list[_Finding] = []
    seen_edges: dict[tuple[str, str], int] = {}
    for i, e in enumerate(topology.edges):
        if (e.source, e.target) in seen_edges:
            first = seen_edges[(e.source, e.target)]
            found.append(
                (f"edges[{i}]", f"{e.source} -> {e.target} is listed twice (also edges[{first}])")
            )
        seen_edges.setdefault((e.source, e.target), i)
    return found


def _shares_add_up(topology: Topology, node: Node, source_kinds: set[str]) -> str:
    """The shares of a node's outgoing edges add up to 1 (one edge: share 1)."""
    out = topology.outputs(node.name)
    if len(out) > 1:
        total = sum(e.share for e in out)
        if abs(total - 1.0) > SHARE_TOLERANCE:
            shares = " + ".join(f"{e.share:g}" for e in out)
            return (
                f"the shares of its {len(out)} outgoing edges add up to {shares} = {total:g}, not 1"
            )
    elif len(out) == 1 and abs(out[0].share - 1.0) > SHARE_TOLERANCE:
        return (
            f"its one outgoing edge has share {out[0].share:g}; a single edge "
            "carries everything (share 1)"
        )
    return ""


def _source_has_no_input(topology: Topology, node: Node, source_kinds: set[str]) -> str:
    """A source takes no input edges."""
    if node.kind in source_kinds and topology.inputs(node.name):
        return "a source takes no input edges"
    return ""


def _source_feeds_a_node(topology: Topology, node: Node, source_kinds: set[str]) -> str:
    """A source has an outgoing edge for its load."""
    if node.kind in source_kinds and not topology.outputs(node.name):
        return "its load goes nowhere: give it an edge to the node it feeds"
    return ""


#: The checks on each node, in the order their messages are listed ("" when it passes).
_NODE_RULES: tuple[Callable[[Topology, Node, set[str]], str], ...] = (
    _shares_add_up,
    _source_has_no_input,
    _source_feeds_a_node,
)


def _cycle_findings(topology: Topology) -> list[_Finding]:
    """A cycle without a delay, named at its first node."""
    cycle = _cycle_without_delay(topology)
    if not cycle:
        return []
    path = " -> ".join([*cycle, cycle[0]])
    return [
        (
            f"nodes.{cycle[0]}",
            f"it is in a cycle ({path}) without a delay; give one of its edges a delay_s above 0",
        )
    ]


def _reach_findings(topology: Topology, source_kinds: set[str]) -> list[_Finding]:
    """No source of load at all, else each node no path of edges leads to from a source."""
    reached = _reachable(topology, [n.name for n in topology.nodes if n.kind in source_kinds])
    if not any(n.kind in source_kinds for n in topology.nodes):
        return [("nodes", "there is no source of load")]
    return [
        (f"nodes.{node.name}", "nothing reaches it: no path of edges leads to it from a source")
        for node in topology.nodes
        if node.name not in reached
    ]


def _reachable(topology: Topology, starts: list[str]) -> set[str]:
    seen = set(starts)
    todo = list(starts)
    while todo:
        for e in topology.leaving(todo.pop()):
            if e.target not in seen:
                seen.add(e.target)
                todo.append(e.target)
    return seen


def _cycle_without_delay(topology: Topology) -> list[str]:
    """One cycle made only of edges without a delay, as the list of its nodes (empty if
    there is none): depth-first search in declaration order."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(name: str) -> list[str]:
        state[name] = 1
        path.append(name)
        for e in topology.leaving(name):
            if e.delay_s:
                continue
            if state.get(e.target) == 1:
                return path[path.index(e.target) :]
            if e.target not in state:
                found = visit(e.target)
                if found:
                    return found
        state[name] = 2
        path.pop()
        return []

    for name in topology.names:
        if name not in state:
            found = visit(name)
            if found:
                return found
    return []
