"""One component shape for the whole pipeline.

Every component is built from its validated config, a SimPy environment, an explicit
``numpy.random.Generator`` and the run's :class:`Ledger`. It keeps per-tick integer
tallies (arrived, capacity, processed, out, served, failed by cause, backlog) and moves
URLs with :meth:`Component.advance`, which covers every tick since it last ran.

Time is driven by SimPy, in ticks. Between two timeline events nothing outside the
pipeline changes, so the engine does not wake components every tick: an event
process (a load stage, a fault) first brings every component up to the present
(``Ledger.sync``), in pipeline order, and then changes the state it owns. Each
component's own timeline processes (a stall, a slowdown, a crash) live on the
component that suffers them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import simpy

from gym import erlang
from gym.models import RetryPolicy, ServiceTime, SlowdownFault, StallFault
from gym.record import Tally
from gym.rounding import paced_most, station_slots

if TYPE_CHECKING:
    from gym.components.retry import Retries

IntArray = np.ndarray  # int64 per-tick tallies


@dataclass
class Ledger:
    """Shared facts of one run: the tick grid and how to bring everyone up to date."""

    n_ticks: int
    tick_ms: int
    sync: Callable[[int], None] = field(default=lambda _t: None)

    def zeros(self, extra: int = 0) -> IntArray:
        return np.zeros(self.n_ticks + extra, dtype=np.int64)


def thinned(dispersion: IntArray, kept: float | np.ndarray) -> IntArray:
    """The dispersion of a stream after each URL is kept with chance ``kept`` (a cache hit
    taking a URL out, a body found stored): variance kept^2 I n + kept (1 - kept) n over a
    mean of kept n, so I' = kept I + 1 - kept; thinning makes any stream more Poisson."""
    return kept * dispersion + (1.0 - kept)


def running_max(x: np.ndarray, width: int) -> np.ndarray:
    """out[i] = max(x[i - width + 1 .. i]) (fewer at the start): by doubling, O(n log width)
    vectorized. The maximum over a power-of-two window p is built from two of p/2; any
    width is covered by two overlapping windows of the largest p <= width."""
    out = np.asarray(x, dtype=np.float64).copy()
    if width <= 1 or len(out) <= 1:
        return out
    span = 1
    while span * 2 <= width:
        shifted = out[:-span]
        out[span:] = np.maximum(out[span:], shifted)
        span *= 2
    rest = width - span
    if rest > 0:
        out[rest:] = np.maximum(out[rest:], out[:-rest].copy())
    return out


def tick_quota(rate_per_s: float, tick_ms: int, n: int, carry: float) -> tuple[IntArray, float]:
    """Whole URLs a rate allows in each of ``n`` ticks, with the fraction carried over.

    Capacity per tick is rate x tick; only whole URLs can move, so the fraction is
    carried to the next tick (unused whole capacity is not banked). Over k ticks the
    total is floor(carry + k x rate x tick), exact for integer rates.
    """
    per_tick = rate_per_s * tick_ms / 1000.0
    if n <= 0:
        return np.zeros(0, dtype=np.int64), carry
    cum = np.floor(carry + per_tick * np.arange(1, n + 1, dtype=np.float64) + 1e-9)
    quota = np.diff(cum, prepend=0.0).astype(np.int64)
    new_carry = carry + per_tick * n - float(cum[-1])
    return quota, min(max(new_carry, 0.0), 1.0 - 1e-12)


class Component:
    """Base of every pipeline component: per-tick tallies and the advance contract."""

    name: str = "component"
    #: Failure causes this component can record.
    causes: tuple[str, ...] = ()
    #: Whether URLs can still be inside at the end of a run (a queue, a fleet, a buffer);
    #: the run record lists those in ``in_flight_end``.
    holds_work: bool = False

    def __init__(self, env: simpy.Environment, rng: np.random.Generator, ledger: Ledger) -> None:
        self.env = env
        self.rng = rng
        self.ledger = ledger
        self.arrived = ledger.zeros()  # work reaching the input this tick
        self.capacity = ledger.zeros()  # whole URLs it could take this tick
        self.processed = ledger.zeros()  # work it took this tick
        self.out = ledger.zeros()  # passed on downstream this tick
        self.served = ledger.zeros()  # finished here, successfully, this tick
        self.backlog = ledger.zeros()  # held at the end of this tick
        self.rates = np.zeros(ledger.n_ticks)  # capacity per second in force each tick
        # How irregular the stream sent on in each tick is: the variance of its counts over
        # short windows per URL (1 for Poisson, 0 for a paced stream). Erlang loss at the
        # stations downstream depends on it (:func:`gym.erlang.erlang_b_peaked`).
        self.dispersion = np.ones(ledger.n_ticks)
        # The spread (standard deviation, s) of the random times the stream's URLs went
        # through since it was last paced (a fetch, a lookup): it scatters a paced stream
        # toward Poisson over windows shorter than it (gym.erlang.jittered).
        self.jitter = np.zeros(ledger.n_ticks)
        # The URLs expected to be sent on in each tick given the pipeline's state: the
        # counts without the chance in Poisson arrivals and cache hits. A loss station's
        # offered load is built from it; Erlang's formula brings the chance back, once.
        self.expected = np.zeros(ledger.n_ticks)
        # The rate of the token bucket that paced this stream, if one did (inf if none): no
        # window of w seconds holds more than about pace x w of its URLs, so a station with
        # more slots than that never turns one away (gym.rounding.paced_most).
        self.pace = np.full(ledger.n_ticks, np.inf)
        self.depth = np.ones(ledger.n_ticks)  # the bucket's tokens: a burst it allows
        # Whether the stream is strictly periodic at ``pace`` (a bucket that always binds,
        # or a whole number of evenly spaced arrivals per tick): D/D/c loss applies.
        self.periodic = np.zeros(ledger.n_ticks, dtype=bool)
        # Ticks that ended with URLs waiting and the start quota of the fleet this component
        # feeds used up (only a queue feeding a fleet sets it): the fleet's bucket spaced
        # that tick's starts exactly.
        self.fleet_bound = np.zeros(ledger.n_ticks, dtype=bool)
        self.failed = {cause: ledger.zeros() for cause in self.causes}
        self.t = 0  # ticks advanced so far
        self._reserved = 0  # ticks whose capacity is fixed already

    def named(self, name: str, causes: tuple[str, ...]) -> Component:
        """This component as node ``name`` of a topology, recording ``causes`` (the same
        causes as its class, in its order, under the node's names). Before any advance."""
        assert self.t == 0 and len(causes) == len(self.causes)
        self.name = name
        self.causes = causes
        self.failed = {cause: self.ledger.zeros() for cause in causes}
        return self

    def pass_on_stream(self, t0: int, t1: int, source: Component, lag: int = 0) -> None:
        """Send on ``source``'s stream as it is over ticks [t0, t1) (as it was ``lag``
        ticks earlier, for a delayed edge): what a loss station downstream needs besides
        the counts (a component that changes the stream sets its own after this)."""
        a, b = t0 - lag, t1 - lag
        self.expected[t0:t1] = source.expected[a:b]
        self.dispersion[t0:t1] = source.dispersion[a:b]
        self.jitter[t0:t1] = source.jitter[a:b]
        self.pace[t0:t1] = source.pace[a:b]
        self.depth[t0:t1] = source.depth[a:b]
        self.periodic[t0:t1] = source.periodic[a:b]

    # -- the contract -------------------------------------------------------------------
    def advance(self, t1: int) -> None:
        """Move URLs over ticks [self.t, t1)."""
        if t1 > self.t:
            self.reserve(t1)
            self._advance(self.t, t1)
            self.t = t1

    def _advance(self, t0: int, t1: int) -> None:
        raise NotImplementedError

    def reserve(self, t1: int) -> None:
        """Fix this component's capacity for the ticks up to ``t1`` (idempotent)."""
        if t1 > self._reserved:
            self.capacity[self._reserved : t1] = self._quota(t1 - self._reserved)
            self._reserved = t1

    def _quota(self, n: int) -> IntArray:
        return np.zeros(n, dtype=np.int64)

    def in_flight(self) -> int:
        """URLs held by this component after the last advanced tick."""
        return int(self.backlog[self.t - 1]) if self.t > 0 else 0

    def in_flight_end(self) -> int:
        """URLs still inside at the end of the run (the run record's figure)."""
        return self.in_flight()

    def tally(self) -> Tally:
        """This component's per-tick counts for the run record (a component with more to
        report, such as a queue's buffer size, adds it here)."""
        return Tally.of(self)


class RatedComponent(Component):
    """A component with a rate capacity that stalls and slowdowns act on."""

    def __init__(
        self, env: simpy.Environment, rng: np.random.Generator, ledger: Ledger, rate: float
    ) -> None:
        super().__init__(env, rng, ledger)
        self.base_rate = rate
        self._stalls = 0
        self._slowdowns: list[float] = []
        self._carry = 0.0

    @property
    def rate(self) -> float:
        """Current capacity per second: 0 while stalled, divided by active slowdowns."""
        if self._stalls:
            return 0.0
        rate = self.base_rate
        for factor in self._slowdowns:
            rate /= factor
        return rate

    def _quota(self, n: int) -> IntArray:
        self.rates[self._reserved : self._reserved + n] = self.rate
        quota, self._carry = tick_quota(self.rate, self.ledger.tick_ms, n, self._carry)
        return quota

    def stall(self, fault: StallFault, start: int, end: int) -> Generator[simpy.Event, None, None]:
        """Capacity 0 from tick ``start`` to tick ``end``."""
        yield self.env.timeout(start)
        self.ledger.sync(start)
        for part in self.faulted():
            part._stalls += 1
        yield self.env.timeout(end - start)
        self.ledger.sync(end)
        for part in self.faulted():
            part._stalls -= 1

    def slowdown(
        self, fault: SlowdownFault, start: int, end: int
    ) -> Generator[simpy.Event, None, None]:
        """Capacity divided by the factor from tick ``start`` to tick ``end``."""
        yield self.env.timeout(start)
        self.ledger.sync(start)
        for part in self.faulted():
            part._slowdowns.append(fault.factor)
        yield self.env.timeout(end - start)
        self.ledger.sync(end)
        for part in self.faulted():
            part._slowdowns.remove(fault.factor)

    def faulted(self) -> list[RatedComponent]:
        """What a fault on this component acts on: itself (and any stations inside it)."""
        return [self]

    def _take(self, arriving: IntArray, t0: int, t1: int) -> IntArray:
        """Take what capacity allows of ``arriving`` over ticks [t0, t1) and record it; the
        rest fail as unavailable (its second cause) where capacity was 0, else as overload
        (its first)."""
        cap = self.capacity[t0:t1]
        taken: IntArray = np.minimum(arriving, cap)
        lost = arriving - taken
        down = cap == 0
        self.arrived[t0:t1] = arriving
        self.processed[t0:t1] = taken
        overload, unavailable = self.causes[:2]
        self.failed[unavailable][t0:t1] = np.where(down, lost, 0)
        self.failed[overload][t0:t1] = np.where(down, 0, lost)
        return taken


class LossStation(RatedComponent):
    """A station with concurrent slots and no waiting room (cache, resolver, store).

    It has ``slots = round(rate x mean service time)`` (at least one), as in the request
    engine. Each tick a fraction B(slots, a) of the arrivals find every slot busy and fail
    (its first cause, ``cache_overload`` say; all of them fail as its second,
    ``cache_unavailable``, while it is stalled),
    with B Erlang's loss formula and ``a`` the tick's modified offered load
    (:mod:`gym.erlang`): the arrivals of this tick and the ones before it still in service,
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
        rng: np.random.Generator,
        ledger: Ledger,
        rate: float,
        service: ServiceTime,
    ) -> None:
        super().__init__(env, rng, ledger, rate)
        self.service = service
        self.slots = station_slots(rate, service.mean_ms)
        self.factors = np.ones(ledger.n_ticks)  # the slowdown in force each tick
        self.kappa = erlang.peakedness_factor(service)
        self.fixed_time = service.dist == "deterministic"
        self.upstream: Component | None = None  # what sends it work, set by the engine
        self._kernels: dict[float, np.ndarray] = {}
        self._holding: dict[float, np.ndarray] = {}
        self._admitted = np.zeros(ledger.n_ticks)  # expected admissions per tick
        self._memory = 0  # ticks the longest kernel reaches back
        self._lost_carry = 0.0
        self._owed = 0  # URLs the ledger turned away that Erlang's loss already counted
        self.retries: Retries | None = None  # a retry policy's machinery (gym.components.retry)
        #: The share of each tick's arrivals it turned away (Erlang's chance where none came).
        self.loss_share = np.zeros(ledger.n_ticks)

    def retry(self, policy: RetryPolicy, rng: np.random.Generator) -> int:
        """Retry what fails here under ``policy`` (after the upstream is connected): the
        longest stride, in ticks, the engine may advance it in."""
        from gym.components.retry import Retries

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
            kernel = erlang.occupancy_kernel(self.service, factor, self.ledger.tick_ms, longest)
            self._kernels[factor] = kernel
            holding = erlang.holding_kernel(self.service, factor, self.ledger.tick_ms, longest)
            self._holding[factor] = holding
            self._memory = max(self._memory, len(kernel), len(holding))
        return super()._quota(n)

    def _never_full(self, pace: np.ndarray, depth: np.ndarray, factors: np.ndarray) -> np.ndarray:
        """Ticks in which a paced stream cannot fill the slots: with fixed service times a
        slot holds the requests begun in the last service time, at most
        :func:`~gym.rounding.paced_most` of them at the fastest pace, deepest bucket and
        longest slowdown in the station's memory. (Erlang's formula cannot know that a
        stream has a minimum spacing: 2 slots of 20 ms behind one 100/s fetcher never turn
        a write away.)"""
        n = len(pace)
        if not self.fixed_time or not np.isfinite(pace).any():
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
        slots = float(self.slots)
        over = (held_now[off:] > slots + 1e-9) & (taken > 0)
        if not over.any() and not full.any() and self._owed == 0:
            return taken, lost
        visit = np.flatnonzero(over | full | (taken > 0) | (lost > 0)).tolist()
        n = len(held_now)
        kernels = {f: k[: min(len(k), n)] for f, k in self._holding.items()}
        short = max(len(k) for k in kernels.values()) <= 64
        # Short kernels (services of a few ticks) are updated in plain Python, which beats
        # numpy's per-call cost; long ones (a fill-up over minutes) with numpy slices.
        held: list[float] | np.ndarray = held_now.tolist() if short else held_now
        lists = {f: k.tolist() for f, k in kernels.items()} if short else {}
        taken_l, lost_l, full_l, over_l = (
            taken.tolist(),
            lost.tolist(),
            full.tolist(),
            over.tolist(),
        )
        factor_l = factors[off:].tolist()
        owed, stirred = self._owed, False  # stirred: room given back may overfill later
        for i in visit:
            if not (full_l[i] or over_l[i] or stirred or owed):
                continue
            j = off + i
            kernel = kernels[factor_l[i]]
            first = max(float(kernel[0]), 1e-12)
            free = math.floor((slots - float(held[j])) / first + 1e-9)  # takes it has room for
            if full_l[i]:
                lost_l[i] += taken_l[i]
                taken_l[i] = 0
                change = max(0, min(free, lost_l[i]))
            elif free < 0 and taken_l[i] > 0:
                change = max(-taken_l[i], free)
                owed -= change
            elif owed > 0 and lost_l[i] > 0 and free > 0:
                change = min(owed, lost_l[i], free)
                owed -= change
            else:
                continue
            if change:
                stirred = stirred or change > 0
                taken_l[i] += change
                lost_l[i] -= change
                reach = min(len(kernel), n - j)
                if short:
                    row = lists[factor_l[i]]
                    for d in range(reach):
                        held[j + d] += change * row[d]
                else:
                    held[j : j + reach] += change * kernel[:reach]
        self._owed = owed
        return np.array(taken_l, dtype=np.int64), np.array(lost_l, dtype=np.int64)

    def _roomy(self, offered: np.ndarray, factors: np.ndarray) -> bool:
        """Whether the slots exceed any load these arrivals can offer by so much that Erlang
        loss is below about 1e-12 (a smoother stream only loses less): most ticks of a design
        with headroom."""
        if not len(offered):
            return True
        most = float(offered.max()) * self.service.mean_ms * float(factors.max())
        most /= self.ledger.tick_ms
        return bool(self.slots > most + erlang.WIDTH * (most**0.5 + 1.0) + 1.0)

    def _take(self, arriving: IntArray, t0: int, t1: int) -> IntArray:
        """Take the arrivals of ticks [t0, t1) but those Erlang loss turns away, and record it."""
        if self.gated:
            # Behind a write buffer: it takes all the buffer sends, a stream as it was.
            assert self.upstream is not None
            self.pass_on_stream(t0, t1, self.upstream)
            sent: IntArray = super()._take(arriving, t0, t1)
            return sent
        overload, unavailable = self.causes[:2]
        upstream = self.upstream
        assert upstream is not None
        self.arrived[t0:t1] = arriving
        down = self.rates[t0:t1] == 0
        lo = max(0, t0 - self._memory)
        up = self.rates[lo:t1] > 0
        mean = np.where(up, upstream.expected[lo:t1], 0.0)  # no service starts in a stall
        factors = self.factors[lo:t1]
        self.dispersion[t0:t1] = upstream.dispersion[t0:t1]
        own = self.service.cv_value * self.service.mean_ms / 1000.0 * self.factors[t0:t1]
        self.jitter[t0:t1] = np.hypot(upstream.jitter[t0:t1], own)
        if self.fixed_time:
            self.pace[t0:t1] = upstream.pace[t0:t1]
            self.depth[t0:t1] = upstream.depth[t0:t1]
            self.periodic[t0:t1] = upstream.periodic[t0:t1]
        never = self._never_full(upstream.pace[lo:t1], upstream.depth[lo:t1], factors)
        never = never[t0 - lo :]
        if never.all() or self._roomy(
            np.maximum(mean, np.where(up, self.arrived[lo:t1], 0)), factors
        ):
            taken: IntArray = np.where(down, 0, arriving)
            self.expected[t0:t1] = np.where(down, 0.0, upstream.expected[t0:t1])
            self._admitted[t0:t1] = self.expected[t0:t1]
            self.processed[t0:t1] = taken
            self.failed[unavailable][t0:t1] = np.where(down, arriving, 0)
            self.loss_share[t0:t1] = np.where(down, 1.0, 0.0)
            self.failed[overload][t0:t1] = 0
            return taken
        load = erlang.offered_load(mean, factors, self._kernels)
        # The stream's dispersion, weighted as the load is, and the occupancy's peakedness.
        irregular = erlang.offered_load(mean * upstream.dispersion[lo:t1], factors, self._kernels)
        with np.errstate(invalid="ignore", divide="ignore"):
            dispersion = np.where(load > 0, irregular / load, 1.0)[t0 - lo :]
        # A paced stream scattered by random times on the way looks more Poisson over the
        # window a slot is held.
        window = self.service.mean_ms / 1000.0 * self.factors[t0:t1]
        dispersion += (1.0 - dispersion) * erlang.jittered(window, upstream.jitter[t0:t1])
        peakedness = 1.0 + (dispersion - 1.0) * self.kappa
        loss = np.zeros(t1 - t0)
        # Every tick with traffic expected, not only those with arrivals: the expected
        # admissions below must carry the loss on an empty tick too.
        ask = ((arriving > 0) | (upstream.expected[t0:t1] > 0)) & ~down & ~never
        regular = np.full(t1 - t0, np.nan)
        periodic = upstream.periodic[lo:t1]
        if periodic[t0 - lo :].any():
            # A periodic stream's load from its period, smooth where counts of 0, 1 and 2
            # per tick scatter it (the same memory of the services begun before).
            per_tick = upstream.pace[lo:t1] * self.ledger.tick_ms / 1000.0
            steady = np.where(up & periodic, per_tick, mean)
            smooth = erlang.offered_load(steady, factors, self._kernels)[t0 - lo :]
            regular = np.where(periodic[t0 - lo :], smooth, np.nan)
        loss[ask] = erlang.erlang_b_peaked(
            self.slots, load[t0 - lo :][ask], peakedness[ask], regular[ask]
        )
        expected = arriving * loss
        cum = np.floor(self._lost_carry + np.cumsum(expected) + 1e-9)
        lost = np.diff(cum, prepend=0.0).astype(np.int64)
        if len(cum):
            carry = self._lost_carry + float(expected.sum()) - float(cum[-1])
            self._lost_carry = min(max(carry, 0.0), 1.0 - 1e-12)
        admitted = np.where(down, 0.0, upstream.expected[t0:t1] * (1.0 - loss))
        share = self._within_slots(admitted, t0, t1, lo)
        self._admitted[t0:t1] = admitted * share
        taken = np.where(down, 0, arriving - lost)
        taken, lost = self._hold(taken, lost, share < 1.0, t0, t1, lo)
        self.expected[t0:t1] = self._admitted[t0:t1]
        self.processed[t0:t1] = taken
        self.failed[unavailable][t0:t1] = np.where(down, arriving, 0)
        self.failed[overload][t0:t1] = np.where(down, 0, lost)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.loss_share[t0:t1] = np.where(
                down, 1.0, np.where(arriving > 0, lost / np.maximum(arriving, 1), loss)
            )
        return taken
