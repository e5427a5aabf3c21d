"""The flow engine's latency, per node and end to end, of every design (each a graph),
from the run's per-tick counts, its fluid network
(:mod:`gym.sim.flow.fluid`: each queue's arrival rate and SCV, its fluid backlog) and each
node's service-time distribution (docs/model.md, *Latency in the flow engine*).

Per node, by kind: each kind's model is its flow module's ``LATENCY`` (its
:class:`~gym.sim.flow.rules.FlowRule`'s ``latency``; a kind without one adds no time and
has no row); the loss stations' shared one, :class:`LossLatency`, is here:

- **queue**: where its *fluid* backlog (the expected arrivals against the rate it hands
  out at: its drain, never more than its fleet starts) is above 0, the URLs wait what its
  counts say, first in, first out (:func:`gym.sim.latency.fifo_segments`); elsewhere the
  stationary wait of its fleet's slots or its token buckets at the tick's load
  (:mod:`gym.sim.waiting`), no longer than the load has had time to build since it last
  changed.
- **fleet**: its service time; **cache, service, store**: their service time, stretched by
  a slowdown in force; **write buffer**: 0 for a write straight to its store, else how long
  its counts held the write (first in, first out).

End to end, walkers (:data:`WALKERS`, each standing for the same share of the URLs
offered) walk the graph as URLs do: each node adds a draw of its latency at the tick the
walker reaches it; the share its counts lost there (failed, skipped) is taken off the
walker's weight; it finishes there with the share the node finished in that tick, or
takes an edge by the shares, and waits out the edge's delay. Round a loop it visits a node
again with a new draw each time (each visit independent of the others).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from gym.core.streams import stream
from gym.models import ServiceTime
from gym.sim import waiting
from gym.sim.flow import fluid
from gym.sim.flow.rules import rule_for
from gym.sim.latency import Samples, fifo_segments
from gym.system import kinds
from gym.system.topology import Topology

if TYPE_CHECKING:
    from gym.sim.record import RunRecord, Tally

#: Walkers of the end-to-end estimate (fewer when fewer URLs were offered).
WALKERS = 1 << 18

Rows = tuple[np.ndarray, np.ndarray, np.ndarray]  # ticks, ms, weights


def share(num: np.ndarray, den: np.ndarray, default: float) -> np.ndarray:
    """num / den each tick; where den is 0, the last tick's share before it (``default``
    before any)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    has = den > 0
    idx = np.maximum.accumulate(np.where(has, np.arange(len(den)), -1))
    out = np.full(len(den), default)
    ok = idx >= 0
    out[ok] = num[idx[ok]] / den[idx[ok]]
    clipped: np.ndarray = np.clip(out, 0.0, 1.0)
    return clipped


class Fifo:
    """A first-in, first-out queue matched from its per-tick counts: the wait, in ticks,
    at quantile u of the URLs that entered in tick k."""

    def __init__(self, entered: np.ndarray, left: np.ndarray) -> None:
        self.entered = np.asarray(entered, dtype=np.float64)
        self.t_in, self.t_out, w = fifo_segments(entered, left)
        self.w = w.astype(np.float64)
        self.before = np.concatenate(([0.0], np.cumsum(self.w)))  # weight before each run
        first = np.diff(self.t_in, prepend=-1) > 0
        self.ticks = self.t_in[first]  # the ticks some URL that left entered in

    def rows(self) -> Rows:
        return self.t_in, (self.t_out - self.t_in).astype(np.float64), self.w

    def draw(self, k: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Ticks waited at quantile u by a URL entering in tick k (one that entered in a
        tick none did waits as the next to enter); NaN: still queued at the end."""
        out = np.full(len(k), np.nan)
        j = np.searchsorted(self.ticks, k, side="left")
        has = j < len(self.ticks)
        if not has.any():
            return out
        kk = self.ticks[j[has]]
        lo = np.searchsorted(self.t_in, kk, side="left")
        hi = np.searchsorted(self.t_in, kk, side="right")
        pos = self.before[lo] + u[has] * self.entered[kk]
        ok = pos < self.before[hi]
        idx = np.clip(np.searchsorted(self.before, pos, side="right") - 1, lo, hi - 1)
        waits = (self.t_out[idx] - self.t_in[idx]).astype(np.float64)
        out[np.flatnonzero(has)[ok]] = waits[ok]
        return out


class Model:
    """A node's latency in the flow engine: no time, its counts' losses and finishes."""

    def __init__(self, est: Estimate, name: str) -> None:
        self.name = name
        self.node = est.topology.node(name)
        self.tally: Tally = est.record.components[name]
        t = self.tally
        # What went on (or finished here): what arrived, less what it failed or skipped
        # (a lookup's skips are lookups it did, but no URL of theirs goes further).
        gone = sum((v for v in (*t.failed.values(), *t.skipped.values())), np.zeros(est.n))
        passed = t.arrived - gone
        self.kept = share(passed, t.arrived, 1.0)
        self.finishes = share(t.served, passed, 0.0)
        self.est = est
        #: Whether a share of what it takes goes back to its queue (``back``, by tick, to
        #: ``queue``) to wait again, mid-job: a fleet's crashed work, ``on_crash: requeue``.
        self.requeue = False
        self.back = np.zeros(0)
        self.queue = ""

    def draw(self, k: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Latency (ms) of a URL reaching it in tick k, at quantile u (NaN: still inside at
        the end)."""
        return np.zeros(len(k))

    def rows(self, start: int) -> Rows | None:
        """Its latency row from tick ``start`` on: ticks, ms and URLs (None: no row)."""
        return None


class LossLatency(Model):
    """A cache, a service or a store: its service time, stretched by a slowdown."""

    def __init__(self, est: Estimate, name: str) -> None:
        super().__init__(est, name)
        self.service: ServiceTime = self.node.params.service
        rate = self.tally.rate if self.tally.rate is not None else np.zeros(est.n)
        base = float(self.node.params.rps)
        self.factor = np.where(rate > 0, base / np.maximum(rate, 1e-300), 1.0)

    def draw(self, k: np.ndarray, u: np.ndarray) -> np.ndarray:
        stretched: np.ndarray = waiting.service_ms(self.service, u) * self.factor[k]
        return stretched

    def rows(self, start: int) -> Rows:
        return spread(start, self.tally.processed, *waiting.service_grid(self.service), self.factor)


def since_change(resets: np.ndarray, backed: np.ndarray, n: int) -> np.ndarray:
    """Ticks since the load last changed, counting the tick itself: since the last
    scenario event (a load stage, a fault's start or end) or the last backed-up tick."""
    marks = np.zeros(n, dtype=bool)
    marks[resets[resets < n]] = True
    marks |= backed
    last = np.maximum.accumulate(np.where(marks, np.arange(n), 0))
    return (np.arange(n) - last + 1).astype(np.float64)


#: Points a latency row spreads its URLs over at most: a long run's ticks are taken in
#: blocks (each block's URLs at its first tick, its factors averaged over its URLs).
ROW_POINTS = 1 << 22


def spread(
    start: int,
    counts: np.ndarray,
    values: np.ndarray,
    weights: np.ndarray,
    scale: np.ndarray | None = None,
) -> Rows:
    """Each tick's ``counts`` from ``start`` on spread over weighted points (``values``
    in ms, ``weights`` adding up to 1), the values times the tick's ``scale``."""
    counts = np.asarray(counts, dtype=np.float64)[start:]
    factor = np.ones(len(counts)) if scale is None else np.asarray(scale, dtype=np.float64)[start:]
    ticks = np.flatnonzero(counts > 0)
    block = max(1, math.ceil(len(ticks) * len(values) / ROW_POINTS))
    c, f = counts[ticks], factor[ticks]
    if block > 1:  # blocks of ticks: their URLs added, the factor by URL
        edges = np.arange(0, len(ticks), block)
        total = np.add.reduceat(c, edges)
        f = np.add.reduceat(c * f, edges) / total
        c, ticks = total, ticks[edges]
    return (
        np.repeat(ticks + start, len(values)),
        np.outer(f, values).ravel(),
        np.outer(c, weights).ravel(),
    )


class Estimate:
    """What one run's latency is worked out from: its record, its topology, its fluid
    network, the ticks its load changes at and each node's model."""

    def __init__(
        self,
        record: RunRecord,
        topology: Topology,
        got: Mapping[str, np.ndarray],
    ) -> None:
        self.record, self.topology = record, topology
        self.net = fluid.network(topology, record, got)
        tl = record.timeline
        self.n, self.tick_ms = tl.n_ticks, tl.tick_ms
        ticks = {tl.to_tick(e.start_s) for e in tl.events} | {
            tl.to_tick(e.end_s) for e in tl.events
        }
        self.resets = np.array(sorted(ticks), dtype=np.int64)
        self.models: dict[str, Model] = {}
        for name in topology.order():
            node = topology.node(name)
            if kinds.kind(node.kind).offers:
                continue  # no URL waits there: the walkers start at the source
            model = rule_for(node.kind).latency or Model
            self.models[name] = model(self, name)


def estimate(
    record: RunRecord,
    topology: Topology,
    got: Mapping[str, np.ndarray],
    *,
    seed: int,
    warmup_s: float = 0.0,
) -> dict[str, Samples]:
    """Per node and ``end_to_end``: latency samples of a graph design's flow run. Node rows
    are filed by the tick a URL reached the node, end to end by the tick it arrived;
    ``warmup_s`` leaves out the ticks before it."""
    est = Estimate(record, topology, got)
    start = min(record.timeline.to_tick(warmup_s), est.n)
    out: dict[str, Samples] = {}
    for name, model in est.models.items():
        rows = model.rows(start)
        if rows is not None and (rows[2] > 0).any():
            out[name] = Samples.of(*rows)
    e2e = _walk(est, record, stream(seed, "latency"))
    if e2e is not None:
        out["end_to_end"] = _served_since(e2e, record.served_total, start)
    return out


def _served_since(e2e: Samples, served: int, start: int) -> Samples:
    """The walk's end-to-end samples weighted to the URLs the run served (the walkers'
    weights add up to them only within the walk's noise), then those that arrived in
    tick ``start`` or later: with no warm-up, their count is the run's served URLs."""
    assert e2e.weights is not None
    total = float(e2e.weights.sum())
    weights = e2e.weights * (served / total) if total > 0 else e2e.weights
    keep = e2e.ticks >= start
    return Samples.of(e2e.ticks[keep], e2e.values_ms[keep], weights[keep])


def _walk(est: Estimate, record: RunRecord, rng: np.random.Generator) -> Samples | None:
    """End to end: walkers placed over the run's ticks in proportion to the URLs offered
    (each standing for the same number of them), walked through the graph."""
    topo, n, tick = est.topology, est.n, float(est.tick_ms)
    end_ms = n * tick
    offered = np.cumsum(record.offered.astype(np.float64))
    total = float(offered[-1]) if len(offered) else 0.0
    if total <= 0:
        return None
    count = int(min(WALKERS, math.ceil(total)))
    x = (np.arange(count) + rng.random(count)) * (total / count)
    born = np.minimum(np.searchsorted(offered, x, side="left"), len(offered) - 1)
    t0 = (born + rng.random(count)) * tick
    weight = np.full(count, total / count)
    names = list(est.models)
    index = {name: i for i, name in enumerate(names)}
    routes = [_edges(topo, name, index, est.tick_ms) for name in names]
    (source,) = (nd.name for nd in topo.nodes if kinds.kind(nd.kind).source)
    at = np.full(count, -1, dtype=np.int64)  # the node each walker is at (-1: done)
    now = t0.copy()
    _take_edge(_edges(topo, source, index, est.tick_ms), np.arange(count), at, now, rng)
    ticks: list[np.ndarray] = []
    values: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    # Each round of a loop waits out a delay of a tick at least: n rounds reach the end.
    for _ in range(n + len(names) + 1):
        at[now >= end_ms] = -1  # still on its way at the end: in flight
        alive = np.flatnonzero(at >= 0)
        if not len(alive):
            break
        for i, model in enumerate(est.models.values()):  # in the graph's order
            here = alive[at[alive] == i]
            here = here[now[here] < end_ms]  # reached it by a delayed edge after the end
            k = (now[here] // tick).astype(np.int64)
            weight[here] *= model.kept[k]
            ms = model.draw(k, rng.random(len(here)))
            now[here] += np.nan_to_num(ms, nan=end_ms)
            ok = (now[here] < end_ms) & (weight[here] > 0)
            at[here[~ok]] = -1
            here, k, ms = here[ok], k[ok], ms[ok]
            if model.requeue:
                again = rng.random(len(here)) < model.back[k]
                at[here[again]] = index[model.queue]  # back in its queue, mid-job
                now[here[again]] -= ms[again] / 2.0
                here, k = here[~again], k[~again]
            if len(routes[i][0]):
                done = rng.random(len(here)) < model.finishes[k]
            else:  # no edge out: finished here
                done = np.ones(len(here), dtype=bool)
            fin = here[done]
            at[fin] = -1
            ticks.append((t0[fin] // tick).astype(np.int64))
            values.append(now[fin] - t0[fin])
            weights.append(weight[fin])
            _take_edge(routes[i], here[~done], at, now, rng)
    if not ticks:
        return None
    return Samples.of(np.concatenate(ticks), np.concatenate(values), np.concatenate(weights))


Route = tuple[np.ndarray, np.ndarray, np.ndarray]  # cumulative shares, targets, delays (ms)


def _edges(topo: Topology, name: str, index: Mapping[str, int], tick_ms: int) -> Route:
    """The edges a URL may take out of ``name`` (not a tee: a copy of the pages sent to
    the links found on them, whose URLs are walkers of their own from the source)."""
    edges = [e for e in topo.outputs(name) if not e.tee]
    return (
        np.cumsum([e.share for e in edges]),
        np.array([index[e.target] for e in edges], dtype=np.int64),
        np.array([e.delay_ticks(tick_ms) * float(tick_ms) for e in edges]),
    )


def _take_edge(
    route: Route, going: np.ndarray, at: np.ndarray, now: np.ndarray, rng: np.random.Generator
) -> None:
    """Send walkers ``going`` along one edge each, by the shares, after its delay."""
    cum, targets, delays = route
    if not len(going):
        return
    u = rng.random(len(going)) * cum[-1]
    pick = np.minimum(np.searchsorted(cum, u, side="right"), len(cum) - 1)
    at[going] = targets[pick]
    now[going] += delays[pick]
