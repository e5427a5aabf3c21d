"""Each kind's rule in the flow engine, found by the kind's name: how a node of that kind
is built (its component, from the run and the node) and connected to the components
feeding it and fed by it: the module of this package named after the kind
(:data:`gym.system.kinds.SHIPPED`), read on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from gym.sim.flow.base import Build, Component, connect_upstream
from gym.system.kinds import SHIPPED
from gym.system.topology import Node

#: Bytes of per-tick arrays one run's component holds per tick, at most, unless its kind
#: says more (its module's ``TICK_BYTES``): its tallies and stream figures (149 B
#: measured on the reference's nodes; ``tests/test_batch.py`` checks the bound).
TICK_BYTES = 200


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
    #: Its latency model in the flow engine's estimate (a ``graph_latency.Model``), or
    #: None: it adds no time, its counts' losses and finishes still count end to end.
    latency: Any = None
    #: What it sends on in the fluid network the estimate reads, or None: what it did not
    #: turn away nor finish (:func:`gym.sim.flow.fluid._through`).
    fluid: Callable[..., tuple[Any, Any]] | None = None
    #: Where a run of its nodes is outside what the flow engine has been checked to get
    #: right (:mod:`gym.sim.flow.checked`): a sentence for the node, "" where it is not;
    #: None: nothing known.
    checked: Callable[[Node, Any, Any], str] | None = None
    #: What the flow engine's grid does to its nodes' figures (a service time held whole
    #: ticks, a station's slots): :data:`gym.sim.rounded.Rounding`, or None: nothing.
    rounding: Callable[..., list[str]] | None = None
    #: What one run's component of a node holds per tick, in bytes, at most: what a batch
    #: of runs is sized by (:func:`gym.explore.montecarlo.run_bytes`).
    tick_bytes: int = TICK_BYTES


def _rule(module: Any) -> FlowRule:
    return FlowRule(
        module.build,
        module.connect,
        getattr(module, "batch", None),
        getattr(module, "LATENCY", None),
        getattr(module, "FLUID", None),
        getattr(module, "CHECKED", None),
        getattr(module, "ROUNDING", None),
        getattr(module, "TICK_BYTES", TICK_BYTES),
    )


#: The flow rules in use, by kind name: a shipped kind's is read from its module on first
#: use (:func:`rule_for`); a kind registered from outside adds its own
#: (``tests/limiter_kind.py`` shows one).
RULES: dict[str, FlowRule] = {}


def rule_for(kind: str) -> FlowRule:
    """The flow rule of ``kind``: a shipped kind's from ``gym.sim.flow.<kind>``."""
    if kind not in RULES:
        if kind not in SHIPPED:
            raise KeyError(f"no flow-engine rule for the kind {kind!r}: register() one")
        RULES[kind] = _rule(import_module(f"gym.sim.flow.{kind}"))
    return RULES[kind]


def register(kind: str, rule: FlowRule) -> None:
    """Make ``rule`` the flow engine's rule for nodes of ``kind`` (a kind of your own)."""
    RULES[kind] = rule
