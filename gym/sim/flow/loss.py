"""A station with concurrent slots and no waiting room (a cache, a service, a store, a
lookup's shard): Erlang loss per tick, slots and slowdowns as in the request engine.

One implementation for one run and for a batch of runs (``rows``): each step takes
``pick``, the runs it works on (``...`` for one run's station, whose per-tick arrays are
1-D; the rows of some runs of a batch, whose arrays have a row per run), so a single run
is the batch's code on a batch of one. What is each run's own (its convolutions, its walk
of busy slots where draws decide, its ledger, the fill-up cut) runs run by run, on the
run's :class:`~gym.sim.flow.base.RowView` in a batch.
"""

from __future__ import annotations

import math
from types import EllipsisType

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
    steps,
    view_of,
)
from gym.sim.flow.checked import (
    BELOW_CAPACITY,
    DOWNSTREAM_LOSS,
    UPSTREAM_LOSS,
    USE_REQUEST,
    losing_load,
    overloaded,
)
from gym.sim.flow.retry import Retries
from gym.sim.flow.rules import rule_for
from gym.sim.flow.walk import DrawnWalk, SlotWalk, book_rows, step_rows
from gym.sim.grid import paced_most, station_slots
from gym.sim.record import RunRecord, Tally
from gym.sim.rounded import loss_slots, metered
from gym.system.topology import Node, Topology

#: The runs a step works on: ``...`` for one run's station, the rows of some runs of a
#: batch (a slice or their indices) for a batch's.
Pick = EllipsisType | slice | np.ndarray

#: A request this likely to hold its slot still counts as holding it, in the ledger of a
#: station with random services (:meth:`LossStation._hold`).
SURE = 0.99

#: What the ledger walks for one kind of kernel: the slots held at each tick's end (a list
#: where the kernels are short), the kernels cut to the stretch, as lists where they are
#: short, and each kernel's first tick (at least 1e-12).
Held = tuple[
    list[float] | np.ndarray, dict[float, np.ndarray], dict[float, list[float]], dict[float, float]
]

#: Random services this many ticks long on average, or longer, are walked
#: (:class:`~gym.sim.flow.walk.DrawnWalk`): Erlang's formula on the modified offered load
#: lags a station that fills from empty over a long service (100 slots of 10 s exponential
#: services lost 0.40 of the exact transient in a 10 s run). Shorter ones keep the formula:
#: they settle within a fraction of a second, where it is exact (within 0.2% of M/M/c/c
#: on the loss grid), while a walk counts the services begun and ended within one tick
#: only roughly (4-15% too much loss at 1-3 ticks; within 1.5% from 5 on).
DRAWN_TICKS = 5


class LossStation(RatedComponent):
    """A station with concurrent slots and no waiting room (a cache, a service, a store).

    It has ``slots = round(rate x mean service time)`` (at least one), as in the request
    engine. Each tick a fraction B(slots, a) of the arrivals find every slot busy and fail
    (its first cause, ``<prefix>_overload``; all of them fail as its second,
    ``<prefix>_unavailable``, while it is stalled),
    with B Erlang's loss formula and ``a`` the tick's modified offered load
    (:mod:`gym.sim.erlang`): the arrivals of this tick and the ones before it still in service,
    a slowdown stretching the services that start under it. The expected loss is counted in
    whole URLs, the fraction carried to the next tick. ``capacity`` stays rate x tick: the
    figure saturation is measured against.
    """

    #: Whether what reaches it was already admitted by the one sending it (a write buffer
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
        self.retry_counts: dict[str, IntArray] = {}  # its figures for the run record
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
            self._owed = PerRow([0] * rows)  # type: ignore[assignment]
        #: The expected share of each tick's arrivals it turns away (Erlang's chance and the
        #: fill-up's cut): what a station like it, fed as it is, loses on average.
        self.loss_expected = np.zeros(shape)
        #: The share of each tick's arrivals it turned away (Erlang's chance where none came).
        self.loss_share = np.zeros(shape)

    def retry(self, policy: RetryPolicy, rng: np.random.Generator | PerRow) -> int:
        """Retry what fails here under ``policy`` (after the upstream is connected): the
        longest stride, in ticks, the engine may advance it in."""
        self.retries = Retries(self, policy, rng)
        self.retry_counts = self.retries.extra()  # (a run's view reads its rows)
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
            tally.extra.update(self.retry_counts)
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

    def _bound(self, upstream: Component, lo: int, t0: int, t1: int) -> None:
        """The bound this station's takes keep: a subset of its arrivals, within theirs;
        with fixed service times, at most its slots in any window as short as its
        shortest service over the stretch (each would still hold a slot at its end)."""
        cap, cap_s = self.cap[..., t0:t1], self.cap_s[..., t0:t1]  # (views: set in place)
        cap[...] = upstream.cap[..., t0:t1]
        cap_s[...] = upstream.cap_s[..., t0:t1]
        if self.fixed_time and not self.gated:
            window = float(self.factors[lo:t1].min()) * self.service.mean_ms / 1000.0
            own = self.slots < cap
            np.minimum(cap, self.slots, out=cap)
            np.copyto(cap_s, window, where=own)

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

    def _roomy_most(self, top: float, factors: np.ndarray) -> bool:
        """Whether the slots exceed any load arrivals of at most ``top`` a tick can offer
        by so much that Erlang loss is below about 1e-12 (a smoother stream only loses
        less): most ticks of a design with headroom."""
        most = top * self.service.mean_ms * float(factors.max())
        most /= self.ledger.tick_ms
        return bool(self.slots > most + erlang.WIDTH * (most**0.5 + 1.0) + 1.0)

    # -- the runs a step works on -----------------------------------------------------------
    def _runs(self, mask: np.ndarray | np.bool_) -> tuple[Pick | None, Pick | None]:
        """The runs where ``mask`` (a bool per run) holds and those where it does not, as
        picks of this station's per-run arrays: ``...`` for one run's station, a slice or
        indices for a batch's; None where no run is left."""
        if self.rows is None:
            return (..., None) if mask else (None, ...)
        if mask.all():
            return slice(None), None
        # (the hard runs as indices, as the batch's steps have always taken them)
        return (np.flatnonzero(mask) if mask.any() else None), np.flatnonzero(~mask)

    def _each(self, pick: Pick) -> list[tuple[EllipsisType | int, LossStation]]:
        """The runs of ``pick``, each as the index of its row among the picked ones
        (``...`` for one run's station) and as one run's station (itself, or its run's
        :class:`~gym.sim.flow.base.RowView` in a batch)."""
        if self.rows is None:
            return [(..., self)]
        return [(i, view_of(self, k)) for i, k in enumerate(self._picked(pick))]

    def _picked(self, pick: Pick) -> list[int]:
        """The runs of a batch ``pick`` names, in order."""
        assert self.rows is not None and not isinstance(pick, EllipsisType)
        return list(range(self.rows)[pick]) if isinstance(pick, slice) else pick.tolist()

    def _per_run(self, n: int) -> tuple[int, ...]:
        """The shape of ``n`` ticks of a per-run figure: one run's, or a row per run."""
        return (n,) if self.rows is None else (self.rows, n)

    # -- a stretch --------------------------------------------------------------------------
    def _take(self, arriving: IntArray, t0: int, t1: int) -> IntArray:
        """Take the arrivals of ticks [t0, t1) (one run's, or a row per run of a batch) but
        those Erlang loss turns away, and record it: the runs whose station takes every
        arrival of the stretch (or every one but a stall's), most of them, at once; the
        Erlang part for the others (:meth:`_erlang`)."""
        upstream = self.upstream
        assert upstream is not None
        if self.gated:
            # Behind a write buffer: it takes all the buffer sends, a stream as it was.
            self.pass_on_stream(t0, t1, upstream)
            sent: IntArray = super()._take(arriving, t0, t1)
            return sent
        self._pass_on(upstream, arriving, t0, t1)
        lo = max(0, t0 - self._memory)
        factors = self.factors[lo:t1]
        never = self._never_full(upstream.pace[..., lo:t1], upstream.depth[..., lo:t1], factors)
        never = never[..., t0 - lo :] | self._capped(upstream, lo, t0, t1)
        self._bound(upstream, lo, t0, t1)
        if never.all():  # a paced stream fills no tick, in any run
            return self._take_easy(... if self.rows is None else slice(None), arriving, t0, t1)
        roomy = never.all(axis=-1)
        up = self.rates[lo:t1] > 0
        mean = np.where(up, upstream.expected[..., lo:t1], 0.0)  # none start in a stall
        easy, hard = self._runs(roomy | self._roomy(mean, up, lo, t1))
        if easy is None:  # (the one pick is every run, in order)
            assert hard is not None
            return self._erlang(hard, arriving, never, mean, t0, t1, lo)
        if hard is None:
            return self._take_easy(easy, arriving, t0, t1)
        taken = np.empty_like(arriving)
        taken[easy] = self._take_easy(easy, arriving[easy], t0, t1)
        taken[hard] = self._erlang(hard, arriving[hard], never[hard], mean[hard], t0, t1, lo)
        return taken

    def _take_easy(self, pick: Pick, arriving: IntArray, t0: int, t1: int) -> IntArray:
        """Take every arrival of runs ``pick`` but in a stall's ticks, and record it."""
        assert self.upstream is not None
        rates = self.rates[t0:t1]
        down = None if rates.all() else rates == 0
        expected = self.upstream.expected[..., t0:t1][pick]
        took = self._take_all(pick, arriving, expected, down, t0, t1)
        if self.walk is not None:
            self._book(pick, took, t0)
        return took

    def _roomy(self, mean: np.ndarray, up: np.ndarray, lo: int, t1: int) -> bool | np.ndarray:
        """Which runs' slots exceed any load their arrivals can offer (one bool for one
        run's station, one per run for a batch's) by so much that Erlang loss is below
        about 1e-12 (:meth:`_roomy_most`): ``mean``, their expected arrivals from tick
        ``lo`` on (none in a stall, where ``up`` is False)."""
        factors = self.factors[lo:t1]
        offered = np.maximum(mean, np.where(up, self.arrived[..., lo:t1], 0))
        most = offered.max(axis=-1)
        if self.rows is None:
            return self._roomy_most(float(most), factors)
        return np.array([self._roomy_most(m, factors) for m in most.tolist()], dtype=bool)

    def _book(self, pick: Pick, took: IntArray, t0: int) -> None:
        """Book the takes ``took`` of runs ``pick`` on their walks of busy slots: each
        run's drawn walk its own, a batch's fixed ones at once (:func:`book_rows`)."""
        stretch = self.factors[t0 : t0 + took.shape[-1]]
        if self.rows is None:
            assert self.walk is not None
            self.walk.book(took, stretch, t0)
            return
        walks, picked = per_row(self.walk), self._picked(pick)
        if isinstance(walks[0], DrawnWalk):
            for i, k in enumerate(picked):
                walks[k].book(took[i], stretch, t0)
        else:
            chosen = [walks[k] for k in picked]
            book_rows(chosen, self._walk_ends, picked, took, stretch, t0)

    def _erlang(
        self,
        pick: Pick,
        arriving: IntArray,
        never: np.ndarray,
        mean: np.ndarray,
        t0: int,
        t1: int,
        lo: int,
    ) -> IntArray:
        """The Erlang part of :meth:`_take` for runs ``pick`` (their arrivals, the ticks a
        paced stream cannot fill, and ``mean``, their expected arrivals from tick ``lo``,
        none in a stall): the figures worked out for them all at once, each run's
        convolutions, walk and ledger run by run."""
        upstream = self.upstream
        assert upstream is not None
        down = self.rates[t0:t1] == 0
        peakedness, loss = self._erlang_loss(pick, mean, arriving, never, down, t0, t1, lo)
        admitted = np.where(down, 0.0, upstream.expected[..., t0:t1][pick] * (1.0 - loss))
        share = self._fill_cut(pick, admitted, t0, t1, lo)
        self._admit(pick, admitted, share, loss, down, t0, t1)
        if self.walk is not None:
            # A stream smoother than Poisson (periodic, or paced and thinned) does not come
            # in a random order: it takes its own figure (D/D/c, Hayward's).
            smooth = upstream.periodic[..., t0:t1][pick] | (peakedness < 1.0 - 1e-9)
            lost = self._step(pick, arriving, down, never, smooth, loss, t0)
            taken = np.where(down, 0, arriving - lost)
        else:
            lost, taken = np.empty_like(arriving), np.empty_like(arriving)
            full = share < 1.0
            for i, run in self._each(pick):
                taken[i], lost[i] = run._lose(arriving[i], loss[i], down, full[i], t0, t1, lo)
        self._record(pick, arriving, taken, lost, loss, down, t0, t1)
        return taken

    def _fill_cut(self, pick: Pick, admitted: np.ndarray, t0: int, t1: int, lo: int) -> np.ndarray:
        """:meth:`_within_slots` for runs ``pick`` (their expected admissions
        ``admitted``): in a batch, 1 for every tick of a run whose slots hold its expected
        load (worked out for all at once), the cut run by run for the others."""
        if self.rows is None:
            return self._within_slots(admitted, t0, t1, lo)
        share = np.ones(admitted.shape)
        history = self._admitted[pick, lo:t1]
        history[:, t0 - lo :] = admitted
        held = _offered(history, self.factors[lo:t1], self._holding)
        filling: np.ndarray = np.any(held[:, t0 - lo :] > self.slots * (1.0 + 1e-9), axis=1)
        picked = self._picked(pick)
        for i in np.flatnonzero(filling).tolist():  # the fill-up's cut, run by run
            share[i] = view_of(self, picked[i])._within_slots(admitted[i], t0, t1, lo)
        return share

    def _step(
        self,
        pick: Pick,
        arriving: IntArray,
        down: np.ndarray,
        never: np.ndarray,
        smooth: np.ndarray,
        loss: np.ndarray,
        t0: int,
    ) -> IntArray:
        """The URLs each of runs ``pick`` turns away, walked on its busy slots: each run's
        drawn walk its own, a batch's fixed ones together (:func:`step_rows`)."""
        if self.rows is None:
            assert self.walk is not None
            return self.walk.step(arriving, down, never, smooth, loss, self.factors, t0)
        walks, picked = per_row(self.walk), self._picked(pick)
        if not isinstance(walks[0], DrawnWalk):
            chosen, ends, factors = [walks[k] for k in picked], self._walk_ends, self.factors
            return step_rows(chosen, ends, picked, arriving, down, never, smooth, loss, factors, t0)
        lost = np.empty_like(arriving)
        for i, k in enumerate(picked):
            lost[i] = walks[k].step(
                arriving[i], down, never[i], smooth[i], loss[i], self.factors, t0
            )
        return lost

    # -- what a paced or capped stream cannot fill ------------------------------------------
    def _never_full(self, pace: np.ndarray, depth: np.ndarray, factors: np.ndarray) -> np.ndarray:
        """Ticks in which a paced stream cannot fill the slots (one run's ``pace`` and
        ``depth``, or a row per run): with fixed service times a slot holds the requests
        begun in the last service time, at most :func:`~gym.sim.grid.paced_most` of them
        at the fastest pace, deepest bucket and longest slowdown in the station's memory.
        (Erlang's formula cannot know that a stream has a minimum spacing: 2 slots of 20
        ms behind one 100/s replica never turn a write away.) Each run's shortcuts first
        (:meth:`_never_full_at_once`), the rest for all at once."""
        out = np.zeros(pace.shape, dtype=bool)
        n = pace.shape[-1]
        if not self.fixed_time or not n:
            return out
        said = self._never_full_at_once(pace, depth, factors)
        table, paces, depths = out, pace, depth
        if pace.ndim == 1:  # one run's: a batch of one (views: the table's row is out)
            if said[0] is not None:
                out[:] = said[0]
                return out
            table, paces, depths = out[None], pace[None], depth[None]
        general = []
        for k, every in enumerate(said):
            if every is None:
                general.append(k)
            elif every:
                table[k] = True
        if general:
            reach = max(1, min(n, self._memory))
            fastest = running_max(paces[general], reach)
            deepest = running_max(depths[general], reach)
            longest = running_max(factors, reach)
            window = self.service.mean_ms / 1000.0 * longest
            with np.errstate(invalid="ignore"):
                most = paced_most(fastest, deepest, window)
            table[general] = np.isfinite(most) & (self.slots >= most)
        return out

    def _never_full_at_once(
        self, pace: np.ndarray, depth: np.ndarray, factors: np.ndarray
    ) -> list[bool | None]:
        """For each run (one run's ``pace`` and ``depth``, or a row per run), whether every
        tick or none of its stretch is one its paced stream cannot fill, where the
        stretch's extremes decide it (None where they do not: :meth:`_paced_at_once`). A
        stream paced in no tick fills every one as Erlang's formula has it."""
        top, bottom = _extremes(pace)
        said: list[bool | None] = []
        deep = shallow = None
        for k, (fast, slow) in enumerate(zip(top, bottom, strict=True)):
            if math.isfinite(fast) and slow >= 0.0:  # every tick paced
                if deep is None or shallow is None:
                    deep, shallow = _extremes(depth)
                    long, short = float(factors.max()), float(factors.min())
                said.append(self._paced_at_once(fast, slow, deep[k], shallow[k], long, short))
            else:
                row = pace if pace.ndim == 1 else pace[k]
                said.append(None if np.isfinite(row).any() else False)
        return said

    def _paced_at_once(
        self, top: float, bottom: float, deep: float, shallow: float, long: float, short: float
    ) -> bool | None:
        """Whether every tick or none of a stretch paced in every tick is one its stream
        cannot fill, from its extremes: its fastest and slowest pace, deepest and
        shallowest bucket, longest and shortest slowdown (None where they do not decide
        it). The figure only grows with the pace, the bucket and the slowdown: if the
        slots hold what the fastest pace, the deepest bucket and the longest slowdown of
        the whole stretch bring in, they hold each tick's; if they do not hold what the
        slowest, shallowest and shortest bring, they hold no tick's (a tick's maxima over
        its reach are at least those). On floats as :func:`~gym.sim.grid.paced_most`
        works them out."""
        if not all(map(math.isfinite, (deep, shallow, long, short))):
            return None
        per_s = self.service.mean_ms / 1000.0
        most = deep + top * (per_s * long) - 1e-9
        if math.isfinite(most) and self.slots >= math.floor(most):
            return True
        least = shallow + bottom * (per_s * short) - 1e-9
        if math.isfinite(least) and self.slots < math.floor(least):
            return False
        return None

    def _capped(self, upstream: Component, lo: int, t0: int, t1: int) -> np.ndarray:
        """Ticks whose arrivals cannot fill the slots by the bound a fixed-time station
        upstream puts on them (each run's): at most ``cap`` in any window of ``cap_s``
        seconds, and a service here (slowed as it may be) no longer than that window, so
        at most ``cap`` of them hold a slot at once. (Erlang's formula sees a stream as
        random: 10 slots of 50 ms behind 10 slots of 50 ms lost 6.5% where nothing can be
        lost.) A run without a bound (every ``cap`` inf) has none capped."""
        if not self.fixed_time:
            return np.zeros(self._per_run(t1 - t0), dtype=bool)
        cap = upstream.cap[..., lo:t1]
        if not np.isfinite(cap).any():
            return np.zeros(self._per_run(t1 - t0), dtype=bool)
        reach = max(1, min(t1 - lo, self._memory))
        most = running_max(cap, reach)
        shortest = -running_max(-upstream.cap_s[..., lo:t1], reach)
        longest = running_max(self.factors[lo:t1], reach) * (self.service.mean_ms / 1000.0)
        capped: np.ndarray = (most <= self.slots) & (shortest >= longest * (1.0 - 1e-9))
        return capped[..., t0 - lo :]

    def _pass_on(self, upstream: Component, arriving: IntArray, t0: int, t1: int) -> None:
        """Record the arrivals of ticks [t0, t1) and the stream they come in, as passed on
        from ``upstream`` (its jitter with this station's spread of service times), one
        run's or every run's."""
        self.arrived[..., t0:t1] = arriving
        self.dispersion[..., t0:t1] = upstream.dispersion[..., t0:t1]
        if self._spread:
            own = self._spread * self.factors[t0:t1]
            self.jitter[..., t0:t1] = np.hypot(upstream.jitter[..., t0:t1], own)
        else:  # hypot(x, 0) is |x|
            np.abs(upstream.jitter[..., t0:t1], out=self.jitter[..., t0:t1])
        if self.fixed_time:
            self.pace[..., t0:t1] = upstream.pace[..., t0:t1]
            self.depth[..., t0:t1] = upstream.depth[..., t0:t1]
            self.periodic[..., t0:t1] = upstream.periodic[..., t0:t1]

    def _take_all(
        self,
        pick: Pick,
        got: IntArray,
        expected: np.ndarray,
        down: np.ndarray | None,
        t0: int,
        t1: int,
    ) -> IntArray:
        """Take every arrival ``got`` of runs ``pick`` but those of the ticks ``down`` of a
        stall (None: no tick), and record it (``expected``: their expected arrivals)."""
        overload, unavailable = self.causes[:2]
        at = (pick, slice(t0, t1))
        if down is None:
            took: IntArray = got.copy()
            self.expected[at] = expected
            self._admitted[at] = expected
            self.processed[at] = got
            self.failed[unavailable][at] = 0
            self.loss_share[at] = 0.0
            self.failed[overload][at] = 0
            self.loss_expected[at] = 0.0
            return took
        took = np.where(down, 0, got)
        self.loss_expected[at] = np.where(down, 1.0, 0.0)
        self.expected[at] = np.where(down, 0.0, expected)
        self._admitted[at] = self.expected[at]
        self.processed[at] = took
        self.failed[unavailable][at] = np.where(down, got, 0)
        self.loss_share[at] = np.where(down, 1.0, 0.0)
        self.failed[overload][at] = 0
        return took

    def _erlang_loss(
        self,
        pick: Pick,
        mean: np.ndarray,
        arriving: IntArray,
        never: np.ndarray,
        down: np.ndarray,
        t0: int,
        t1: int,
        lo: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The peakedness of the stream of runs ``pick`` and Erlang's loss in each of their
        ticks, on the modified offered load of ``mean`` (their expected arrivals from tick
        ``lo``, none in a stall): none where ``down`` or ``never``."""
        upstream, off = self.upstream, t0 - lo
        assert upstream is not None
        factors = self.factors[lo:t1]
        load = _offered(mean, factors, self._kernels)
        # The stream's dispersion, weighted as the load is, and the occupancy's peakedness.
        spread = mean * upstream.dispersion[..., lo:t1][pick]
        irregular = _offered(spread, factors, self._kernels)
        with np.errstate(invalid="ignore", divide="ignore"):
            dispersion = np.where(load > 0, irregular / load, 1.0)[..., off:]
        # A paced stream scattered by random times on the way looks more Poisson over the
        # window a slot is held.
        window = self.service.mean_ms / 1000.0 * self.factors[t0:t1]
        jitter = upstream.jitter[..., t0:t1][pick]
        dispersion += (1.0 - dispersion) * erlang.jittered(window, jitter)
        peakedness = 1.0 + (dispersion - 1.0) * self.kappa
        loss = np.zeros(arriving.shape)
        # Every tick with traffic expected, not only those with arrivals: the expected
        # admissions must carry the loss on an empty tick too.
        expected = upstream.expected[..., t0:t1][pick]
        ask = ((arriving > 0) | (expected > 0)) & ~down & ~never
        regular = self._regular(pick, mean, t0, t1, lo)
        if ask.any():
            # Each tick's loss on its own (erlang_b_peaked works every element out alone).
            loss[ask] = erlang.erlang_b_peaked(
                self.slots, load[..., off:][ask], peakedness[ask], regular[ask]
            )
        return peakedness, loss

    def _regular(self, pick: Pick, mean: np.ndarray, t0: int, t1: int, lo: int) -> np.ndarray:
        """A periodic stream's load from its period, in each of its ticks of runs ``pick``
        (NaN where it is not periodic): smooth where counts of 0, 1 and 2 per tick scatter
        it, with the same memory of the services begun before (``mean``: their expected
        arrivals from tick ``lo``)."""
        upstream, off = self.upstream, t0 - lo
        assert upstream is not None
        periodic = upstream.periodic[..., lo:t1][pick]
        if not periodic[..., off:].any():
            return np.full((*mean.shape[:-1], t1 - t0), np.nan)
        up = self.rates[lo:t1] > 0
        per_tick = upstream.pace[..., lo:t1][pick] * self.ledger.tick_ms / 1000.0
        steady = np.where(up & periodic, per_tick, mean)
        smooth = _offered(steady, self.factors[lo:t1], self._kernels)[..., off:]
        regular: np.ndarray = np.where(periodic[..., off:], smooth, np.nan)
        return regular

    def _admit(
        self,
        pick: Pick,
        admitted: np.ndarray,
        share: np.ndarray,
        loss: np.ndarray,
        down: np.ndarray,
        t0: int,
        t1: int,
    ) -> None:
        """Record what runs ``pick`` are expected to admit of their expected arrivals
        ``admitted`` after Erlang's ``loss``, the ``share`` of them their slots hold, and
        the expected share of each tick's arrivals they turn away."""
        self._admitted[pick, t0:t1] = admitted * share
        self.loss_expected[pick, t0:t1] = np.where(down, 1.0, 1.0 - (1.0 - loss) * share)

    def _record(
        self,
        pick: Pick,
        arriving: IntArray,
        taken: IntArray,
        lost: IntArray,
        loss: np.ndarray,
        down: np.ndarray,
        t0: int,
        t1: int,
    ) -> None:
        """Record the Erlang part of a stretch of runs ``pick``: what they took, what they
        turned away as overload (or all, unavailable, where ``down``), and the share of each
        tick's arrivals (Erlang's ``loss`` where none came)."""
        overload, unavailable = self.causes[:2]
        at = (pick, slice(t0, t1))
        self.expected[at] = self._admitted[at]
        self.processed[at] = taken
        self.failed[unavailable][at] = np.where(down, arriving, 0)
        self.failed[overload][at] = np.where(down, 0, lost)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.loss_share[at] = np.where(
                down, 1.0, np.where(arriving > 0, lost / np.maximum(arriving, 1), loss)
            )

    # -- the ledger of the requests really taken -------------------------------------------
    def _lose(
        self,
        arriving: IntArray,
        loss: np.ndarray,
        down: np.ndarray,
        full: np.ndarray,
        t0: int,
        t1: int,
        lo: int,
    ) -> tuple[IntArray, IntArray]:
        """One run's takes and losses where no walk counts its busy slots: Erlang's loss
        ``loss`` of its arrivals in whole URLs (the fraction carried to the next stretch),
        none taken where ``down``, then kept to its slots by :meth:`_hold`."""
        lost, self._lost_carry = whole_losses(self._lost_carry, arriving * loss)
        taken = np.where(down, 0, arriving - lost)
        held: tuple[IntArray, IntArray] = self._hold(taken, lost, full, t0, t1, lo)
        return held

    def _hold(
        self, taken: IntArray, lost: IntArray, full: np.ndarray, t0: int, t1: int, lo: int
    ) -> tuple[IntArray, IntArray]:
        """The ledger of the requests really taken: the slots they hold at the end of each
        tick (each tick's takes weighted by the holding kernel) never exceed ``slots``.

        Where the expected load fills the station (``full``: the fill-up
        :meth:`_within_slots` finds, which Erlang's formula does not see) a tick takes what
        its arrivals need of the free slots, and the rest are turned away. Elsewhere the
        loss is Erlang's on the expected load, spread over the ticks in proportion to their
        arrivals; a tick whose random count overfills the slots has its excess turned away
        too. That excess is a loss Erlang's average already counts, so it is owed back:
        later ticks turn away that many fewer where the slots have room for them. The
        totals stay Erlang's, and the station holds at most its slots (with fixed services
        longer than a tick, exactly: 100 slots filled by 50 writes/s take exactly 100)."""
        off = t0 - lo
        factors = self.factors[lo:t1]
        history = self.processed[lo:t1].astype(np.float64)
        # A full tick's takes are decided below, from the room the others leave.
        history[off:] = np.where(full, 0, taken)
        held_now = erlang.offered_load(history, factors, self._holding)
        # A tick whose random count overfills the slots is cut to them. With fixed
        # services the weighted takes are the busy slots. With random ones they are not (a
        # take is made only where an earlier request has ended, which the chance each
        # still holds its slot does not know): cutting to whole free slots of them let
        # one slot of 1 s exponential services take one request in 20 s (loss 0.73 where
        # Erlang B is 1/3). So random services are cut on the requests all but sure to
        # hold their slots still (a chance of at least ``SURE``): a station filling up
        # from its random counts (100 slots of 10-minute writes) is cut as a fixed one
        # is, and a busy station in steady load is left to Erlang's formula. Those cuts
        # are not owed back: no random count is that far above Erlang's average load.
        fixed = self.fixed_time
        held_sure = held_now if fixed else erlang.offered_load(history, factors, self._sure)
        over = (held_sure[off:] > float(self.slots) + 1e-9) & (taken > 0)
        if not over.any() and not full.any() and self._owed == 0:
            return taken, lost
        # Short kernels (services of a few ticks) are updated in plain Python, which beats
        # numpy's per-call cost; long ones (a fill-up over minutes) with numpy slices.
        short = min(max(len(k) for k in self._holding.values()), len(held_now)) <= 64
        now = _held(held_now, self._holding, short)
        sure = now if fixed else _held(held_sure, self._sure, short)
        visit = np.flatnonzero(over | full | (taken > 0) | (lost > 0)).tolist()
        taken_l, lost_l = taken.tolist(), lost.tolist()
        full_l, over_l = full.tolist(), over.tolist()
        factor_l = factors[off:].tolist()
        self._owed = self._hold_ticks(
            visit, off, taken_l, lost_l, full_l, over_l, factor_l, now, sure
        )
        return np.array(taken_l, dtype=np.int64), np.array(lost_l, dtype=np.int64)

    def _hold_ticks(
        self,
        visit: list[int],
        off: int,
        taken: list[int],
        lost: list[int],
        full: list[bool],
        over: list[bool],
        factors: list[float],
        now: Held,
        sure: Held,
    ) -> int:
        """:meth:`_hold`'s walk over the ticks ``visit`` (``off`` ticks into ``now`` and
        ``sure``), changing ``taken`` and ``lost`` in place; the URLs still owed after it."""
        held, kernels, lists, firsts = now
        held_s, sures, sure_lists, sure_firsts = sure
        slots, fixed = float(self.slots), self.fixed_time
        owed: int = self._owed
        stirred = False  # stirred: room given back may overfill later
        for i in visit:
            if not (full[i] or over[i] or stirred or owed):
                continue
            j = off + i
            f = factors[i]
            free = math.floor((slots - float(held[j])) / firsts[f] + 1e-9)  # room for takes
            if full[i]:
                lost[i] += taken[i]
                taken[i] = 0
                change = max(0, min(free, lost[i]))
            else:
                room = free
                if not fixed:
                    room = math.floor((slots - float(held_s[j])) / sure_firsts[f] + 1e-9)
                if room < 0 and taken[i] > 0:
                    change = max(-taken[i], room)
                    if fixed:
                        owed -= change
                elif owed > 0 and lost[i] > 0 and free > 0:
                    change = min(owed, lost[i], free)
                    owed -= change
                else:
                    continue
            if change:
                stirred = stirred or change > 0
                taken[i] += change
                lost[i] -= change
                _add(held, j, change, kernels[f], lists.get(f))
                if not fixed:
                    _add(held_s, j, change, sures[f], sure_lists.get(f))
        return owed


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


def _extremes(x: np.ndarray) -> tuple[list[float], list[float]]:
    """The largest and the smallest figure of one run's ``x``, or of each of its rows."""
    if x.ndim == 1:
        return [float(x.max())], [float(x.min())]
    most: list[float] = x.max(axis=1).tolist()
    least: list[float] = x.min(axis=1).tolist()
    return most, least


def _offered(
    arrivals: np.ndarray, factors: np.ndarray, kernels: dict[float, np.ndarray]
) -> np.ndarray:
    """:func:`gym.sim.erlang.offered_load` of one run's ``arrivals``, or of each of their
    rows (one run's each): the same convolutions, row by row, in the same order."""
    if arrivals.ndim == 1:
        return erlang.offered_load(arrivals, factors, kernels)
    n = arrivals.shape[1]
    load = np.zeros(arrivals.shape)
    for factor, kernel in kernels.items():
        mine = np.where(factors == factor, arrivals, 0).astype(np.float64)
        for k in np.flatnonzero(mine.any(axis=1)).tolist():
            load[k] += erlang.convolve(mine[k], kernel)[:n]
    return load


def whole_losses(carry: float, expected: np.ndarray) -> tuple[IntArray, float]:
    """Expected losses ``expected`` (per tick) in whole URLs, counted on from the fraction
    ``carry`` not yet a whole URL; and the fraction left."""
    cum = np.floor(carry + np.cumsum(expected) + 1e-9)
    lost = steps(cum)
    if len(cum):
        carry = min(max(carry + float(expected.sum()) - float(cum[-1]), 0.0), 1.0 - 1e-12)
    return lost, carry


def _held(held: np.ndarray, holding: dict[float, np.ndarray], short: bool) -> Held:
    """The ledger's figures for the slots ``held`` at each tick's end under the kernels
    ``holding`` (:data:`Held`): lists where the kernels are ``short``."""
    n = len(held)
    kernels = {f: k[: min(len(k), n)] for f, k in holding.items()}
    lists = {f: k.tolist() for f, k in kernels.items()} if short else {}
    firsts = {f: max(float(k[0]), 1e-12) for f, k in kernels.items()}
    return (held.tolist() if short else held), kernels, lists, firsts


def _add(
    held: list[float] | np.ndarray, j: int, change: int, kernel: np.ndarray, row: list[float] | None
) -> None:
    """Add ``change`` takes at tick ``j`` to the slots ``held`` at each tick's end: in plain
    Python along ``row`` (a short kernel as a list), else with a numpy slice."""
    reach = min(len(kernel), len(held) - j)
    if row is not None:
        for d in range(reach):
            held[j + d] += change * row[d]
    else:
        held[j : j + reach] += change * kernel[:reach]
