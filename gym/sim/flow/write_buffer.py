"""The ``write_buffer`` kind: a write-behind buffer in front of a store.

Per tick, with c the store's capacity and q the writes held:
1. new writes go straight to the store while it has room: direct = min(arriving, c);
2. the rest are held, up to ``buffer``; beyond it they fail (``<prefix>_overflow``);
3. held writes are flushed into the room left below ``flush_ceiling`` x c:
   flush = min(q, max(0, floor(flush_ceiling x c) - direct)).
So the buffer never sends the store more than it can take, and a flush after a stall
never lifts the store above the ceiling. Counts only: the rule does not keep writes in
arrival order (new writes may overtake held ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import simpy

from gym.core.streams import stream
from gym.core.text import Unit
from gym.sim.flow.base import (
    Build,
    Component,
    IntArray,
    Ledger,
    PerRow,
    Stacked,
    connect_upstream,
)
from gym.sim.flow.checked import NEAR_CAPACITY, USE_REQUEST, loads, seconds
from gym.sim.flow.graph_latency import Estimate, Fifo, Model, Rows, share, spread
from gym.sim.record import RunRecord, Tally
from gym.sim.rounded import flow_flushes, where
from gym.system.kinds.write_buffer import WriteBufferParams
from gym.system.topology import Node, Topology


class WriteBuffer(Component):
    """Holds the writes its store cannot take and flushes them into its spare room: one
    run's, or a batch's (``rows`` runs, each run's rule applied to its own row)."""

    name = "write_buffer"
    causes = ("overflow",)
    holds_work = True

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator | PerRow,
        ledger: Ledger,
        config: WriteBufferParams,
        rows: int | None = None,
    ) -> None:
        super().__init__(env, rng, ledger, rows=rows)
        self.buffer = config.buffer
        self.flush_ceiling = config.flush_ceiling
        self.upstream: Component | None = None  # what feeds it, set by the engine
        # The store it writes to (set by the engine): it sends what the store has room for.
        # (A batch's reads each run's store where each run has its own: a Stacked.)
        self.store: Component | Stacked | None = None
        self.held_in = ledger.zeros(rows=rows)  # writes held (or overflowed) this tick
        self.flushed = ledger.zeros(rows=rows)  # held writes flushed to the store this tick

    def _quota(self, n: int) -> IntArray:
        return np.full(n, self.buffer, dtype=np.int64)

    def tally(self) -> Tally:
        return Tally.of(self, limit=self.buffer, held_in=self.held_in, flushed=self.flushed)

    def _advance(self, t0: int, t1: int) -> None:
        assert self.upstream is not None and self.store is not None
        room = self._room(t1)[..., t0:t1]
        arriving = self.upstream.out[..., t0:t1]
        # What it sends is its input's stream as it was, while it holds nothing; while it
        # holds or flushes writes, the counts it sends are what it decided (expected = sent,
        # and flushes are bursts no bucket paces).
        self.pass_on_stream(t0, t1, self.upstream)
        self.arrived[..., t0:t1] = arriving
        self.out[..., t0:t1] = arriving
        self.processed[..., t0:t1] = arriving
        busy = self._holding(arriving, room, t0)
        if not busy:
            return
        # At least one write a tick where the store takes any (else a store taking one or
        # two a tick would never take a held write back).
        ceiling = np.floor(self.flush_ceiling * room + 1e-9).astype(np.int64)
        ceiling = np.where(room > 0, np.maximum(ceiling, 1), ceiling)
        for k, held in busy:
            at = k if room.ndim > arriving[k].ndim else ...  # (each run's store: its row)
            rooms, ceilings = room[at].tolist(), ceiling[at].tolist()
            self._behind(k, held, arriving[k].tolist(), rooms, ceilings, t0, t1)

    def _room(self, t1: int) -> IntArray:
        """Its store's capacity per tick, fixed up to ``t1``: one row (a store's capacity
        is the timeline's, alike in every run of a batch), or a row per run where each run
        has a store of its own (a kind with no batched form)."""
        store = self.store
        assert store is not None
        if isinstance(store, Stacked):
            for part in store.parts:
                part.reserve(t1)
            return np.stack([part.capacity for part in store.parts])
        store.reserve(t1)
        room: IntArray = store.capacity
        return room

    def _holding(self, arriving: IntArray, room: IntArray, t0: int) -> list[tuple[Any, int]]:
        """The runs that hold writes or get more than their store takes in ticks [t0, ...):
        ``...`` for one run's buffer, each batch's row, with what each held before."""
        held = self.backlog[..., t0 - 1] if t0 > 0 else np.zeros(self.rows or (), np.int64)
        if self.rows is None:
            return [(..., int(held))] if held or (arriving > room).any() else []
        busy = (held > 0) | (arriving > room).any(axis=1)
        return [(k, int(held[k])) for k in np.flatnonzero(busy).tolist()]

    def _behind(
        self,
        k: Any,
        held: int,
        arriving: list[int],
        room: list[int],
        ceiling: list[int],
        t0: int,
        t1: int,
    ) -> None:
        """Run ``k``'s ticks [t0, t1) under the buffer's rule, from ``held`` writes."""
        direct, excess, overflow, flushed, backlog = _write_behind(
            held, self.buffer, arriving, room, ceiling
        )
        at = (k, slice(t0, t1))
        self.out[at] = direct + flushed
        busy = (excess > 0) | (flushed > 0)
        self.expected[at] = np.where(busy, direct + flushed, self.expected[at])
        self.pace[at] = np.where(flushed > 0, np.inf, self.pace[at])
        self.periodic[at] &= ~busy
        self.processed[at] = direct + excess - overflow
        self.held_in[at] = excess
        self.flushed[at] = flushed
        self.failed[self.causes[0]][at] = overflow
        self.backlog[at] = backlog


def _write_behind(
    held: int, buffer: int, arriving: list[int], room: list[int], ceiling: list[int]
) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray]:
    """The buffer's per-tick rule (see the module docstring), tick by tick."""
    n = len(arriving)
    direct = [0] * n
    excess = [0] * n
    overflow = [0] * n
    flushed = [0] * n
    backlog = [0] * n
    for i in range(n):
        a = arriving[i]
        d = a if a < room[i] else room[i]
        x = a - d
        spare = ceiling[i] - d
        f = held if held < spare else max(spare, 0)
        held -= f
        accept = x if held + x <= buffer else buffer - held
        held += accept
        direct[i], excess[i], overflow[i], flushed[i], backlog[i] = d, x, x - accept, f, held
    arrays = (np.asarray(v, dtype=np.int64) for v in (direct, excess, overflow, flushed, backlog))
    return tuple(arrays)  # type: ignore[return-value]


def build(b: Build, node: Node) -> WriteBuffer:
    return WriteBuffer(b.env, stream(b.seed, node.name), b.ledger, node.params)


def batch(builds: Sequence[Build], node: Node) -> WriteBuffer:
    """One buffer for the runs of a batch, a row each (it draws nothing)."""
    b = builds[0]
    rngs = PerRow(stream(x.seed, node.name) for x in builds)
    return WriteBuffer(b.env, rngs, b.ledger, node.params, rows=len(builds))


def connect(
    component: WriteBuffer, inputs: Sequence[Component], outputs: Sequence[Component]
) -> None:
    """Fed by its upstream; flushes into the store it feeds."""
    connect_upstream(component, inputs, outputs)
    component.store = outputs[0]


class BufferLatency(Model):
    """A write buffer: 0 for a write its store took at once; a held one waits what its
    counts say, first in, first out."""

    def __init__(self, est: Estimate, name: str) -> None:
        super().__init__(est, name)
        t, n = self.tally, est.n
        failed = sum((v for v in t.failed.values()), np.zeros(n, dtype=np.int64))
        self.kept = share(t.arrived - failed, t.arrived, 1.0)
        self.finishes = np.zeros(n)
        flushed = t.extra["flushed"]
        self.direct = t.out - flushed
        self.direct_share = share(self.direct, t.processed, 1.0)
        self.held = Fifo(flushed + np.diff(t.backlog, prepend=0), flushed)

    def draw(self, k: np.ndarray, u: np.ndarray) -> np.ndarray:
        d = self.direct_share[k]
        out = np.zeros(len(k))
        held = u >= d
        if held.any():
            v = (u[held] - d[held]) / np.maximum(1.0 - d[held], 1e-300)
            out[held] = self.held.draw(k[held], v) * self.est.tick_ms
        return out

    def rows(self, start: int) -> Rows:
        t_in, waits, w = self.held.rows()
        keep = t_in >= start
        direct = spread(start, self.direct, np.zeros(1), np.ones(1))
        return (
            np.concatenate([direct[0], t_in[keep]]),
            np.concatenate([direct[1], waits[keep] * self.est.tick_ms]),
            np.concatenate([direct[2], w[keep]]),
        )


#: Its latency in the flow engine's estimate (:mod:`gym.sim.flow.graph_latency`).
LATENCY = BufferLatency


def checked(node: Node, topology: Topology, record: RunRecord) -> str:
    """A write buffer that held writes in a second its store was loaded near capacity: the
    flow engine flushes it once a tick, so what it holds and loses moves with the tick."""
    stores = [e.target for e in topology.outputs(node.name)]
    if len(stores) != 1:
        return ""
    load, _ = loads(record, node.name, stores[0])
    held = seconds(record, record.components[node.name].backlog, np.maximum) > 0
    low, high = NEAR_CAPACITY
    if not ((load >= low) & (load < high) & held).any():
        return ""
    return (
        f"{node.name}: a write buffer held writes near its store's capacity: the flow engine "
        "flushes it once a tick, so what it holds and loses moves with the tick (checked at "
        "load 0.95: it lost 0% at 1 ms, 4.7% at 5, 4.1% at 10, 1.9% at 50, where the "
        f"request engine lost 5.1% at every tick); {USE_REQUEST}"
    )


CHECKED = checked


def rounding(node: Node, graph: Topology, tick_ms: int, _unit: Unit) -> list[str]:
    """What the flow engine's whole writes a tick do to a buffer's flushes."""
    store = graph.node(graph.outputs(node.name)[0].target)
    field = where(store, "rps")
    return flow_flushes(where(node), field, node.params.flush_ceiling, store.params.rps, tick_ms)


ROUNDING = rounding
