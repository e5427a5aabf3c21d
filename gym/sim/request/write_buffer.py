"""The ``write_buffer`` kind: in front of a store. A write its store has a slot for goes
straight in; otherwise it is held (up to ``buffer``; beyond, it fails) and flushed into
the store slots left below ``flush_ceiling``, as soon as one is: the flusher fills them,
then waits for the next store write to end (or a stall to end), not for the next tick, so
held writes drain at up to the ceiling's slots over the write time whatever the tick."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from gym.core.text import Unit
from gym.sim.grid import flush_slots
from gym.sim.record import Tally
from gym.sim.request.base import Rule, Run, Url
from gym.sim.request.loss import LossRule
from gym.sim.request.stations import LossSlots
from gym.sim.rounded import request_flushes, where
from gym.system.topology import Node, Topology

# The flusher: waiting for a store slot to free (or just woken), waiting for a held
# write, woken by one, or waiting for its store's stall to end.
_BUSY, _WAITING, _WOKEN, _STALLED = 0, 1, 2, 3


class WriteBufferRule(Rule):
    """A write buffer and its flusher (a SimPy process of its own would wait for a held
    write, then, while any is held, fill the store's slots below the ceiling and wait
    for the next write in the store to end, or for the store's stall to end)."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...]) -> None:
        super().__init__(run, node, causes, extra=("held_in", "flushed"))
        self.held: deque[Url] = deque()
        self.flusher = _BUSY
        self.store: LossSlots
        self.ceiling = 0
        self.overflow = next(iter(self.log.failed))

    def connect(self, inputs: Sequence[Rule], outputs: Sequence[Rule]) -> None:
        store = outputs[0]
        assert isinstance(store, LossRule)
        store.gated = True  # it takes what this buffer sends: the buffer meters it
        store.resumed = self._resumed  # a stall's end wakes the flusher
        self.store = store.station
        self.ceiling = flush_slots(self.params.flush_ceiling, self.store.slots)

    def visit(self, url: Url) -> None:
        run, log = self.run, self.log
        now = run.kernel.now
        k = int(now * run.per_s + 1e-9)
        log.arrived[k] += 1
        log.processed[k] += 1
        if self.store.admit(now) is None:
            log.out[k] += 1
            url.end = self.store.occupy(now)
            run.sample(self.name, url, 0.0)
            self.passed(url)
            return
        log.extra["held_in"][k] += 1  # had to be held (or overflowed): the buffer's demand
        if len(self.held) >= self.params.buffer:
            log.processed[k] -= 1
            log.failed[self.overflow][k] += 1
            return
        url.t_mark = now
        self.held.append(url)
        if self.flusher == _WAITING:
            self.flusher = _WOKEN
            run.kernel.schedule(0.0, self._woken)

    def start(self) -> None:
        self._flush()

    def _woken(self, _: object) -> None:
        self.flusher = _BUSY
        self._flush()

    def _resumed(self) -> None:
        """The store's stall (or one of them) ended: flush, if the flusher waited for it."""
        if self.flusher == _STALLED and not self.store.stalls:
            self.flusher = _WOKEN
            self.run.kernel.schedule(0.0, self._woken)

    def _flush(self, _: object = None) -> None:
        """Send held writes into the store slots left below the ceiling, then again when
        the next write in the store ends (a slot frees); with none held, wait until a
        write is; while the store stalls, until the stall ends."""
        if not self.held:
            self.flusher = _WAITING
            return
        run, log, store = self.run, self.log, self.store
        if store.stalls:
            self.flusher = _STALLED
            return
        kernel = run.kernel
        k = int(kernel.now * run.per_s + 1e-9)
        if not store.flush(self.held, self.ceiling, kernel, log, k, self._flushed, self._flush):
            self.flusher = _WAITING

    def _flushed(self, url: Url) -> None:
        """The flusher took a store slot for this write: on to the store."""
        self.run.sample(self.name, url, self.run.kernel.now - url.t_mark)
        self.passed(url)

    def tally(self) -> Tally:
        buffer = self.params.buffer
        return self.log.tally(np.full(self.run.n, buffer, dtype=np.int64), limit=buffer)


RULE = WriteBufferRule


def rounding(node: Node, graph: Topology, _tick_ms: int, _unit: Unit) -> list[str]:
    """What filling whole store slots does to a buffer's flushes."""
    store = graph.node(graph.outputs(node.name)[0].target)
    p, mean_ms = node.params, store.params.service.mean_ms
    return request_flushes(
        where(node), where(store, "rps"), p.flush_ceiling, store.params.rps, mean_ms
    )


ROUNDING = rounding
