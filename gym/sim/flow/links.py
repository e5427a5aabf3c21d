"""The ``links`` kind: links found on pages. :class:`Links` reads a copy of the pages its
feeder passes on (a tee edge) and yields Poisson(links per page) links per page, new URLs
that the run adds to its offered load."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import simpy

from gym.core.streams import stream
from gym.sim.flow.base import Build, Component, Ledger, PerRow, poisson
from gym.sim.timeline import links_schedule
from gym.system.topology import Node


class Links(Component):
    """Links per page: each page its feeder passed on yields Poisson(links_per_page[t])
    links (a sum of Poisson counts is Poisson: Poisson(L x pages) per tick)."""

    name = "links"

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator | PerRow,
        ledger: Ledger,
        links_per_page: np.ndarray,
        spread_ticks: int = 1,
        rows: int | None = None,
    ) -> None:
        super().__init__(env, rng, ledger, rows=rows)
        self.links_per_page = links_per_page  # per tick
        #: Ticks a page's links are spread over on their way (twice their mean delay).
        self.spread_ticks = max(1, spread_ticks)
        self.upstream: Component | None = None  # the pages' feeder (a copy of its output)
        self.pace[:] = np.inf

    def _advance(self, t0: int, t1: int) -> None:
        assert self.upstream is not None
        up = self.upstream
        pages = up.out[..., t0:t1]
        per = self.links_per_page[t0:t1]
        self.arrived[..., t0:t1] = pages
        self.processed[..., t0:t1] = pages
        self.out[..., t0:t1] = poisson(self.rng, per * pages)
        self.expected[..., t0:t1] = per * up.expected[..., t0:t1]
        # A compound count (Poisson links over a stream of pages of dispersion I): variance
        # L n + L^2 I n over a mean of L n, so I' = 1 + L I, a page's links all in one
        # tick; spread evenly over s ticks, a page brings L / s of them to each: 1 + L I / s.
        self.dispersion[..., t0:t1] = 1.0 + per * up.dispersion[..., t0:t1] / self.spread_ticks
        self.jitter[..., t0:t1] = up.jitter[..., t0:t1]


def build(b: Build, node: Node) -> Links:
    return _made(b, node, stream(b.seed, node.name))


def batch(builds: Sequence[Build], node: Node) -> Links:
    """One links node for the runs of a batch, a row each, each run's own generator."""
    return _made(builds[0], node, PerRow(stream(x.seed, node.name) for x in builds), len(builds))


def _made(
    b: Build, node: Node, rng: np.random.Generator | PerRow, rows: int | None = None
) -> Links:
    per = links_schedule(node.params.links_per_page, b.scenario, b.timeline)
    # Its links reach their target spread over (0, 2 x its edge's delay], the delay their
    # mean: the delay as written, where the request engine spreads them over twice the
    # delay on the tick grid (0.04 s, not 0.05, on 20 ms ticks).
    delay_s = max((e.delay_s for e in b.graph.outputs(node.name)), default=0.0)
    spread = round(2 * delay_s * 1000.0 / b.timeline.tick_ms)
    return Links(b.env, rng, b.ledger, per, spread, rows=rows)


def connect(component: Links, inputs: Sequence[Component], outputs: Sequence[Component]) -> None:
    component.upstream = inputs[0]
