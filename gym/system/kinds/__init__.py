"""Node kinds: what a node of a topology can be, one declaration module each.

A kind declares the parameters of its nodes (a pydantic model), what they cost, the failure
causes they record, the faults they suffer and the rules on what may feed them
(:class:`~gym.system.kinds.base.Kind`). Its behaviour belongs to each engine, in a module
of the same name: :mod:`gym.sim.flow` (counts per tick) and :mod:`gym.sim.request` (one
URL at a time), which each engine finds by the kind's name. A new kind is a module here,
one in each engine, and its name in the one registry, :data:`SHIPPED` below.
Declarations import no numpy or SimPy, so reading a design or its schema loads neither.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from gym.system.kinds.base import Kind

if TYPE_CHECKING:
    from gym.models import Catalog
    from gym.system.topology import Topology


#: The shipped kinds, by name, in the order the docs list them: each is
#: ``gym.system.kinds.<name>`` (its declaration, ``KIND``), ``gym.sim.flow.<name>`` and
#: ``gym.sim.request.<name>`` (each engine's rule, found by this name).
SHIPPED: tuple[str, ...] = (
    "source",
    "queue",
    "fleet",
    "cache",
    "service",
    "write_buffer",
    "store",
    "lookup",
    "links",
)


def _registry() -> dict[str, Kind]:
    return {name: import_module(f"gym.system.kinds.{name}").KIND for name in SHIPPED}


#: Every kind's declaration by name: the shipped ones, and any registered from outside
#: (``tests/limiter_kind.py``).
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
        if not kind(node.kind).offers
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
