"""The ``store`` kind: it takes at most ``rps`` writes per second, with no queue."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import simpy

from gym.core.streams import stream
from gym.sim.flow.base import Build, Component, Ledger, PerRow, connect_upstream, one_of
from gym.sim.flow.graph_latency import LossLatency
from gym.sim.flow.loss import LossStation, loss_behind_loss, loss_rounding
from gym.system.kinds.store import StoreParams
from gym.system.topology import Node


class Store(LossStation):
    """Writes what finds a free slot (Erlang loss); the rest fail (``<prefix>_overload``, or
    ``<prefix>_unavailable`` while stalled). A write it takes is served. Behind a write buffer
    it takes every write sent: the buffer sends only what it has room for."""

    name = "store"
    causes = ("overload", "unavailable")

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator | PerRow,
        ledger: Ledger,
        config: StoreParams,
        rows: int | None = None,
    ) -> None:
        super().__init__(env, rng, ledger, config.rps, config.service, rows=rows)

    #: Whether what it writes is finished here (served) or passed on along its edge (a
    #: store in the middle of a graph's chain).
    finishes = True

    def _advance(self, t0: int, t1: int) -> None:
        assert self.upstream is not None
        taken = self._take(self.upstream.out[..., t0:t1], t0, t1)
        if self.finishes:
            self.served[..., t0:t1] = taken
        else:
            self.out[..., t0:t1] = taken


def build(b: Build, node: Node) -> Store:
    return Store(b.env, stream(b.seed, node.name), b.ledger, node.params)


def batch(builds: Sequence[Build], node: Node) -> Store:
    """One store for the runs of a batch, a row each, each run's own generator."""
    b = builds[0]
    rngs = PerRow(stream(x.seed, node.name) for x in builds)
    return Store(b.env, rngs, b.ledger, node.params, rows=len(builds))


def connect(component: Store, inputs: Sequence[Component], outputs: Sequence[Component]) -> None:
    """Fed by its upstream; behind a write buffer it takes every write sent (the buffer
    sends only what it has room for); without outputs what it writes is served."""
    from gym.sim.flow.write_buffer import WriteBuffer

    connect_upstream(component, inputs, outputs)
    if inputs and isinstance(one_of(inputs[0]), WriteBuffer):
        component.gated = True
    component.finishes = not outputs


#: Its latency in the flow engine's estimate: a loss station's service time, stretched by
#: a slowdown (:class:`gym.sim.flow.graph_latency.LossLatency`).
LATENCY = LossLatency
CHECKED = loss_behind_loss
ROUNDING = loss_rounding
