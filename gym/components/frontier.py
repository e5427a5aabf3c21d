"""The frontier: the URL queue. It holds up to ``buffer`` URLs and hands out at most
``drain_rps`` per second, never more than the live fetchers can start."""

from __future__ import annotations

import numpy as np
import simpy

from gym.components.base import Component, IntArray, Ledger, RatedComponent
from gym.models import FrontierConfig


class Frontier(RatedComponent):
    """Tail-drop queue: each tick, dispatch min(queue, drain quota, fetcher quota);
    what is left beyond ``buffer`` overflows (cause ``frontier_overflow``)."""

    name = "frontier"
    causes = ("frontier_overflow",)

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator,
        ledger: Ledger,
        config: FrontierConfig,
        upstream: Component,
        fleet: Component,
    ) -> None:
        super().__init__(env, rng, ledger, config.drain_rps)
        self.buffer = config.buffer
        self.upstream = upstream
        self.fleet = fleet
        self.requeued = ledger.zeros()  # URLs put back at the head of the queue this tick

    def requeue(self, tick: int, n: int) -> None:
        """Put ``n`` URLs back at the head of the queue at ``tick`` (a crash's in-flight)."""
        self.requeued[tick] += n

    def _advance(self, t0: int, t1: int) -> None:
        self.fleet.reserve(t1)
        arrived = self.upstream.out[t0:t1]
        self.arrived[t0:t1] = arrived
        limit = np.minimum(self.capacity[t0:t1], self.fleet.capacity[t0:t1])
        queue = int(self.backlog[t0 - 1]) if t0 > 0 else 0
        requeued = self.requeued[t0:t1]
        if queue == 0 and not requeued.any() and bool((arrived <= limit).all()):
            # Nothing waits and nothing arrives beyond what can be handed out: pass through.
            self.processed[t0:t1] = arrived
            self.out[t0:t1] = arrived
            return
        dispatched, overflow, held = _queue(
            queue, self.buffer, (arrived + requeued).tolist(), limit.tolist()
        )
        self.processed[t0:t1] = dispatched
        self.out[t0:t1] = dispatched
        self.failed["frontier_overflow"][t0:t1] = overflow
        self.backlog[t0:t1] = held


def _queue(
    queue: int, buffer: int, arriving: list[int], limit: list[int]
) -> tuple[IntArray, IntArray, IntArray]:
    """The frontier's per-tick rule, tick by tick (a queue has memory, so this is a loop)."""
    n = len(arriving)
    dispatched = [0] * n
    overflow = [0] * n
    held = [0] * n
    for i in range(n):
        queue += arriving[i]
        d = queue if queue < limit[i] else limit[i]
        queue -= d
        dispatched[i] = d
        if queue > buffer:
            overflow[i] = queue - buffer
            queue = buffer
        held[i] = queue
    as_array = np.asarray
    return (
        as_array(dispatched, dtype=np.int64),
        as_array(overflow, dtype=np.int64),
        as_array(held, dtype=np.int64),
    )
