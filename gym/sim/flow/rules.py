"""Each kind's rule in the flow engine, found by the kind's name: how a node of that kind
is built (its component, from the run and the node) and connected to the components
feeding it and fed by it. The modules are named after the kinds (:mod:`gym.system.kinds`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gym.sim.flow import (
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
from gym.sim.flow.base import Build, Component, connect_upstream
from gym.system.topology import Node


@dataclass(frozen=True)
class FlowRule:
    """How the flow engine builds and connects a node of one kind."""

    #: The node's component (before any edge is connected).
    build: Callable[[Build, Node], Component]
    #: Connects a built component to the components feeding it and fed by it.
    connect: Callable[[Any, Sequence[Any], Sequence[Any]], None] = connect_upstream
    #: One component for the runs of a batch (each build's run a row), or None where the
    #: kind has none, or not for this node: then each run has its own.
    batch: Callable[[Sequence[Build], Node], Component | None] | None = None


def _rule(module: Any) -> FlowRule:
    return FlowRule(module.build, module.connect, getattr(module, "batch", None))


#: The flow rule of every kind, by the kind's name (a kind registered from outside adds
#: its own line here, as ``tests/limiter_kind.py`` shows).
RULES: dict[str, FlowRule] = {
    "source": _rule(source),
    "queue": _rule(queue),
    "fleet": _rule(fleet),
    "cache": _rule(cache),
    "service": _rule(service),
    "write_buffer": _rule(write_buffer),
    "store": _rule(store),
    "lookup": _rule(lookup),
    "links": _rule(links),
}


def register(kind: str, rule: FlowRule) -> None:
    """Make ``rule`` the flow engine's rule for nodes of ``kind`` (a kind of your own)."""
    RULES[kind] = rule
