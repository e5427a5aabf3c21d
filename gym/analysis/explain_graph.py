"""A graph design's explanations, as actionable as the crawler's: by the node's kind and
its place in the graph, what would have kept the requests it lost (a write buffer before a
store that stalled, capacity after a queue that overflowed, a spare replica for a crash),
which queue feeds a saturated fleet, and how much a loop amplifies what enters it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

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
    caches = [n for n, k in kinds.items() if k == "cache"]
    if node.kind == "store" and caches and cause.endswith(("unavailable", "overload")):
        more = f"; more rate at {component} takes more of them" if "overload" in cause else ""
        return (
            f"What reaches it are {', '.join(caches)}'s misses: reads, which no buffer can "
            f"hold. A higher hit ratio at {caches[0]} sends it fewer{more}."
        )
    if node.kind == "store" and cause.endswith(("unavailable", "overload")):
        if "write_buffer" in kinds.values():
            return ""
        return (
            f"A write_buffer node before {component} holding at least {worst_outage:,} "
            "writes would keep them while it cannot take them and flush them after."
        )
    if node.kind == "queue" and cause.endswith("overflow"):
        downstream = [e.target for e in graph.outputs(component)]
        if not downstream:
            return ""
        buffer = getattr(node.params, "buffer", None)
        held = f"its {buffer:,}-request buffer" if isinstance(buffer, int) else "its buffer"
        return (
            f"It drains into {', '.join(downstream)}: while they take less than arrives (a "
            f"crash, a burst), {held} fills. More capacity there, or a larger buffer, "
            "keeps them."
        )
    if node.kind == "fleet" and cause.endswith("crash_loss"):
        return (
            "More replicas (N+1: one beyond the load's need) keep the rest below "
            f"saturation while one is down; with on_crash: requeue on {component}, the work "
            "in flight on it goes back to its feeder instead of failing."
        )
    if node.kind == "write_buffer" and cause.endswith("overflow"):
        behind = ", ".join(e.target for e in graph.outputs(component)) or "the store"
        return (
            f"It filled while {behind} could not take its flushes: a larger buffer holds "
            "a longer outage, more capacity behind it drains it sooner."
        )
    if node.kind in ("service", "cache") and cause.endswith("overload"):
        queued = "queue" in kinds.values()
        return (
            "More rate gives it more slots (rate x service time)"
            + ("" if queued else f"; a queue node before {component} would hold the bursts")
            + "."
        )
    if node.kind == "lookup" and cause.endswith("overload"):
        return (
            "More shards spread the lookups, until the busiest key's shard alone is full "
            "(the hot key lands on one shard)."
        )
    if cause.endswith("unavailable"):
        # A graph has no retry policy, and a queue before a node keeps sending to it.
        return (
            f"Nothing in the graph holds what reaches {component} while it is down (a graph "
            "design has no retries, and a queue before it keeps sending): it fails for as "
            "long as the outage lasts."
        )
    return ""


def fed_by(m: Metrics, component: str) -> str:
    """``; fed by queue log`` for a saturated fleet fed by queues ("" otherwise)."""
    graph = m.record.topology
    if graph is None or component not in graph.names or graph.node(component).kind != "fleet":
        return ""
    queues = [e.source for e in graph.inputs(component) if graph.node(e.source).kind == "queue"]
    return f"; fed by queue {', '.join(queues)} (its backlog waits there)" if queues else ""


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
