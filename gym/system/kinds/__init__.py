"""Node kinds: what a node of a topology can be, one declaration module each.

A kind declares the parameters of its nodes (a pydantic model), what they cost, the failure
causes they record, the faults they suffer and the rules on what may feed them
(:class:`~gym.system.kinds.base.Kind`). Its behaviour belongs to each engine, in a module
of the same name: :mod:`gym.sim.flow` (counts per tick) and :mod:`gym.sim.request` (one
URL at a time). A new kind is a module here, one in each engine, and a line in each
registry (:data:`REGISTRY` below, ``gym.sim.flow.rules.RULES`` and the request engine's).
Declarations import no numpy or SimPy, so reading a design or its schema loads neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gym.system.kinds.base import Kind

if TYPE_CHECKING:
    from gym.models import Catalog
    from gym.system.topology import Topology


def _registry() -> dict[str, Kind]:
    from gym.system.kinds import (
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
