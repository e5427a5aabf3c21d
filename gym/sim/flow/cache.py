"""The ``cache`` kind: a hit is served at once, a miss goes on (to the node behind it)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import simpy

from gym.core.streams import stream
from gym.models import ServiceTime
from gym.sim.flow.base import Build, Ledger, PerRow, connect_upstream, thinned
from gym.sim.flow.graph_latency import LossLatency
from gym.sim.flow.loss import LossStation, loss_behind_loss, loss_rounding
from gym.system.topology import Node


class Cache(LossStation):
    """Looks up what finds a free slot (Erlang loss; the rest fail: ``<prefix>_overload``, or
    ``<prefix>_unavailable`` while stalled); hits among the lookups are Binomial(n, hit_ratio)."""

    name = "cache"
    causes = ("overload", "unavailable")

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator | PerRow,
        ledger: Ledger,
        hit_ratio: float,
        lookups_rps: float,
        service: ServiceTime,
        rows: int | None = None,
    ) -> None:
        super().__init__(env, rng, ledger, lookups_rps, service, rows=rows)
        self.hit_ratio = hit_ratio

    def _advance(self, t0: int, t1: int) -> None:
        assert self.upstream is not None
        looked_up = self._take(self.upstream.out[..., t0:t1], t0, t1)
        hits = self.binomial(looked_up, self.hit_ratio)
        self.served[..., t0:t1] = hits
        self.out[..., t0:t1] = looked_up - hits
        self.dispersion[..., t0:t1] = thinned(self.dispersion[..., t0:t1], 1.0 - self.hit_ratio)
        self.expected[..., t0:t1] *= 1.0 - self.hit_ratio


def build(b: Build, node: Node) -> Cache:
    p = node.params
    return Cache(b.env, stream(b.seed, node.name), b.ledger, p.hit_ratio, p.rps, p.service)


def batch(builds: Sequence[Build], node: Node) -> Cache:
    """One cache for the runs of a batch, a row each, each run's own generator."""
    b, p = builds[0], node.params
    rngs = PerRow(stream(x.seed, node.name) for x in builds)
    return Cache(b.env, rngs, b.ledger, p.hit_ratio, p.rps, p.service, rows=len(builds))


connect = connect_upstream


#: Its latency in the flow engine's estimate: a loss station's service time, stretched by
#: a slowdown (:class:`gym.sim.flow.graph_latency.LossLatency`).
LATENCY = LossLatency
CHECKED = loss_behind_loss
ROUNDING = loss_rounding
