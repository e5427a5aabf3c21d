"""The ``write_buffer`` kind: in front of a store. A write its store has a slot for goes
straight in; otherwise it is held (up to ``buffer``; beyond, it fails) and flushed, each
tick, into the store slots left below ``flush_ceiling``."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from gym.sim.grid import flush_slots
from gym.sim.record import Tally
from gym.sim.request.base import Rule, Run, Url
from gym.sim.request.loss import LossRule
from gym.sim.request.stations import LossStation
from gym.system.topology import Node

# The flusher: flushing on the tick grid, waiting for a held write, or woken by one.
_BUSY, _WAITING, _WOKEN = 0, 1, 2


class WriteBufferRule(Rule):
    """A write buffer and its flusher (a SimPy process of its own would wait for a held
    write, then flush once a tick while any is held)."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...]) -> None:
        super().__init__(run, node, causes, extra=("held_in", "flushed"))
        self.held: deque[Url] = deque()
        self.flusher = _BUSY
        self.store: LossStation
        self.ceiling = 0
        self.overflow = next(iter(self.log.failed))

    def connect(self, inputs: Sequence[Rule], outputs: Sequence[Rule]) -> None:
        store = outputs[0]
        assert isinstance(store, LossRule)
        store.gated = True  # it takes what this buffer sends: the buffer meters it
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

    def _flush(self, _: object = None) -> None:
        """Send held writes into the store slots left below the ceiling, then again at
        the next tick; with none held, wait until a write is."""
        if not self.held:
            self.flusher = _WAITING
            return
        run, log, store = self.run, self.log, self.store
        kernel = run.kernel
        k = int(kernel.now * run.per_s + 1e-9)
        if not store.stalls:
            now = kernel.now
            room = self.ceiling - store.busy(now)
            while room > 0 and self.held:
                log.out[k] += 1
                log.extra["flushed"][k] += 1
                url = self.held.popleft()
                url.end = store.occupy(now)
                kernel.schedule(0.0, self._flushed, url)
                room -= 1
        run.at_tick(k + 1, self._flush)  # on the tick grid, as the flow engine flushes

    def _flushed(self, url: Url) -> None:
        """The flusher took a store slot for this write: on to the store."""
        self.run.sample(self.name, url, self.run.kernel.now - url.t_mark)
        self.passed(url)

    def tally(self) -> Tally:
        buffer = self.params.buffer
        return self.log.tally(np.full(self.run.n, buffer, dtype=np.int64), limit=buffer)


RULE = WriteBufferRule
