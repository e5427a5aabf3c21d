"""What a node kind declares: its parameters, its cost, the causes it records, the faults
it suffers and its rules on what may feed it. Each engine owns the kind's behaviour, in a
module named after it (:mod:`gym.sim.flow`, :mod:`gym.sim.request`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gym.models import Catalog
    from gym.system.topology import Node, Topology


@dataclass(frozen=True)
class Kind:
    """One kind of node."""

    name: str
    summary: str  # one line for the docs
    node: type[Any]  # the node as a graph design writes it: its parameters and ``kind``
    #: Units a node provisions under a catalog (0 for what the design does not pay for).
    units: Callable[[Any, Catalog], int]
    #: Cause names its nodes can record, by the suffix the kind uses for them.
    causes: tuple[str, ...]
    #: The parameters ``units`` units buy under a catalog (the optimizer's unit-aligned
    #: node, the rest of its parameters kept); None for what a design does not buy.
    scale: Callable[[int, Catalog], dict[str, Any]] | None = None
    #: Whether its nodes offer the scenario's load (and take no input).
    source: bool = False
    #: Whether it holds work between ticks (a queue, a fleet, a buffer).
    holds_work: bool = False
    #: Whether what it passes on is new URLs it makes (links found on pages), added to the
    #: run's offered load; such a node is fed by a tee edge and keeps no tally of its own.
    creates: bool = False
    #: Whether it is built by the crawler alone (no graph design may name it).
    internal: bool = False
    #: Whether what it skips is dropped at its door, before it takes any of its capacity
    #: (a queue's seen set); a lookup's skips come out of the work it did.
    skips_at_door: bool = False
    #: The kinds of node it backs up behind: when one it feeds slows down, stalls or
    #: crashes, it holds more (a queue in front of its fleet, a write buffer in front of
    #: its store), so their faults explain what happens at it too.
    backs_up_behind: tuple[str, ...] = ()
    #: The share of what it takes that it passes on (a cache: its misses); the demand a
    #: node sends on is min(its demand, its capacity) x this (docs/model.md, saturation).
    passes: Callable[[Any], float] = lambda _params: 1.0
    #: Whether the share it passes on is the one it passed in each window, as counted
    #: (a seen set testing seeds and links with different shares), not ``passes``.
    passes_as_counted: bool = False
    #: Whether the demand it sends on is capped at its capacity; a write buffer's is not
    #: (it holds the excess and flushes it later: its flushes add to the demand).
    capped: bool = True
    #: Whether its saturation is how full it got (a write buffer) rather than demand over
    #: capacity.
    fill_saturation: bool = False
    #: The scenario faults its nodes can suffer ("crash"; "stall", "slowdown").
    faults: tuple[str, ...] = ()
    #: Its rules on what may feed it and what it may feed: (field, message) per problem.
    check: Callable[[Node, Topology], list[tuple[str, str]]] = lambda _node, _graph: []
    #: What a scenario's catalog allows its parameters (a replica's rate, a hit ratio a
    #: cache can reach): (field, message) per problem.
    allowed: Callable[[Any, Catalog], list[tuple[str, str]]] = lambda _params, _catalog: []
    #: What would have kept the work a cause lost at one of its nodes, for the run's
    #: explanation: a sentence, "" for nothing to say, None for none of its own (the
    #: explanation's generic one then): see :data:`Hint`.
    hint: Hint = lambda _graph, _node, _cause, _feeding, _worst: None
    #: The structural changes the suggested fix may try at one of its nodes, from what the
    #: failing run measured there: see :class:`Seen` and :class:`NodeChange`.
    changes: Callable[[Seen], list[NodeChange]] = lambda _seen: []

    @property
    def offers(self) -> bool:
        """Whether its nodes start a stream of their own: a source's load, or the new URLs
        a node makes (fed by a tee edge, a copy, that no URL follows)."""
        return self.source or self.creates


#: A kind's hint: (graph, the node's name, the cause, the kinds of the nodes feeding it by
#: name, the most the cause lost in one stretch) -> a sentence, "" or None.
Hint = Callable[["Topology", str, str, dict[str, str], int], "str | None"]


@dataclass(frozen=True)
class Seen:
    """What a failing run measured at one node, for its kind's changes: the nodes and edges
    of the graph that ran (a crawler's compiled one), as a graph design writes them
    (``kind`` and parameters; ``from``/``to``), the work lost by cause (totals) and the
    busiest second's demand."""

    name: str
    nodes: dict[str, dict[str, Any]]
    edges: list[dict[str, Any]]
    lost: dict[str, int]
    peak_demand: float

    @property
    def node(self) -> dict[str, Any]:
        return self.nodes[self.name]

    def lost_by(self, suffix: str) -> int:
        """The work lost by the causes ending in ``suffix`` (``overload``)."""
        return sum(n for cause, n in self.lost.items() if cause.endswith(suffix))


@dataclass(frozen=True)
class NodeChange:
    """One structural change a kind suggests: its name, the lesson it teaches, the fields
    it sets on the node (``{"on_crash": "requeue"}``: the fix writes each where the design
    file has it, a graph's ``graph.nodes.<name>.on_crash``, a crawler's section) and a node
    it puts before another (its name, its fields, the node it goes before: the edges into
    that node go into it; a graph design's only)."""

    name: str
    lesson: str
    sets: dict[str, Any] = field(default_factory=dict)
    before: tuple[str, dict[str, Any], str] | None = None


def round_up(x: float) -> int:
    """Up to two significant figures: 4,799 x 1.25 -> 6,000 (at least 1)."""
    if x <= 0:
        return 1
    scale = 10 ** max(0, int(math.log10(x)) - 1)
    return int(math.ceil(x / scale) * scale)


def slots_hint(
    _graph: Topology, component: str, cause: str, feeding: dict[str, str], _worst: int
) -> str | None:
    """A station out of slots (a service, a cache): more rate, or a queue before it for
    the bursts."""
    if not cause.endswith("overload"):
        return None
    queued = "queue" in feeding.values()
    return (
        "More rate gives it more slots (rate x service time)"
        + ("" if queued else f"; a queue node before {component} would hold the bursts")
        + "."
    )
