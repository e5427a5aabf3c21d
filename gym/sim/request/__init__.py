"""The request engine: every URL through the topology, one event at a time, on an event
loop ordered as SimPy orders its events.

Each node's behaviour is its kind's *rule*, found here by the kind's name (as a queueing
library maps a node's type to its behaviour): the module named after each shipped kind
(:data:`gym.system.kinds.SHIPPED`), imported on first use; a kind of your own registers
its rule with :func:`register`. A rule is a :class:`~gym.sim.request.base.Rule` (or, for a source,
:class:`~gym.sim.request.source.SourceRule`) built from the run, the node and its cause
names. :mod:`gym.sim.request.engine` walks every topology (a crawler design's
the graph its loading compiles).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from gym.system.kinds import SHIPPED

#: Rules by kind name: ``rule(run, node, causes)`` builds a node's rule.
RULES: dict[str, Callable[..., Any]] = {}


def register(
    kind: str, rule: Callable[..., Any], rounding: Callable[..., list[str]] | None = None
) -> None:
    """Make ``rule(run, node, causes)`` the request engine's rule for nodes of ``kind``,
    and ``rounding`` what its grid does to their figures (None: nothing; a shipped kind
    keeps its module's)."""
    RULES[kind] = rule
    if rounding is not None:
        ROUNDINGS[kind] = rounding
    else:
        ROUNDINGS.pop(kind, None)


#: Roundings by kind name: what the request engine's grid does to a node's figures
#: (:data:`gym.sim.rounded.Rounding`), or None where it does nothing to them.
ROUNDINGS: dict[str, Callable[..., list[str]] | None] = {}


def rounding_for(kind: str) -> Callable[..., list[str]] | None:
    """The roundings of ``kind`` in the request engine (a shipped kind's module's
    ``ROUNDING``; a kind of your own registers one, or has none)."""
    if kind not in ROUNDINGS and kind in SHIPPED:
        ROUNDINGS[kind] = getattr(import_module(f"gym.sim.request.{kind}"), "ROUNDING", None)
    return ROUNDINGS.get(kind)


def rule_for(kind: str) -> Callable[..., Any]:
    """The rule of ``kind`` (a shipped kind's module is imported on first use)."""
    if kind not in RULES:
        if kind not in SHIPPED:
            raise KeyError(f"no request-engine rule for the kind {kind!r}: register() one")
        RULES[kind] = import_module(f"gym.sim.request.{kind}").RULE
    return RULES[kind]
