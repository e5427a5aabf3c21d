"""Where a graph's flows divide and join: a node with several outgoing edges, or several
incoming ones.

A :class:`Splitter` sends each URL a node passes on along edge i with chance share_i
(sequential binomials, so the counts are multinomial); each edge's stream is a
:class:`Port`, thinned as a cache's misses are. A :class:`Junction` adds several streams
into one. Neither holds, serves or fails URLs, and neither appears in the run record.
Each is one run's, or a batch's (``rows`` runs, where what it reads is a batch's too).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import simpy

from gym.sim.flow.base import NO_DRAWS, Component, Ledger, PerRow, binomial, thinned


class Port(Component):
    """One outgoing edge's share of a node's output (filled by its :class:`Splitter`)."""

    name = "port"

    def _advance(self, t0: int, t1: int) -> None:
        """Nothing: the splitter fills every port of a node at once."""


class Splitter(Component):
    """Divides ``source``'s output among its edges, with chances ``shares`` (adding to 1):
    ``rngs`` a stream of draws per edge (each run's, in a batch)."""

    name = "split"

    def __init__(
        self,
        env: simpy.Environment,
        rngs: Sequence[np.random.Generator | PerRow],
        ledger: Ledger,
        source: Component,
        shares: Sequence[float],
        rows: int | None = None,
    ) -> None:
        super().__init__(env, rngs[0], ledger, rows=rows)
        self.source = source
        self.shares = list(shares)
        # One stream of draws per edge, so a run cut into other strides draws the same.
        self.rngs = list(rngs)
        self.ports = [Port(env, rng, ledger, rows=rows) for rng in rngs]

    def _advance(self, t0: int, t1: int) -> None:
        src = self.source
        rest = src.out[..., t0:t1]
        left = 1.0
        last = len(self.ports) - 1
        for i, (port, share) in enumerate(zip(self.ports, self.shares, strict=True)):
            if i == last:
                taken = rest
            else:
                chance = min(1.0, share / left) if left > 0 else 0.0
                taken = binomial(self.rngs[i], rest, chance)
                rest = rest - taken
                left -= share
            port.arrived[..., t0:t1] = taken
            port.processed[..., t0:t1] = taken
            port.out[..., t0:t1] = taken
            # Each edge's stream is the source's thinned: the same shape, share as many.
            port.expected[..., t0:t1] = src.expected[..., t0:t1] * share
            port.dispersion[..., t0:t1] = thinned(src.dispersion[..., t0:t1], share)
            port.jitter[..., t0:t1] = src.jitter[..., t0:t1]
            # A subset of a paced stream stays within its pace, and of a bounded one within
            # its bound.
            port.pace[..., t0:t1] = src.pace[..., t0:t1]
            port.depth[..., t0:t1] = src.depth[..., t0:t1]
            port.periodic[..., t0:t1] = src.periodic[..., t0:t1] & (share == 1.0)
            port.cap[..., t0:t1] = src.cap[..., t0:t1]
            port.cap_s[..., t0:t1] = src.cap_s[..., t0:t1]
            port.t = t1


class Junction(Component):
    """Adds several streams into one node's input."""

    name = "join"

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator,
        ledger: Ledger,
        inputs: Sequence[Component],
        rows: int | None = None,
    ) -> None:
        super().__init__(env, rng, ledger, rows=rows)
        self.inputs = list(inputs)

    def _advance(self, t0: int, t1: int) -> None:
        outs = [c.out[..., t0:t1] for c in self.inputs]
        total = np.sum(outs, axis=0)
        self.arrived[..., t0:t1] = total
        self.processed[..., t0:t1] = total
        self.out[..., t0:t1] = total
        means = [c.expected[..., t0:t1] for c in self.inputs]
        expected = np.sum(means, axis=0)
        self.expected[..., t0:t1] = expected
        # Independent streams: their variances add, so the dispersion (variance over mean)
        # is the mean-weighted one; the spread of random times likewise.
        pairs = list(zip(self.inputs, means, strict=True))
        weighted = np.sum([c.dispersion[..., t0:t1] * m for c, m in pairs], axis=0)
        spread = np.sum([c.jitter[..., t0:t1] * m for c, m in pairs], axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.dispersion[..., t0:t1] = np.where(expected > 0, weighted / expected, 1.0)
            self.jitter[..., t0:t1] = np.where(expected > 0, spread / expected, 0.0)
        # Two paced streams together stay within the sum of their paces and buckets.
        self.pace[..., t0:t1] = np.sum([c.pace[..., t0:t1] for c in self.inputs], axis=0)
        self.depth[..., t0:t1] = np.sum([c.depth[..., t0:t1] for c in self.inputs], axis=0)
        self.periodic[..., t0:t1] = False
        # In a window no longer than the shortest of theirs, no more than the sum.
        self.cap[..., t0:t1] = np.sum([c.cap[..., t0:t1] for c in self.inputs], axis=0)
        self.cap_s[..., t0:t1] = np.min([c.cap_s[..., t0:t1] for c in self.inputs], axis=0)


class Delay(Component):
    """An edge with a delay of ``ticks``: what its feeder sent on ``ticks`` ticks ago
    arrives now, with the stream as it was sent (a retry's backoff, a link going back to
    the queue). The engine advances a graph with delays in strides of at most the
    shortest one, so the ticks it reads are always computed."""

    name = "delay"

    def __init__(
        self,
        env: simpy.Environment,
        ledger: Ledger,
        feeder: Component,
        ticks: int,
        rows: int | None = None,
    ) -> None:
        super().__init__(env, NO_DRAWS, ledger, rows=rows)
        assert ticks >= 1
        self.feeder = feeder
        self.ticks = ticks

    def _advance(self, t0: int, t1: int) -> None:
        src, d = self.feeder, self.ticks
        lo = max(t0, d)  # ticks before the delay's first have nothing arriving
        if lo >= t1:
            return
        assert src.t >= t1 - d, "advanced beyond what the delayed edge's feeder has sent"
        a, b = lo - d, t1 - d
        self.arrived[..., lo:t1] = src.out[..., a:b]
        self.processed[..., lo:t1] = src.out[..., a:b]
        self.out[..., lo:t1] = src.out[..., a:b]
        self.pass_on_stream(lo, t1, src, lag=d)

    def in_transit(self) -> int:
        """URLs on the way at the end of the run: those sent in its last ``ticks`` ticks."""
        n = self.ledger.n_ticks
        return int(self.feeder.out[max(0, n - self.ticks) : n].sum())
