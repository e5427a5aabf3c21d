"""The ``lookup`` kind: a set of the URLs seen so far, sharded by URL hash.

:class:`Lookup` looks every URL up (each shard a loss station with
its slots) and skips those already seen; the new ones go on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import simpy

from gym.core.streams import stream
from gym.core.text import Unit
from gym.models import ServiceTime
from gym.sim import waiting
from gym.sim.flow.base import (
    NO_DRAWS,
    Build,
    Component,
    IntArray,
    Ledger,
    PerRow,
    RatedComponent,
    Stacked,
    each_run,
    one_of,
    per_row,
    thinned,
)
from gym.sim.flow.graph_latency import LossLatency, Rows, spread
from gym.sim.flow.loss import LossStation, whole_losses
from gym.sim.record import Tally
from gym.sim.rounded import loss_slots
from gym.system.topology import Node, Topology

#: What one run's lookup holds per tick, in bytes, at most (its shards keep their own
#: tallies: 308 B on average measured on a crawler design with a lookup), for the batch
#: sizer (:attr:`gym.sim.flow.rules.FlowRule.tick_bytes`).
TICK_BYTES = 1024


class Lookup(LossStation):
    """Looks up what finds a free slot of its shard (each shard a loss station of its own,
    Erlang loss; the rest fail: ``<prefix>_overload``, or ``<prefix>_unavailable`` while
    stalled; the hot key's shard takes more than the others); among the lookups, Binomial
    shares are
    skipped as already seen (``seen_url``: one share for links found on pages, another for
    the rest), as variants of a known URL (``url_variant``) and as new URLs taken for seen
    by mistake (``bloom_false_positive``), in that order. Where lookups are lost, the links
    among them are a hypergeometric draw (the lost are any of the arrivals alike), and the
    share of those that point to pages already seen are skipped as seen, not failed: losing
    them loses nothing. One run's, or a batch's (``rows`` runs, each with its own
    generator: the draws each makes alone)."""

    name = "lookup"
    causes = ("overload", "unavailable")

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator | PerRow,
        ledger: Ledger,
        rate: float,
        service: ServiceTime,
        skips: dict[str, float],
        link_skips: dict[str, float],
        shards: int = 1,
        hot_key_share: float = 0.0,
        rows: int | None = None,
    ) -> None:
        super().__init__(env, rng, ledger, rate, service, rows=rows)
        self.tests = (skips, link_skips)
        self.skipped = {cause: ledger.zeros(rows=rows) for cause in skips}
        # The inputs that carry links, and those that carry none (the seeds), set on
        # connect: components (or each run's, read as one: a Stacked).
        self.links_in: list[Any] = []
        self.seeds_in: list[Any] = []
        # Shards split the lookups by URL hash: the busiest (the hot key's) takes a share
        # ``busiest`` of them, each other one (1 - hot) / shards. ``rate`` is what the set
        # holds before its busiest shard is full; a shard answers rate x busiest.
        self.shards = shards
        self.busiest = hot_key_share + (1.0 - hot_key_share) / shards
        self.other = (1.0 - hot_key_share) / shards
        if shards > 1:
            per_shard = rate * self.busiest
            self.hot = _Shard(env, rng, ledger, per_shard, service, rows=rows)
            self.typical = _Shard(env, rng, ledger, per_shard, service, rows=rows)
            self.hot.upstream = _Part(env, ledger, rows)
            self.typical.upstream = _Part(env, ledger, rows)
            self._lost_carry_rest: float = 0.0 if rows is None else PerRow([0.0] * rows)  # type: ignore[assignment]

    def connect(self, upstream: Component) -> None:
        """Fed by ``upstream``: a junction of the seeds and the links, or one of them."""
        self.upstream = upstream
        feeders = _feeders(upstream)
        self.links_in = [f for f in feeders if _carries_links(one_of(f))]
        self.seeds_in = [f for f in feeders if f not in self.links_in]

    def _advance(self, t0: int, t1: int) -> None:
        assert self.upstream is not None
        arriving = self.upstream.out[..., t0:t1]
        taken: IntArray = self._look_up(arriving, t0, t1)
        links = sum((f.out[..., t0:t1] for f in self.links_in), np.zeros_like(arriving))
        lost = arriving - taken
        for k, rng in each_run(self.rng):
            if lost[k].any():
                links[k] = self._seen_among_lost(rng, k, lost[k], links[k], arriving[k], t0, t1)
        kept = np.zeros_like(arriving)
        for part, tests in zip((taken - links, links), self.tests, strict=True):
            for cause, share in tests.items():
                if share:
                    skipped = self.binomial(part, share)
                    self.skipped[cause][..., t0:t1] += skipped
                    part = part - skipped
            kept += part
        self.out[..., t0:t1] = kept
        self._pass_on_new(arriving, taken, t0, t1)

    def _seen_among_lost(
        self,
        rng: np.random.Generator,
        k: Any,
        lost: IntArray,
        links: IntArray,
        arriving: IntArray,
        t0: int,
        t1: int,
    ) -> IntArray:
        """Run ``k``'s lost lookups (drawn from its ``rng``): the links among them a
        hypergeometric draw, and those of a URL already seen skipped as seen, not failed
        (the set would have said so; only the new ones fail). The links that were not
        lost."""
        lost_links = rng.hypergeometric(links, arriving - links, lost)
        seen = np.zeros_like(lost)
        for part, tests in zip((lost - lost_links, lost_links), self.tests, strict=True):
            seen = seen + rng.binomial(part, tests.get("seen_url", 0.0))
        self.skipped["seen_url"][k, t0:t1] += seen
        overload, unavailable = self.causes
        down = self.rates[t0:t1] == 0
        busy = np.where(down, 0, seen)
        self.failed[overload][k, t0:t1] -= busy
        self.failed[unavailable][k, t0:t1] -= seen - busy
        left: IntArray = links - lost_links
        return left

    def _pass_on_new(self, arriving: IntArray, taken: IntArray, t0: int, t1: int) -> None:
        """The stream sent on: the seeds and the links each thinned by their own share
        (links come in bursts, a page's at once, and far fewer of them are new: thinning
        the mixture by its average share would overstate how bursty the new URLs are)."""
        mean = np.zeros(arriving.shape)
        variance = np.zeros(arriving.shape)
        with np.errstate(invalid="ignore", divide="ignore"):
            admitted = np.where(arriving > 0, taken / np.maximum(arriving, 1), 1.0)
        for feeders, tests in zip((self.seeds_in, self.links_in), self.tests, strict=True):
            share = float(np.prod([1.0 - s for s in tests.values()]))
            for f in feeders:
                m = f.expected[..., t0:t1] * admitted * share
                mean += m
                variance += m * thinned(f.dispersion[..., t0:t1], share)
        self.expected[..., t0:t1] = mean
        with np.errstate(invalid="ignore", divide="ignore"):
            self.dispersion[..., t0:t1] = np.where(mean > 0, variance / mean, 1.0)

    def faulted(self) -> list[RatedComponent]:
        """A fault on the set acts on every shard."""
        return [self, self.hot, self.typical] if self.shards > 1 else [self]

    def _look_up(self, arriving: IntArray, t0: int, t1: int) -> IntArray:
        """The lookups the shards answer of ``arriving``, recorded as the set's. One shard:
        the set is that station. More: the busiest shard is simulated with its share of
        the stream, and every other shard loses what one of them, fed its share, loses
        (the same chance, applied to all of theirs): independent stations, not one pool."""
        if self.shards == 1:
            return self._take(arriving, t0, t1)
        assert self.upstream is not None
        up = self.upstream
        to_hot = self.binomial(arriving, self.busiest)
        self.hot.upstream.fill(up, to_hot, self.busiest, t0, t1)  # type: ignore[union-attr]
        self.hot.advance(t1)
        lost_hot = sum(self.hot.failed[c][..., t0:t1] for c in self.hot.causes[:2])
        rest = arriving - to_hot
        one = self.binomial(rest, 1.0 / (self.shards - 1))
        self.typical.upstream.fill(up, one, self.other, t0, t1)  # type: ignore[union-attr]
        self.typical.advance(t1)
        lost_rest = np.minimum(rest, self._whole(rest * self.typical.loss_expected[..., t0:t1]))
        lost = lost_hot + lost_rest
        taken: IntArray = arriving - lost
        self.arrived[..., t0:t1] = arriving
        self.processed[..., t0:t1] = taken
        down = self.rates[t0:t1] == 0
        overload, unavailable = self.causes
        self.failed[overload][..., t0:t1] = np.where(down, 0, lost)
        self.failed[unavailable][..., t0:t1] = np.where(down, lost, 0)
        self.dispersion[..., t0:t1] = up.dispersion[..., t0:t1]
        self.jitter[..., t0:t1] = up.jitter[..., t0:t1]
        return taken

    def _whole(self, expected: np.ndarray) -> IntArray:
        """The other shards' expected losses in whole URLs, each run's fraction carried."""
        if self.rows is None:
            lost, self._lost_carry_rest = whole_losses(self._lost_carry_rest, expected)
            return lost
        carries, rows = per_row(self._lost_carry_rest), []
        for k, row in enumerate(expected):
            lost, carries[k] = whole_losses(carries[k], row)
            rows.append(lost)
        return np.stack(rows)

    def tally(self) -> Tally:
        return Tally.of(self, skipped=self.skipped)


def _feeders(upstream: Component | Stacked) -> list[Any]:
    """What feeds a lookup through ``upstream``: a junction's inputs, or ``upstream``
    itself (each run's, as a batch reads them, where each run has its own junction)."""
    if isinstance(upstream, Stacked):
        columns = zip(*(_feeders(p) for p in upstream.parts), strict=True)
        return [Stacked(list(c)) for c in columns]
    return list(getattr(upstream, "inputs", [upstream]))


def _carries_links(feeder: object) -> bool:
    """Whether ``feeder`` sends links found on pages (a node that makes URLs, or a delay
    after one)."""
    made = getattr(feeder, "creates", False)
    return made or getattr(getattr(feeder, "feeder", None), "creates", False)


class _Shard(LossStation):
    """One shard of a lookup: a loss station of its own."""

    name = "lookup_shard"
    causes = ("overload", "unavailable")

    def _advance(self, t0: int, t1: int) -> None:
        assert self.upstream is not None
        self.out[..., t0:t1] = self._take(self.upstream.out[..., t0:t1], t0, t1)


class _Part(Component):
    """A share of a stream, as one shard sees it: the counts drawn for it, the expected
    counts and the dispersion thinned by its share."""

    name = "lookup_part"

    def __init__(self, env: simpy.Environment, ledger: Ledger, rows: int | None = None) -> None:
        super().__init__(env, NO_DRAWS, ledger, rows=rows)

    def fill(self, up: Component, counts: IntArray, share: float, t0: int, t1: int) -> None:
        self.out[..., t0:t1] = counts
        self.expected[..., t0:t1] = up.expected[..., t0:t1] * share
        self.dispersion[..., t0:t1] = thinned(up.dispersion[..., t0:t1], share)
        self.jitter[..., t0:t1] = up.jitter[..., t0:t1]
        self.t = t1


def build(b: Build, node: Node) -> Lookup:
    return _made(b, node, stream(b.seed, node.name))


def batch(builds: Sequence[Build], node: Node) -> Lookup:
    """One lookup for the runs of a batch, a row each, each run's own generator."""
    rngs = PerRow(stream(x.seed, node.name) for x in builds)
    return _made(builds[0], node, rngs, len(builds))


def _made(
    b: Build, node: Node, rng: np.random.Generator | PerRow, rows: int | None = None
) -> Lookup:
    p = node.params
    return Lookup(
        b.env,
        rng,
        b.ledger,
        p.rps,
        p.service,
        p.skips(),
        p.skips(links=True),
        shards=p.shards,
        hot_key_share=p.hot_key_share,
        rows=rows,
    )


def connect(component: Lookup, inputs: Sequence[Component], outputs: Sequence[Component]) -> None:
    component.connect(inputs[0])


class LookupLatency(LossLatency):
    """A lookup's service time (a slot found at once, or lost), as a cache's, over the URLs
    it passed on: as in the request engine, a URL it skipped as seen leaves no sample."""

    def rows(self, start: int) -> Rows:
        t = self.tally
        skipped = sum(t.skipped.values(), np.zeros(len(t.processed), dtype=np.int64))
        passed = t.processed - skipped
        return spread(start, passed, *waiting.service_grid(self.service), self.factor)


#: Its latency in the flow engine's estimate (:mod:`gym.sim.flow.graph_latency`).
LATENCY = LookupLatency


def rounding(node: Node, _graph: Topology, _tick_ms: int, _unit: Unit) -> list[str]:
    """Each shard's round(rate x service time) slots, the busiest taking its share (the
    hot key's, and an even part of the rest)."""
    return loss_slots(node, "flow", shards=node.params.shards, share=node.params.busiest())


ROUNDING = rounding
