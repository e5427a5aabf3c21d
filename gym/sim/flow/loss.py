"""A station with concurrent slots and no waiting room (a cache, a service, a store, a
seen-set shard): Erlang loss per tick, slots and slowdowns as in the request engine."""

from __future__ import annotations

import math

import numpy as np
import simpy

from gym.core.text import Unit
from gym.models import RetryPolicy, ServiceTime
from gym.sim import erlang
from gym.sim.flow.base import (
    Component,
    IntArray,
    Ledger,
    PerRow,
    RatedComponent,
    per_row,
    running_max,
)
from gym.sim.flow.checked import (
    BELOW_CAPACITY,
    DOWNSTREAM_LOSS,
    UPSTREAM_LOSS,
    USE_REQUEST,
    losing_load,
    overloaded,
)
from gym.sim.flow.hold import SURE, StationHold
from gym.sim.flow.loss_rows import StationRows
from gym.sim.flow.retry import Retries
from gym.sim.flow.rules import rule_for
from gym.sim.flow.walk import DrawnWalk, SlotWalk
from gym.sim.grid import paced_most, station_slots
from gym.sim.record import RunRecord, Tally
from gym.sim.rounded import loss_slots, metered
from gym.system.topology import Node, Topology

#: Random services this many ticks long on average, or longer, are walked
#: (:class:`~gym.sim.flow.walk.DrawnWalk`): Erlang's formula on the modified offered load
#: lags a station that fills from empty over a long service (100 slots of 10 s exponential
#: services lost 0.40 of the exact transient in a 10 s run). Shorter ones keep the formula:
#: they settle within a fraction of a second, where it is exact (within 0.2% of M/M/c/c
#: on the loss grid), while a walk counts the services begun and ended within one tick
#: only roughly (4-15% too much loss at 1-3 ticks; within 1.5% from 5 on).
DRAWN_TICKS = 5


class LossStation(StationRows, StationHold, RatedComponent):
    """A station with concurrent slots and no waiting room (cache, resolver, store).

    It has ``slots = round(rate x mean service time)`` (at least one), as in the request
    engine. Each tick a fraction B(slots, a) of the arrivals find every slot busy and fail
    (its first cause, ``cache_overload`` say; all of them fail as its second,
    ``cache_unavailable``, while it is stalled),
    with B Erlang's loss formula and ``a`` the tick's modified offered load
    (:mod:`gym.sim.erlang`): the arrivals of this tick and the ones before it still in service,
    a slowdown stretching the services that start under it. The expected loss is counted in
    whole URLs, the fraction carried to the next tick. ``capacity`` stays rate x tick: the
    figure saturation is measured against.
    """

    #: Whether what reaches it was already admitted by the one sending it (the async writer
    #: sends the store only what it can take): then it takes every arrival up to capacity.
    gated = False

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator | PerRow,
        ledger: Ledger,
        rate: float,
        service: ServiceTime,
        rows: int | None = None,
    ) -> None:
        super().__init__(env, rng, ledger, rate, rows=rows)
        shape = ledger.n_ticks if rows is None else (rows, ledger.n_ticks)
        self.service = service
        self.slots = station_slots(rate, service.mean_ms)
        self.factors = np.ones(ledger.n_ticks)  # the slowdown in force each tick
        self.kappa = erlang.peakedness_factor(service)
        self._spread = service.cv_value * service.mean_ms / 1000.0  # s, std of a service
        self.fixed_time = service.dist == "deterministic"
        self.upstream: Component | None = None  # what sends it work, set by the engine
        self._kernels: dict[float, np.ndarray] = {}
        self._holding: dict[float, np.ndarray] = {}
        self._sure: dict[float, np.ndarray] = {}  # the holding kernels cut to SURE
        self._admitted = np.zeros(shape)  # expected admissions per tick
        self._memory = 0  # ticks the longest kernel reaches back
        # The expected loss not yet a whole URL. With random services it starts at one
        # half, so a run rounds its loss to the nearest URL (a floor loses half a URL a
        # run on average: -19% on a station expected to lose 2.6 URLs in a run). Fixed
        # services keep the floor for now: their ledger (:meth:`_hold`) places losses by
        # where the floor puts them, and its totals move by more than the half URL when
        # it moves (only services shorter than a tick: longer ones walk, :class:`SlotWalk`).
        self._lost_carry = 0.0 if self.fixed_time else 0.5
        self._owed = 0  # URLs the ledger turned away that Erlang's loss already counted
        self.retries: Retries | None = None  # a retry policy's machinery (gym.sim.flow.retry)
        # Fixed services of at least a tick: the busy slots walked tick by tick.
        # Random services of several ticks: theirs drawn one by one (:class:`DrawnWalk`).
        walk: type[SlotWalk] | None = None
        if self.fixed_time and service.mean_ms >= ledger.tick_ms:
            walk = SlotWalk
        elif not self.fixed_time and service.mean_ms >= DRAWN_TICKS * ledger.tick_ms:
            walk = DrawnWalk
        self.walk: SlotWalk | None = None
        if walk is not None and rows is None:
            self.walk = walk(self.slots, service, ledger, self.rng)
        elif walk is not None:  # each run's own, with its own draws
            walks = PerRow(walk(self.slots, service, ledger, g) for g in per_row(self.rng))
            if walk is SlotWalk:  # their ends as rows of one array (book_rows)
                self._walk_ends = np.zeros((len(walks), ledger.n_ticks + 1), dtype=np.int64)
                for k, w in enumerate(walks):
                    w.ends = self._walk_ends[k]
            self.walk = walks  # type: ignore[assignment]  # one run's, through its RowView
        if rows is not None:  # each run's own (its RowView reads and writes them)
            self._lost_carry = PerRow([self._lost_carry] * rows)  # type: ignore[assignment]
            self._owed = PerRow([0] * rows)
        #: The expected share of each tick's arrivals it turns away (Erlang's chance and the
        #: fill-up's cut): what a station like it, fed as it is, loses on average.
        self.loss_expected = np.zeros(shape)
        #: The share of each tick's arrivals it turned away (Erlang's chance where none came).
        self.loss_share = np.zeros(shape)

    def retry(self, policy: RetryPolicy, rng: np.random.Generator) -> int:
        """Retry what fails here under ``policy`` (after the upstream is connected): the
        longest stride, in ticks, the engine may advance it in."""
        self.retries = Retries(self, policy, rng)
        self.holds_work = True  # requests waiting to be tried again
        return self.retries.min_ticks

    def advance(self, t1: int) -> None:
        if self.retries is None or t1 <= self.t:
            super().advance(t1)
            return
        t0 = self.t
        self.retries.feed.advance(t1)
        super().advance(t1)
        self.retries.settle(t0, t1)

    def tally(self) -> Tally:
        tally = super().tally()
        if self.retries is not None:
            tally.extra.update(self.retries.extra())
        return tally

    def _quota(self, n: int) -> IntArray:
        factor = 1.0
        for f in self._slowdowns:
            factor *= f
        self.factors[self._reserved : self._reserved + n] = factor
        if factor not in self._kernels:
            longest = self.ledger.n_ticks + 1
            kernel, holding = erlang.station_kernels(
                self.service, factor, self.ledger.tick_ms, longest
            )
            self._kernels[factor] = kernel
            self._holding[factor] = holding
            # The requests all but sure to hold their slots still (random services).
            self._sure[factor] = np.where(holding >= SURE, holding, 0.0)
            self._memory = max(self._memory, len(kernel), len(holding))
        return super()._quota(n)

    def _never_full(self, pace: np.ndarray, depth: np.ndarray, factors: np.ndarray) -> np.ndarray:
        """Ticks in which a paced stream cannot fill the slots: with fixed service times a
        slot holds the requests begun in the last service time, at most
        :func:`~gym.sim.grid.paced_most` of them at the fastest pace, deepest bucket and
        longest slowdown in the station's memory. (Erlang's formula cannot know that a
        stream has a minimum spacing: 2 slots of 20 ms behind one 100/s fetcher never turn
        a write away.)"""
        n = len(pace)
        if not self.fixed_time or not n:
            return np.zeros(n, dtype=bool)
        top, bottom = float(pace.max()), float(pace.min())
        if math.isfinite(top) and bottom >= 0.0:
            # Every tick paced. The figure below only grows with the pace, the bucket and
            # the slowdown: if the slots hold what the fastest pace, the deepest bucket and
            # the longest slowdown of the whole stretch bring in, they hold each tick's;
            # if they do not hold what the slowest, shallowest and shortest bring, they
            # hold no tick's (a tick's maxima over its reach are at least those). On
            # floats as :func:`~gym.sim.grid.paced_most` works them out.
            per_s = self.service.mean_ms / 1000.0
            deep, shallow = float(depth.max()), float(depth.min())
            long, short = float(factors.max()), float(factors.min())
            if all(map(math.isfinite, (deep, shallow, long, short))):
                most = deep + top * (per_s * long) - 1e-9
                if math.isfinite(most) and self.slots >= math.floor(most):
                    return np.ones(n, dtype=bool)
                least = shallow + bottom * (per_s * short) - 1e-9
                if math.isfinite(least) and self.slots < math.floor(least):
                    return np.zeros(n, dtype=bool)
        elif not np.isfinite(pace).any():
            return np.zeros(n, dtype=bool)
        reach = max(1, min(n, self._memory))
        fastest = running_max(pace, reach)
        deepest = running_max(depth, reach)
        longest = running_max(factors, reach)
        window = self.service.mean_ms / 1000.0 * longest
        with np.errstate(invalid="ignore"):
            most = paced_most(fastest, deepest, window)
        never: np.ndarray = np.isfinite(most) & (self.slots >= most)
        return never

    def _capped(self, upstream: Component, lo: int, t0: int, t1: int) -> np.ndarray:
        """Ticks whose arrivals cannot fill the slots by the bound a fixed-time station
        upstream puts on them: at most ``cap`` in any window of ``cap_s`` seconds, and a
        service here (slowed as it may be) no longer than that window, so at most ``cap``
        of them hold a slot at once. (Erlang's formula sees a stream as random: 10 slots
        of 50 ms behind 10 slots of 50 ms lost 6.5% where nothing can be lost.)"""
        cap = upstream.cap[lo:t1]
        if not self.fixed_time or not np.isfinite(cap).any():
            return np.zeros(t1 - t0, dtype=bool)
        reach = max(1, min(t1 - lo, self._memory))
        most = running_max(cap, reach)
        shortest = -running_max(-upstream.cap_s[lo:t1], reach)
        longest = running_max(self.factors[lo:t1], reach) * (self.service.mean_ms / 1000.0)
        capped: np.ndarray = (most <= self.slots) & (shortest >= longest * (1.0 - 1e-9))
        return capped[t0 - lo :]

    def _bound(self, upstream: Component, lo: int, t0: int, t1: int) -> None:
        """The bound this station's takes keep: a subset of its arrivals, within theirs;
        with fixed service times, at most its slots in any window as short as its
        shortest service over the stretch (each would still hold a slot at its end)."""
        self.cap[..., t0:t1] = upstream.cap[..., t0:t1]
        self.cap_s[..., t0:t1] = upstream.cap_s[..., t0:t1]
        if self.fixed_time and not self.gated:
            window = float(self.factors[lo:t1].min()) * self.service.mean_ms / 1000.0
            own = self.slots < self.cap[..., t0:t1]
            self.cap[..., t0:t1] = np.where(own, self.slots, self.cap[..., t0:t1])
            self.cap_s[..., t0:t1] = np.where(own, window, self.cap_s[..., t0:t1])

    def _within_slots(self, admitted: np.ndarray, t0: int, t1: int, lo: int) -> np.ndarray:
        """The share of each tick's expected admissions ``admitted`` the slots can hold: a
        station never holds more requests at the end of a tick than it has slots (what
        earlier ticks' requests still hold plus this tick's). Erlang's formula on a smoothed
        load does not see a station fill up: 100 slots of 10-minute writes fill in the first
        seconds of 50/s and take nothing more, where B(100, load) lets a third of the next
        20 s through. Reckoned on expected counts: at a steady load Erlang's carried load
        is below the slots, and the cut is for the fill-up alone."""
        history = self._admitted[lo:t1].copy()
        history[t0 - lo :] = admitted
        factors = self.factors[lo:t1]
        held = erlang.offered_load(history, factors, self._holding)
        slots = self.slots * (1.0 + 1e-9)
        share = np.ones(t1 - t0)
        if not (held[t0 - lo :] > slots).any():
            return share
        for i in range(t0 - lo, t1 - lo):
            if held[i] <= slots or history[i] <= 0:
                continue
            kernel = self._holding[float(factors[i])]
            cut = min(history[i], (held[i] - slots) / max(float(kernel[0]), 1e-12))
            share[i - (t0 - lo)] = 1.0 - cut / history[i]
            history[i] -= cut
            reach = min(len(kernel), len(held) - i)
            held[i : i + reach] -= cut * kernel[:reach]
        return share

    def _roomy(self, offered: np.ndarray, factors: np.ndarray) -> bool:
        """Whether the slots exceed any load these arrivals can offer by so much that Erlang
        loss is below about 1e-12 (a smoother stream only loses less): most ticks of a design
        with headroom."""
        if not len(offered):
            return True
        return self._roomy_most(float(offered.max()), factors)

    def _roomy_most(self, top: float, factors: np.ndarray) -> bool:
        """:meth:`_roomy` for arrivals of at most ``top`` a tick."""
        most = top * self.service.mean_ms * float(factors.max())
        most /= self.ledger.tick_ms
        return bool(self.slots > most + erlang.WIDTH * (most**0.5 + 1.0) + 1.0)

    def _take(self, arriving: IntArray, t0: int, t1: int) -> IntArray:
        """Take the arrivals of ticks [t0, t1) but those Erlang loss turns away, and record
        it: one run's (:meth:`_take_run`), or every run's of a batch (:meth:`_take_rows`)."""
        if self.gated:
            # Behind a write buffer: it takes all the buffer sends, a stream as it was.
            assert self.upstream is not None
            self.pass_on_stream(t0, t1, self.upstream)
            sent: IntArray = super()._take(arriving, t0, t1)
            return sent
        if self.rows is None:
            return self._take_run(arriving, t0, t1)
        return self._take_rows(arriving, t0, t1)

    def _take_run(self, arriving: IntArray, t0: int, t1: int) -> IntArray:
        """Take one run's arrivals of ticks [t0, t1) but those Erlang loss turns away, and
        record it."""
        upstream = self.upstream
        assert upstream is not None
        self._pass_on(upstream, arriving, t0, t1)
        lo = max(0, t0 - self._memory)
        factors = self.factors[lo:t1]
        never = self._never_full(upstream.pace[lo:t1], upstream.depth[lo:t1], factors)
        never = never[t0 - lo :] | self._capped(upstream, lo, t0, t1)
        self._bound(upstream, lo, t0, t1)
        if not never.all():
            up = self.rates[lo:t1] > 0
            mean = np.where(up, upstream.expected[lo:t1], 0.0)  # no service starts in a stall
            offered = np.maximum(mean, np.where(up, self.arrived[lo:t1], 0))
            if not self._roomy(offered, factors):
                return self._erlang_run(arriving, never, mean, t0, t1, lo)
        # Every arrival taken, but in a stall's ticks.
        rates = self.rates[t0:t1]
        down = None if rates.all() else rates == 0
        taken = self._take_all(..., arriving, upstream.expected[t0:t1], down, t0, t1)
        if self.walk is not None:
            self.walk.book(taken, self.factors[t0:t1], t0)
        return taken

    def _erlang_run(
        self, arriving: IntArray, never: np.ndarray, mean: np.ndarray, t0: int, t1: int, lo: int
    ) -> IntArray:
        """The Erlang part of :meth:`_take_run`, where the slots may turn arrivals away
        (``mean``: the expected arrivals from tick ``lo``, none in a stall; ``never``: the
        ticks a paced stream cannot fill)."""
        upstream = self.upstream
        assert upstream is not None
        down = self.rates[t0:t1] == 0
        peakedness, loss = self._erlang_loss(..., mean, arriving, never, down, t0, t1, lo)
        admitted = np.where(down, 0.0, upstream.expected[t0:t1] * (1.0 - loss))
        share = self._within_slots(admitted, t0, t1, lo)
        self._admit(..., admitted, share, loss, down, t0, t1)
        if self.walk is not None:
            # A stream smoother than Poisson (periodic, or paced and thinned) does not come
            # in a random order: it takes its own figure (D/D/c, Hayward's).
            smooth = upstream.periodic[t0:t1] | (peakedness < 1.0 - 1e-9)
            lost = self.walk.step(arriving, down, never, smooth, loss, self.factors, t0)
            taken = np.where(down, 0, arriving - lost)
        else:
            taken, lost = self._lose(arriving, loss, down, share < 1.0, t0, t1, lo)
        self._record(..., arriving, taken, lost, loss, down, t0, t1)
        return taken


def loss_behind_loss(node: Node, topology: Topology, record: RunRecord) -> str:
    """A loss station fed by one that turned work away for lack of slots: what the first
    passes on is smoother than Poisson, and the flow engine's share lost at the second is
    too high. Each loss station's ``CHECKED`` (a cache's, a service's, a store's)."""
    if not overloaded(record, node.name, DOWNSTREAM_LOSS):
        return ""
    if losing_load(record, node.name, node.name) >= BELOW_CAPACITY:
        return ""
    for e in topology.inputs(node.name):
        up = topology.node(e.source)
        # A loss station the same rule checks (a cache, a service, a store).
        if rule_for(up.kind).checked is loss_behind_loss and overloaded(
            record, up.name, UPSTREAM_LOSS
        ):
            return (
                f"{node.name}: a loss station behind {up.name}, which turned work away with "
                "every slot busy: the "
                "flow engine takes what reaches it as burstier than it is (checked: 1.11x "
                f"Ciw's loss share behind exponential services, 1.30x behind fixed); {USE_REQUEST}"
            )
    return ""


def loss_rounding(node: Node, graph: Topology, _tick_ms: int, _unit: Unit) -> list[str]:
    """A loss station's round(rate x service time) slots, unless a node before it meters
    what reaches it (a store's write buffer). Each loss station's ``ROUNDING``."""
    return [] if metered(node, graph) else loss_slots(node, "flow")
