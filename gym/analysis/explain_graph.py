"""A graph design's explanations, as actionable as the crawler's: by the node's kind and
its place in the graph, what would have kept the requests it lost (a write buffer before a
store that stalled, capacity after a queue that overflowed, a spare replica for a crash),
which queue feeds a saturated fleet, and how much a loop amplifies what enters it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable

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
    by_kind = _BY_KIND.get(node.kind)
    said = by_kind(graph, component, cause, kinds, worst_outage) if by_kind else None
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


def _store(
    graph: Topology, component: str, cause: str, kinds: dict[str, str], worst_outage: int
) -> str | None:
    """A store that was down or full: a cache's misses are reads (a higher hit ratio),
    writes a write buffer before it could hold."""
    if not cause.endswith(("unavailable", "overload")):
        return None
    caches = [n for n, k in kinds.items() if k == "cache"]
    if caches:
        more = f"; more rate at {component} takes more of them" if "overload" in cause else ""
        return (
            f"What reaches it are {', '.join(caches)}'s misses: reads, which no buffer can "
            f"hold. A higher hit ratio at {caches[0]} sends it fewer{more}."
        )
    if "write_buffer" in kinds.values():
        return ""
    return (
        f"A write_buffer node before {component} holding at least {worst_outage:,} "
        "writes would keep them while it cannot take them and flush them after."
    )


def _queue(
    graph: Topology, component: str, cause: str, kinds: dict[str, str], worst_outage: int
) -> str | None:
    """A queue that overflowed: more capacity after it, or a larger buffer."""
    if not cause.endswith("overflow"):
        return None
    downstream = [e.target for e in graph.outputs(component)]
    if not downstream:
        return ""
    buffer = getattr(graph.node(component).params, "buffer", None)
    held = f"its {buffer:,}-request buffer" if isinstance(buffer, int) else "its buffer"
    return (
        f"It drains into {', '.join(downstream)}: while they take less than arrives (a "
        f"crash, a burst), {held} fills. More capacity there, or a larger buffer, "
        "keeps them."
    )


def _fleet(
    graph: Topology, component: str, cause: str, kinds: dict[str, str], worst_outage: int
) -> str | None:
    """A fleet that lost work in a crash: a spare replica, or requeueing it."""
    if not cause.endswith("crash_loss"):
        return None
    return (
        "More replicas (N+1: one beyond the load's need) keep the rest below "
        f"saturation while one is down; with on_crash: requeue on {component}, the work "
        "in flight on it goes back to its feeder instead of failing."
    )


def _write_buffer(
    graph: Topology, component: str, cause: str, kinds: dict[str, str], worst_outage: int
) -> str | None:
    """A write buffer that overflowed: a larger one, or more capacity behind it."""
    if not cause.endswith("overflow"):
        return None
    behind = ", ".join(e.target for e in graph.outputs(component)) or "the store"
    return (
        f"It filled while {behind} could not take its flushes: a larger buffer holds "
        "a longer outage, more capacity behind it drains it sooner."
    )


def _slots(
    graph: Topology, component: str, cause: str, kinds: dict[str, str], worst_outage: int
) -> str | None:
    """A service or cache out of slots: more rate, or a queue before it for the bursts."""
    if not cause.endswith("overload"):
        return None
    queued = "queue" in kinds.values()
    return (
        "More rate gives it more slots (rate x service time)"
        + ("" if queued else f"; a queue node before {component} would hold the bursts")
        + "."
    )


def _lookup(
    graph: Topology, component: str, cause: str, kinds: dict[str, str], worst_outage: int
) -> str | None:
    """A lookup out of capacity: more shards, up to the hot key's shard."""
    if not cause.endswith("overload"):
        return None
    return (
        "More shards spread the lookups, until the busiest key's shard alone is full "
        "(the hot key lands on one shard)."
    )


#: Each kind's own hint for a cause at one of its nodes (None: none of its own for that
#: cause), from the graph, the node's name, the cause, the kinds of the nodes feeding it
#: (by name) and the most lost in one stretch.
_BY_KIND: dict[str, Callable[[Topology, str, str, dict[str, str], int], str | None]] = {
    "store": _store,
    "queue": _queue,
    "fleet": _fleet,
    "write_buffer": _write_buffer,
    "service": _slots,
    "cache": _slots,
    "lookup": _lookup,
}


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
