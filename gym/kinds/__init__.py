"""Component kinds: what a node of a topology can be, each in one module.

A kind declares the parameters of its nodes (a pydantic model), the failure causes its
nodes record, how the flow engine builds and connects one (a :class:`Component` per
node, advanced tick by tick in the topology's order); the request engine finds a kind's
rule by its name (:mod:`gym.sim.request`). Adding a kind is one module that
defines a :class:`Kind` and one line in :data:`REGISTRY` below.

The rules themselves stay in :mod:`gym.components`; a kind's module imports them only when
a run builds one, so reading a design or its schema imports no numpy or simpy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import simpy

    from gym.components.base import Component, Ledger
    from gym.models import Catalog, Scenario
    from gym.timeline import Timeline
    from gym.topology import Node, Topology


@dataclass
class Build:
    """What building a node's flow component needs from the run."""

    env: simpy.Environment
    ledger: Ledger
    seed: int
    scenario: Scenario
    timeline: Timeline


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
    #: Builds the node's flow component (before any edge is connected).
    flow: Callable[[Build, Node], Component]
    #: Connects a built component to the components feeding it and fed by it.
    connect: Callable[[Component, Sequence[Component], Sequence[Component]], None]
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


def connect_upstream(
    component: Component, inputs: Sequence[Component], outputs: Sequence[Component]
) -> None:
    """The usual connection: the one component feeding this one is its upstream."""
    if inputs:
        component.upstream = inputs[0]  # type: ignore[attr-defined]


def _registry() -> dict[str, Kind]:
    from gym.kinds import (
        cache,
        fleet,
        links,
        lookup,
        queue,
        service,
        source,
        store,
        write_buffer,
    )

    kinds: tuple[Kind, ...] = (source.KIND, queue.KIND, fleet.KIND, cache.KIND, service.KIND)
    kinds += (write_buffer.KIND, store.KIND, lookup.KIND, links.KIND)
    return {k.name: k for k in kinds}


REGISTRY: dict[str, Kind] = _registry()


def kind(name: str) -> Kind:
    return REGISTRY[name]


def graph_kinds() -> tuple[str, ...]:
    """The kinds a graph design may name (the crawler's own left out)."""
    return tuple(k.name for k in REGISTRY.values() if not k.internal)


def source_kinds() -> tuple[str, ...]:
    return tuple(k.name for k in REGISTRY.values() if k.source)


def graph_units(graph: Topology, catalog: Catalog) -> dict[str, int]:
    """Units per node of a graph (each kind's rule), sources left out."""
    return {
        node.name: kind(node.kind).units(node.params, catalog)
        for node in graph.nodes
        if not kind(node.kind).source and not kind(node.kind).creates
    }


def affected_by(graph: Topology) -> dict[str, set[str]]:
    """Per node that backs up, the nodes whose faults explain what happens there: itself
    and the nodes it feeds that meter it (a queue: its fleet's crash; a write buffer: its
    store's stall; not a store a queue hands out to at its own rate)."""
    out: dict[str, set[str]] = {}
    for node in graph.nodes:
        behind = kind(node.kind).backs_up_behind
        meters = {e.target for e in graph.outputs(node.name) if graph.node(e.target).kind in behind}
        if meters:
            out[node.name] = {node.name, *meters}
    return out


def node_models() -> tuple[type[Any], ...]:
    """Each kind's node model (its parameters and ``kind``), for graph designs (the
    crawler's own kinds left out)."""
    return tuple(k.node for k in REGISTRY.values() if not k.internal)
