"""The ``queue`` kind: its skips at the door, then a waiting room handing out at its
rate; in front of a fleet, the fleet's waiting room (the fleet's jobs run here)."""

from __future__ import annotations

from collections.abc import Sequence

from gym.core.streams import stream
from gym.sim.record import Tally
from gym.sim.request.base import Rule, Run, Url
from gym.sim.request.fleet import FleetRule
from gym.sim.request.stations import WaitingRoom
from gym.system.topology import Node


class QueueRule(Rule):
    """A queue: the skips at its door (its node's stream), then its waiting room."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...]) -> None:
        skips = ("seen_url", "bloom_false_positive", "url_variant")
        super().__init__(run, node, causes, extra=("requeued_in",), skips=skips)
        self.rng = stream(run.seed, node.name)
        self.fleet: FleetRule | None = None
        self.room: WaitingRoom
        self.overflow = next(c for c in self.log.failed if c.endswith("overflow"))

    def connect(self, inputs: Sequence[Rule], outputs: Sequence[Rule]) -> None:
        fleets = [s for s in outputs if isinstance(s, FleetRule)]
        self.fleet = fleet = fleets[0] if fleets else None
        p, run = self.params, self.run
        self.room = WaitingRoom(
            run.kernel,
            self._served,
            tick_ms=run.tick_ms,
            front=self.log,
            fleet=fleet.log if fleet else None,
            overflow=self.overflow,
            buffer=p.buffer,
            drain=p.drain_rps,
            fleet_params=fleet.params if fleet else None,
            service_rng=stream(run.seed, fleet.name) if fleet else None,
            crash_cause=fleet.crash_cause if fleet else "",
        )
        if fleet is not None:
            fleet.room = self.room

    def visit(self, url: Url) -> None:
        p, log = self.params, self.log
        now = self.run.kernel.now
        k = int(now * self.run.per_s + 1e-9)
        log.arrived[k] += 1
        if p.seen_fraction and self.rng.random() < p.seen_fraction:
            log.skipped["seen_url"][k] += 1
            return
        if p.variant_fraction and self.rng.random() < p.variant_fraction:
            log.skipped["url_variant"][k] += 1
            return
        if p.false_positive_rate and self.rng.random() < p.false_positive_rate:
            log.skipped["bloom_false_positive"][k] += 1
            return
        url.t_mark = now
        self.room.enter(url)

    def _served(self, url: Url) -> None:
        """Handed out (its service done, in front of a fleet): on its way."""
        run = self.run
        if url.measured:
            run.sample(self.name, url, url.t_start - url.t_mark)
            if self.fleet is not None:
                run.sample(self.fleet.name, url, run.kernel.now - url.t_start)
        self.passed(url)

    def change(self, tick: int, stall: int = 0, factor: float = 1.0) -> None:
        self.room.change(tick, stall, factor)

    def tally(self) -> Tally:
        run, rates = self.run, self.room.queue_rates
        return self.log.tally(run.capacity(rates), limit=self.params.buffer, rate=run.rates(rates))


RULE = QueueRule
