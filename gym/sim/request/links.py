"""The ``links`` kind: links found on pages. Each page a tee edge copies here yields
Poisson(links per page) new URLs (:meth:`LinksRule.page`), sent along its one edge to a
lookup, each at its own instant; it fails and holds nothing."""

from __future__ import annotations

import numpy as np

from gym.core.streams import stream
from gym.sim.record import Tally
from gym.sim.request.base import Rule, Run, Url
from gym.sim.request.lookup import LookupRule
from gym.system.topology import Node


class LinksRule(Rule):
    """Links found on the pages its tee edge copies to it."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...]) -> None:
        super().__init__(run, node, causes)
        from gym.sim.timeline import links_schedule

        self.per_page = links_schedule(node.params.links_per_page, run.scenario, run.timeline)
        self.rng = stream(run.seed, node.name)
        self.draws: list[int] = []
        self.drawn_for = -1.0
        self.target: LookupRule  # its edge's target, and its delay (tee_to)
        self.delay = 0.0
        self.rng_waits = stream(run.seed, f"{node.name}/waits")
        self.waits: list[float] = []

    def spread(self, count: int) -> list[float]:
        """The waits of a page's ``count`` links: uniform over (0, 2 x the delay]."""
        if len(self.waits) < count:
            self.waits.extend(self.rng_waits.random(max(8192, count)).tolist())
        most = 2.0 * self.delay
        return [most * (1.0 - self.waits.pop()) for _ in range(count)]

    def page(self, now: float) -> int:
        """A page passed on at ``now``: the number of links it yields (counted here)."""
        run, log = self.run, self.log
        k = run.k(now)
        per = float(self.per_page[min(k, run.n - 1)])
        if per != self.drawn_for:
            self.draws, self.drawn_for = [], per
        if not self.draws:
            self.draws = self.rng.poisson(per, 8192).tolist()
        count = int(self.draws.pop())
        log.arrived[k] += 1
        log.processed[k] += 1
        log.out[k] += count
        return count

    def tee_to(self, target: Rule, delay_s: float) -> None:
        """Its links go to ``target``, a lookup, ``delay_s`` after their page on average."""
        if not isinstance(target, LookupRule):
            raise TypeError(f"{self.name}'s links go to a lookup, not to {target.name}")
        self.target, self.delay = target, delay_s

    def tee(self, _url: Url) -> None:
        """A page passed the tee: its links go to the lookup, spread evenly over twice
        the edge's delay (each at its own instant, the delay their mean: a parser emits
        them one by one, not at once)."""
        kernel = self.run.kernel
        count = self.page(kernel.now)
        if not count:
            return
        target = self.target
        if not self.delay:
            target.batch(count)
            return
        target.transit += count
        for wait in self.spread(count):
            kernel.schedule(wait, self._arrive)

    def _arrive(self, _: object) -> None:
        self.target.transit -= 1
        self.target.batch(1)

    def visit(self, url: Url) -> None:
        raise AssertionError("links are made by pages (LinksRule.tee), not visited")

    def tally(self) -> Tally:
        run = self.run
        tally = self.log.tally(np.zeros(run.n, dtype=np.int64))
        tally.backlog = np.zeros(run.n, dtype=np.int64)  # it makes URLs; it holds none
        return tally


RULE = LinksRule
