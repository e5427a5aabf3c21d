"""The ``service`` kind: an external, concurrency-limited service without a queue."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import simpy

from gym.core.streams import stream
from gym.models import ServiceTime
from gym.sim.flow.base import Build, Ledger, PerRow, connect_upstream, thinned
from gym.sim.flow.graph_latency import LossLatency
from gym.sim.flow.loss import LossStation, loss_behind_loss, loss_rounding
from gym.sim.record import Tally
from gym.system.topology import Node


class Service(LossStation):
    """Serves what finds a free slot (Erlang loss); the rest fail (``<prefix>_overload``, or
    ``<prefix>_unavailable`` while stalled). A slowdown by f stretches services f times,
    dividing capacity by f."""

    name = "service"
    causes = ("overload", "unavailable")

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator | PerRow,
        ledger: Ledger,
        rate: float,
        service: ServiceTime,
        finish_share: float = 0.0,
        rows: int | None = None,
    ) -> None:
        super().__init__(env, rng, ledger, rate, service, rows=rows)
        self.finish_share = finish_share  # what it answers and finishes: no write after it
        self.writes_saved = ledger.zeros(rows=rows)

    def tally(self) -> Tally:
        tally = Tally.of(self, rate=self.rates, writes_saved=self.writes_saved)
        tally.extra.update(self.retry_counts)
        return tally

    def _advance(self, t0: int, t1: int) -> None:
        assert self.upstream is not None
        resolved = self._take(self.upstream.out[..., t0:t1], t0, t1)
        if self.finish_share > 0:
            # A share of what it answers is finished here: served, its write saved.
            same = self.binomial(resolved, self.finish_share)
            self.served[..., t0:t1] = same
            self.writes_saved[..., t0:t1] = same
            resolved = resolved - same
            kept = 1.0 - self.finish_share
            self.dispersion[..., t0:t1] = thinned(self.dispersion[..., t0:t1], kept)
            self.expected[..., t0:t1] *= kept
        self.out[..., t0:t1] = resolved


def build(b: Build, node: Node) -> Service:
    p = node.params
    return Service(
        b.env,
        stream(b.seed, node.name),
        b.ledger,
        p.rps,
        p.service,
        finish_share=p.finish_share,
    )


connect = connect_upstream


def batch(builds: Sequence[Build], node: Node) -> Service:
    """One service for the runs of a batch, a row each, each run's own generator."""
    b, p = builds[0], node.params
    return Service(
        b.env,
        PerRow(stream(x.seed, node.name) for x in builds),
        b.ledger,
        p.rps,
        p.service,
        finish_share=p.finish_share,
        rows=len(builds),
    )


#: Its latency in the flow engine's estimate: a loss station's service time, stretched by
#: a slowdown (:class:`gym.sim.flow.graph_latency.LossLatency`).
LATENCY = LossLatency
CHECKED = loss_behind_loss
ROUNDING = loss_rounding
