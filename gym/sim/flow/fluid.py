"""The fluid network of a graph run, for its latency (docs/model.md, *Latency of graph
designs*): per node and tick, the URLs expected to reach it and how irregular that
stream is (its squared coefficient of variation, SCV), and each queue's fluid backlog.

It follows the run's topology from the source's expected load (the Poisson mean, or the
evenly spaced counts), node by node in the graph's order, as a fluid: a queue holds what
exceeds the rate it hands out at (its drain, never more than its fleet starts) up to its
buffer; a fleet passes on what it started one service time (the flow engine's whole
ticks) later, less what its counts lost to a crash; a loss station passes on what it did
not turn away (its Erlang share, as the flow engine worked it out) nor finish (a cache's
hits, a service's finish share); an edge carries its share, after its delay; where edges
join, rates add. Around a loop the passes repeat until no rate moves.

The SCV follows the queueing network analyzer's rules (Whitt 1983): a share p of a stream
has SCV p c^2 + 1 - p; joined streams the rate-weighted mean of theirs; a fleet's
departures 1 + (1 - rho^2)(c_a^2 - 1) + rho^2 (c_s^2 - 1) / sqrt(c) (Whitt's linking
equation, c servers at utilization rho; a fleet whose starts are paced, one server at
the fleet's rate). The flow engine's own expected counts and dispersions are for its loss
stations' Erlang formula; where a queue holds a few URLs by chance they turn into the
counts handed out, whose noise would come back round a loop as load (a feedback queue's
arrival rate read 2.6% high), hence this network of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gym.sim.flow.base import Component
from gym.sim.flow.rules import rule_for
from gym.system import kinds
from gym.system.topology import Topology

if TYPE_CHECKING:
    from gym.sim.record import RunRecord, Tally

#: Passes round a loop at most; they stop once no rate moves by 1e-9 of the load.
MAX_PASSES = 500


def captured(topology: Topology, built: Mapping[str, Component]) -> dict[str, np.ndarray]:
    """What the fluid network needs of a run's components beyond the record's counts:
    each source's expected load and dispersion (and a node's that makes URLs: links
    found on pages), each loss station's share turned away."""
    out: dict[str, np.ndarray] = {}
    for node in topology.nodes:
        c = built[node.name]
        if kinds.kind(node.kind).offers:
            out[f"{node.name}/expected"] = c.expected.copy()
            out[f"{node.name}/dispersion"] = c.dispersion.copy()
        elif hasattr(c, "loss_share"):
            out[f"{node.name}/loss_share"] = np.asarray(c.loss_share).copy()
    return out


@dataclass
class Network:
    """Per node: ``rate`` (URLs expected to reach it per tick, after a queue's skips at
    the door), ``scv`` (that stream's SCV); per queue, ``held`` (its fluid backlog at
    each tick's end); per fleet, ``slots`` (live replicas' slots each tick)."""

    rate: dict[str, np.ndarray] = field(default_factory=dict)
    scv: dict[str, np.ndarray] = field(default_factory=dict)
    held: dict[str, np.ndarray] = field(default_factory=dict)
    slots: dict[str, np.ndarray] = field(default_factory=dict)


def network(topology: Topology, record: RunRecord, got: Mapping[str, np.ndarray]) -> Network:
    """The fluid network of ``record``'s run of ``topology`` (see the module docstring)."""
    tl = record.timeline
    n, tick_s = tl.n_ticks, tl.tick_ms / 1000.0
    order = topology.order()
    out_rate = {name: np.zeros(n) for name in order}
    out_scv = {name: np.ones(n) for name in order}
    net = Network()
    looped = any(e.delay_s for e in topology.edges)
    loads = [float(np.max(a, initial=0.0)) for k, a in got.items() if k.endswith("/expected")]
    scale = max([1.0, *loads])
    for _ in range(MAX_PASSES if looped else 1):
        moved = 0.0
        for name in order:
            node = topology.node(name)
            if kinds.kind(node.kind).offers:
                rate, scv = got[f"{name}/expected"], got[f"{name}/dispersion"]
            else:
                rate, scv = _joined(topology, name, out_rate, out_scv, tl.tick_ms, n)
                rate, scv = _through(name, topology, record, got, net, rate, scv, tick_s)
            moved = max(moved, float(np.max(np.abs(rate - out_rate[name]), initial=0.0)))
            out_rate[name], out_scv[name] = rate, scv
        if moved <= 1e-9 * scale:
            break
    return net


def _joined(
    topology: Topology,
    name: str,
    out_rate: Mapping[str, np.ndarray],
    out_scv: Mapping[str, np.ndarray],
    tick_ms: int,
    n: int,
) -> tuple[np.ndarray, np.ndarray]:
    """What the edges into ``name`` bring: each its share of its source's stream (SCV
    p c^2 + 1 - p), after its delay; joined, the rates add and the SCVs mix by rate."""
    rate = np.zeros(n)
    weighted = np.zeros(n)
    for e in topology.inputs(name):
        if e.tee:
            continue
        d = e.delay_ticks(tick_ms)
        r = out_rate[e.source] * e.share
        s = e.share * out_scv[e.source] + (1.0 - e.share)
        if d:
            r = np.concatenate((np.zeros(min(d, n)), r[: max(0, n - d)]))
            s = np.concatenate((np.ones(min(d, n)), s[: max(0, n - d)]))
        rate += r
        weighted += r * s
    with np.errstate(divide="ignore", invalid="ignore"):
        scv = np.where(rate > 0, weighted / rate, 1.0)
    return rate, scv


def _through(
    name: str,
    topology: Topology,
    record: RunRecord,
    got: Mapping[str, np.ndarray],
    net: Network,
    rate: np.ndarray,
    scv: np.ndarray,
    tick_s: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The stream ``name`` sends on, given what reaches it; records what reaches it in
    ``net``. A kind with a fluid rule of its own (a queue, a fleet: ``FLUID`` in its flow
    module) applies it; any other passes on what it did not turn away nor finish."""
    node = topology.node(name)
    own = rule_for(node.kind).fluid
    if own is not None:
        sent, sent_scv = own(node, topology, record, net, rate, scv, tick_s)
        return sent, sent_scv
    net.rate[name], net.scv[name] = rate, scv
    tally = record.components[name]
    keep = np.ones(len(rate))
    if f"{name}/loss_share" in got:  # a loss station: its Erlang share turned away
        keep = keep * (1.0 - got[f"{name}/loss_share"])
        if tally.skipped:  # and what it skips, tick by tick (a lookup's seen URLs)
            skipped = sum(tally.skipped.values(), np.zeros(len(rate)))
            took = np.maximum(tally.processed, 1)
            keep = keep * np.where(tally.processed > 0, np.clip(1.0 - skipped / took, 0, 1), 1.0)
    elif not kinds.kind(node.kind).holds_work:  # a kind of its own: what its counts let through
        arrived = float(tally.arrived.sum())
        keep = keep * (float(tally.processed.sum()) / arrived if arrived > 0 else 1.0)
    finish = _finish_share(node.kind, node.params, tally)
    if topology.outputs(name):
        keep = keep * (1.0 - finish)
    return rate * keep, keep * scv + (1.0 - keep)


def _finish_share(kind: str, params: Any, tally: Tally) -> float:
    """The share of what it takes that a node finishes: what its kind's declaration does
    not pass on (a cache's hits, a service's finish_share, none of a store's); for a kind
    of its own, or one that passes on as counted, its counts' share over the run."""
    declared = kinds.kind(kind)
    if kind in kinds.SHIPPED and not declared.passes_as_counted:
        return 1.0 - float(declared.passes(params))
    served = float(tally.served.sum())
    processed = float(tally.processed.sum())
    return served / processed if processed > 0 else 0.0


def fluid_queue(
    arriving: np.ndarray, limit: np.ndarray, buffer: float
) -> tuple[np.ndarray, np.ndarray]:
    """A fluid queue: its backlog at each tick's end, clip(held + arriving - limit, 0,
    buffer) (Lindley's recursion; a cumulative sum when it never reaches the buffer), and
    what it hands out each tick, min(held + arriving, limit)."""
    a = np.asarray(arriving, dtype=np.float64)
    step = a - limit
    walk = np.cumsum(step)
    held = walk - np.minimum(np.minimum.accumulate(walk), 0.0)
    if len(held) and held.max() > buffer:
        q = 0.0
        for i, s in enumerate(step.tolist()):
            q = min(max(q + s, 0.0), buffer)
            held[i] = q
    before = np.concatenate(([0.0], held[:-1]))
    sent = np.minimum(before + a, limit)
    return held, np.maximum(sent, 0.0)
