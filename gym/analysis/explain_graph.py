"""A graph design's explanations, as actionable as the crawler's: by the node's kind and
its place in the graph, what would have kept the requests it lost (each kind's own hint,
``Kind.hint`` in its declaration: a write buffer before a store that stalled, capacity
after a queue that overflowed, a spare replica for a crash), which node holds a saturated
node's backlog (a fleet's queue, a store's write buffer: the kinds that back up behind
it), and how much a loop amplifies what enters it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gym.system.kinds import kind

if TYPE_CHECKING:
    from gym.analysis.metrics import Metrics
    from gym.system.topology import Topology


def hint(m: Metrics, component: str, cause: str, worst_outage: int) -> str:
    """What would have kept the requests ``cause`` lost at ``component`` ("" if nothing to
    say); ``worst_outage``: the most lost in one stretch of the cause."""
    graph = m.record.topology
    if graph is None or component not in graph.names:
        return ""
    node = graph.node(component)
    feeding = [e.source for e in graph.inputs(component)]
    kinds = {n: graph.node(n).kind for n in feeding}
    said = kind(node.kind).hint(graph, component, cause, kinds, worst_outage)
    if said is not None:
        return said
    if cause.endswith("unavailable"):
        # A graph has no retry policy, and a queue before a node keeps sending to it.
        return (
            f"Nothing in the graph holds what reaches {component} while it is down (a graph "
            "design has no retries, and a queue before it keeps sending): it fails for as "
            "long as the outage lasts."
        )
    return ""


def fed_by(m: Metrics, component: str) -> str:
    """``; fed by queue log`` for a saturated node fed by nodes that back up behind it (a
    fleet's queue, a store's write buffer: ``Kind.backs_up_behind``), "" otherwise."""
    graph = m.record.topology
    if graph is None or component not in graph.names:
        return ""
    here = graph.node(component).kind
    held = [graph.node(e.source) for e in graph.inputs(component)]
    held = [n for n in held if here in kind(n.kind).backs_up_behind]
    if not held:
        return ""
    names = ", ".join(n.name for n in held)
    return f"; fed by {held[0].kind} {names} (its backlog waits there)"


def loops(m: Metrics) -> list[str]:
    """For each delayed edge (a loop back), what it amplifies, as the run measured it: of
    what reached the edge's target, the share g that came back along it, so the load
    there is 1 / (1 - g) times what enters from outside."""
    graph: Topology | None = m.record.topology
    if graph is None:
        return []
    out = []
    for e in graph.edges:
        if e.delay_s <= 0:
            continue
        source = m.record.components.get(e.source)
        target = m.record.components.get(e.target)
        if source is None or target is None:
            continue
        reached = float(np.sum(target.arrived))
        back = float(np.sum(source.out)) * e.share
        if reached <= 0 or back <= 0:
            continue
        g = min(back / reached, 0.999)
        out.append(
            f"the loop back {e.source} -> {e.target} (after {e.delay_s:g} s): {g:.0%} of "
            f"what reached {e.target} came back along it, so the load there is "
            f"{1 / (1 - g):.2f}x what enters from outside"
        )
    return out
