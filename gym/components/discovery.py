"""The link-discovery loop: links found on fetched pages, and the seen-URL set.

:class:`Links` reads a copy of the pages its feeder passes on (a tee edge) and yields
Poisson(links per page) links per page: new URLs of the crawl, which the run adds to
its offered load. :class:`SeenSet` looks every URL up (Erlang loss on its slots, as any
loss station) and skips those already seen; the new ones go on to the frontier.
"""

from __future__ import annotations

import numpy as np
import simpy

from gym.components.base import Component, IntArray, Ledger, LossStation, thinned
from gym.models import ServiceTime
from gym.record import Tally


class Links(Component):
    """Links per page: each page its feeder passed on yields Poisson(links_per_page[t])
    links (a sum of Poisson counts is Poisson: Poisson(L x pages) per tick)."""

    name = "links"

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator,
        ledger: Ledger,
        links_per_page: np.ndarray,
    ) -> None:
        super().__init__(env, rng, ledger)
        self.links_per_page = links_per_page  # per tick
        self.upstream: Component | None = None  # the pages' feeder (a copy of its output)
        self.pace[:] = np.inf

    def _advance(self, t0: int, t1: int) -> None:
        assert self.upstream is not None
        up = self.upstream
        pages = up.out[t0:t1]
        per = self.links_per_page[t0:t1]
        self.arrived[t0:t1] = pages
        self.processed[t0:t1] = pages
        self.out[t0:t1] = self.rng.poisson(per * pages)
        self.expected[t0:t1] = per * up.expected[t0:t1]
        # A compound count (Poisson links over a stream of pages of dispersion I): variance
        # L n + L^2 I n over a mean of L n, so I' = 1 + L I.
        self.dispersion[t0:t1] = 1.0 + per * up.dispersion[t0:t1]
        self.jitter[t0:t1] = up.jitter[t0:t1]


class SeenSet(LossStation):
    """Looks up what finds a free slot (Erlang loss; the rest fail: ``seen_set_overload``,
    or ``seen_set_unavailable`` while stalled); among the lookups, Binomial shares are
    skipped as already seen (``seen_url``: one share for links found on pages, another for
    the rest), as variants of a known URL (``url_variant``) and as Bloom-filter false
    positives (``bloom_false_positive``), in that order. Where lookups are lost, the links
    among them are a hypergeometric draw (the lost are any of the arrivals alike), and the
    share of those that point to pages already seen are skipped as seen, not failed: losing
    them loses nothing."""

    name = "seen_set"
    causes = ("seen_set_overload", "seen_set_unavailable")

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator,
        ledger: Ledger,
        rate: float,
        service: ServiceTime,
        skips: dict[str, float],
        link_skips: dict[str, float],
    ) -> None:
        super().__init__(env, rng, ledger, rate, service)
        self.tests = (skips, link_skips)
        self.skipped = {cause: ledger.zeros() for cause in skips}
        self.links_in: list[Component] = []  # the inputs that carry links (set on connect)

    def connect(self, upstream: Component) -> None:
        """Fed by ``upstream``: a junction of the seeds and the links, or one of them."""
        self.upstream = upstream
        feeders = getattr(upstream, "inputs", [upstream])
        self.links_in = [f for f in feeders if _carries_links(f)]

    def _advance(self, t0: int, t1: int) -> None:
        assert self.upstream is not None
        arriving = self.upstream.out[t0:t1]
        taken: IntArray = self._take(arriving, t0, t1)
        links = sum((f.out[t0:t1] for f in self.links_in), np.zeros(t1 - t0, dtype=np.int64))
        lost = arriving - taken
        if lost.any():
            lost_links = self.rng.hypergeometric(links, arriving - links, lost)
            links = links - lost_links
            # A link to a page already seen whose lookup was lost loses nothing: skipped as
            # seen (the set would have said so); only the new ones among them fail.
            seen = self.rng.binomial(lost_links, self.tests[1].get("seen_url", 0.0))
            self.skipped["seen_url"][t0:t1] += seen
            overload, unavailable = self.causes
            down = self.rates[t0:t1] == 0
            busy = np.where(down, 0, seen)
            self.failed[overload][t0:t1] -= busy
            self.failed[unavailable][t0:t1] -= seen - busy
        kept = np.zeros(t1 - t0, dtype=np.int64)
        for part, tests in zip((taken - links, links), self.tests, strict=True):
            for cause, share in tests.items():
                if share:
                    skipped = self.rng.binomial(part, share)
                    self.skipped[cause][t0:t1] += skipped
                    part = part - skipped
            kept += part
        self.out[t0:t1] = kept
        # The stream sent on: the seeds and the links each thinned by their own share
        # (links come in bursts, a page's at once, and far fewer of them are new: thinning
        # the mixture by its average share would overstate how bursty the new URLs are).
        mean = np.zeros(t1 - t0)
        variance = np.zeros(t1 - t0)
        with np.errstate(invalid="ignore", divide="ignore"):
            admitted = np.where(arriving > 0, taken / np.maximum(arriving, 1), 1.0)
        for feeders, tests in zip((self._seeds_in(), self.links_in), self.tests, strict=True):
            share = float(np.prod([1.0 - s for s in tests.values()]))
            for f in feeders:
                m = f.expected[t0:t1] * admitted * share
                mean += m
                variance += m * thinned(f.dispersion[t0:t1], share)
        self.expected[t0:t1] = mean
        with np.errstate(invalid="ignore", divide="ignore"):
            self.dispersion[t0:t1] = np.where(mean > 0, variance / mean, 1.0)

    def _seeds_in(self) -> list[Component]:
        """The inputs that carry no links (the seeds from outside)."""
        assert self.upstream is not None
        feeders = getattr(self.upstream, "inputs", [self.upstream])
        return [f for f in feeders if f not in self.links_in]

    def tally(self) -> Tally:
        return Tally.of(self, skipped=self.skipped)


def _carries_links(feeder: Component) -> bool:
    """Whether ``feeder`` sends links found on pages (a links node, or a delay after one)."""
    return isinstance(feeder, Links) or isinstance(getattr(feeder, "feeder", None), Links)
