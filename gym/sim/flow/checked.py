"""Where a flow run is outside what the flow engine has been checked to get right.

``tests/test_oracle.py`` checks both engines, shape by shape, against queueing theory and
Ciw; the request engine meets every cell, the flow engine misses some (docs/model.md, *Against
theory and Ciw*). A flow run whose graph has one of those shapes, in the regime where the
miss shows, is warned about here: the node, what was measured, and that the request engine
simulates it. Each rule reads the run's own counts, so a shape that never came near the
regime (a queue that never filled, a buffer that never overflowed) says nothing.

Each kind's rule is in its flow module (``CHECKED``, :class:`gym.sim.flow.rules.FlowRule`),
beside the behaviour it checks; this module runs them and holds what they read a run by.
"""

from __future__ import annotations

import numpy as np

from gym.sim.flow.rules import rule_for
from gym.sim.record import RunRecord
from gym.system.topology import Topology

#: The share of its arrivals a loss station must turn away for lack of slots (not in a
#: stall, which passes nothing on) for what it passes on to be smoother than the next
#: station's Erlang figure assumes (the checked cell: about 10%); and the share the next
#: must lose so for its figure to matter (the checked cell: 10-17%).
UPSTREAM_LOSS = 0.01
DOWNSTREAM_LOSS = 0.001
#: The loads (arrivals over capacity, a second at a time) at which each shape was checked
#: and missed: a queue before a random fleet near its capacity (0.95); a loss station
#: behind a losing one well below it (0.67); a write buffer's store near it (0.95). Away
#: from them the misses were not seen: in an overload the losses are the overload's, which
#: the flow engine counts right (the shipped designs that lose behind a loss station do so
#: at 0.98 and above, and agree with the request engine within 0.3%).
NEAR_CAPACITY = (0.8, 1.2)
BELOW_CAPACITY = 0.9

USE_REQUEST = "--engine request simulates it"


def warnings(record: RunRecord) -> list[str]:
    """One sentence per node of ``record``'s flow run outside what has been checked."""
    topology = record.topology
    if topology is None:
        return []
    out: list[str] = []
    for node in topology.nodes:
        checked = rule_for(node.kind).checked
        said = checked(node, topology, record) if checked else ""
        if said:
            out.append(said)
    if _delayed_loop(topology):
        out.append(
            "latency around a feedback loop is estimated: on the one loop checked against "
            "Ciw the queue's mean and p99 waits were within 10% and 15%, other loops are not "
            f"checked; {USE_REQUEST} (and measures every URL)"
        )
    return out


def _delayed_loop(topology: Topology) -> bool:
    """Whether a delayed edge closes a loop that URLs go round (its target leads back to
    its source; not through a tee, a copy of the pages whose links are new URLs)."""
    for edge in topology.edges:
        if not edge.delay_s:
            continue
        seen, todo = {edge.target}, [edge.target]
        while todo:
            for e in (e for e in topology.outputs(todo.pop()) if not e.tee):
                if e.target == edge.source:
                    return True
                if e.target not in seen:
                    seen.add(e.target)
                    todo.append(e.target)
    return False


def overloaded(record: RunRecord, name: str, share: float) -> bool:
    """Whether ``name`` turned away at least ``share`` of what reached it for lack of a
    free slot (its ``..._overload`` causes)."""
    tally = record.components[name]
    lost = sum(int(v.sum()) for c, v in tally.failed.items() if c.endswith("overload"))
    arrived = int(tally.arrived.sum())
    return arrived > 0 and lost > 0 and lost >= share * arrived


def seconds(record: RunRecord, counts: np.ndarray, over: np.ufunc = np.add) -> np.ndarray:
    """Per-tick counts taken a second at a time: added up, or their ``over`` (a peak:
    ``np.maximum``)."""
    per = max(1, 1000 // record.timeline.tick_ms)
    return over.reduceat(np.asarray(counts, dtype=np.int64), np.arange(0, len(counts), per))


def loads(record: RunRecord, at: str, serving: str) -> tuple[np.ndarray, np.ndarray]:
    """A second at a time: what reached ``at`` over the capacity of ``serving`` (the node
    whose slots it meets: itself, a queue's fleet, a write buffer's store), and whether
    ``at`` lost work in it or held half its buffer or more (one that has a buffer)."""
    tally = record.components[at]
    arrived = seconds(record, tally.arrived).astype(np.float64)
    capacity = seconds(record, record.components[serving].capacity).astype(np.float64)
    failed = sum((v for v in tally.failed.values()), np.zeros(len(tally.arrived), np.int64))
    with np.errstate(divide="ignore", invalid="ignore"):
        load = np.where(capacity > 0, arrived / capacity, np.inf)
    pressed = seconds(record, failed) > 0
    if tally.limit:
        pressed |= seconds(record, tally.backlog, np.maximum) >= 0.5 * tally.limit
    return load, pressed


def losing_load(record: RunRecord, at: str, serving: str) -> float:
    """The load over the seconds ``at`` lost work in (inf where none)."""
    tally = record.components[at]
    _, losing = loads(record, at, serving)
    arrived = float(seconds(record, tally.arrived)[losing].sum())
    capacity = float(seconds(record, record.components[serving].capacity)[losing].sum())
    return arrived / capacity if capacity > 0 else float("inf")
