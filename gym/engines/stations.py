"""The request engine's stations: what a URL meets on its way.

:class:`Log` keeps a node's per-tick counts; :class:`LossStation` is a service with slots
and no queue (a cache, an external service, a store); :class:`FetchStage` is a queue's
waiting room in front of a fleet's slots (or, for a queue that feeds no fleet, in front of
its own hand-out rate), for one SimPy process per URL (the graph engine,
:mod:`gym.engines.request_graph`); :class:`CallbackFetchStage` is the same stage driven by
callbacks on :mod:`gym.engines.kernel`, with a :class:`UrlState` per URL (the crawler's
engine, :mod:`gym.engines.request`).
"""

from __future__ import annotations

import gc
import heapq
import itertools
import math
from array import array
from collections import deque
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from gym.engines.kernel import Kernel
from gym.engines.sampling import Sampler
from gym.models import CrashFault, ServiceTime
from gym.sim.flow.base import tick_quota
from gym.sim.grid import PACED_BELOW_CV, start_depth, station_slots
from gym.sim.latency import Samples
from gym.sim.record import Tally


class Log:
    """One component's per-tick counts, as plain lists while the run goes."""

    def __init__(
        self,
        name: str,
        n: int,
        causes: tuple[str, ...],
        extra: tuple[str, ...] = (),
        skips: tuple[str, ...] = (),
    ):
        # One slot more than the run's ticks: an instant within a rounding error of the
        # end lands there, and is folded into the last tick.
        self.name = name
        self.n = n
        self.arrived = [0] * (n + 1)
        self.processed = [0] * (n + 1)
        self.out = [0] * (n + 1)
        self.served = [0] * (n + 1)
        self.failed = {c: [0] * (n + 1) for c in causes}
        self.skipped = {c: [0] * (n + 1) for c in skips}
        self.extra = {e: [0] * (n + 1) for e in extra}

    def _array(self, counts: list[int]) -> np.ndarray:
        a = np.asarray(counts[: self.n], dtype=np.int64)
        a[-1] += counts[self.n]
        return a

    def tally(
        self, capacity: np.ndarray, limit: int | None = None, rate: np.ndarray | None = None
    ) -> Tally:
        arrays = {
            k: self._array(getattr(self, k)) for k in ("arrived", "processed", "out", "served")
        }
        failed = {c: self._array(v) for c, v in self.failed.items()}
        skipped = {c: self._array(v) for c, v in self.skipped.items()}
        extra = {e: self._array(v) for e, v in self.extra.items()}
        inflow = arrays["arrived"] + extra.get("requeued_in", 0)
        outflow = arrays["out"] + arrays["served"] + extra.get("requeued", 0)
        for counts in (*failed.values(), *skipped.values()):
            outflow = outflow + counts
        backlog = np.cumsum(inflow - outflow)
        if "requeued_in" in extra:  # a queue's requeued fetches come back in
            extra["requeued"] = extra.pop("requeued_in")
        return Tally(
            self.name,
            capacity,
            backlog=backlog,
            failed=failed,
            extra=extra,
            limit=limit,
            skipped=skipped,
            rate=rate,
            **arrays,
        )


class LossStation:
    """A service with ``slots`` concurrent requests and no queue (cache, resolver, store).

    A request holds a slot until its service ends. Slots are freed lazily: the station
    keeps the end times of the requests in service in a heap and drops the past ones
    when someone asks for a slot, so a request that needs nothing after its service
    (a cache hit, a store write) costs no SimPy event.
    """

    def __init__(self, rate: float, service: ServiceTime, rng: np.random.Generator, what: str):
        self.rate = rate
        self.slots = station_slots(rate, service.mean_ms)
        self.sample = Sampler(service, rng)
        self.ends: list[float] = []
        self.stalls = 0
        self.factor = 1.0
        self.what = what

    def busy(self, now: float) -> int:
        """Requests in service at ``now``. A service that ends at ``now`` (to within a
        nanosecond: sums of tick lengths drift by an ulp) has freed its slot."""
        ends = self.ends
        now += 1e-9
        while ends and ends[0] <= now:
            heapq.heappop(ends)
        return len(ends)

    def admit(self, now: float) -> str | None:
        """Whether a request arriving ``now`` finds a slot; if not, why not."""
        if self.stalls:
            return f"{self.what}_unavailable"
        ends = self.ends  # busy(now), inline: the request engine's hot path
        now += 1e-9
        while ends and ends[0] <= now:
            heapq.heappop(ends)
        if len(ends) >= self.slots:
            return f"{self.what}_overload"
        return None

    def occupy(self, now: float) -> float:
        """Hold a slot for one service time (a slowdown stretches it); the end time."""
        end = now + self.sample() * self.factor
        heapq.heappush(self.ends, end)
        return end

    @property
    def capacity(self) -> float:
        return 0.0 if self.stalls else self.rate / self.factor


class _ArrivedProcess(simpy.Process):
    """A SimPy process started by hand, from the callback of its URL's arrival.

    SimPy starts a process with an ``Initialize`` event. A URL's process starts at its
    arrival instead: the arrival's timeout callback first turns away a URL the frontier
    has no room for (no process at all), then creates this process and resumes it with
    the arrival event, as SimPy itself resumes a process from an event's callback. This
    mirrors :class:`simpy.Process`'s constructor (SimPy 4) without the ``Initialize``.
    """

    def __init__(self, env: simpy.Environment, generator: Any) -> None:
        self.env = env
        self.callbacks = []
        self._generator = generator


@dataclass
class Replica:
    slots: int
    busy: int = 0
    up: bool = True
    # The processes fetching here, in the order they started (a dict, not a set: a crash
    # interrupts them in a fixed order, so requeued URLs line up the same every run).
    fetching: dict[Any, None] = field(default_factory=dict)


class FetchStage:
    """A queue's waiting room in front of a fleet's fetch slots.

    The queue hands URLs out through a token bucket refilled at ``drain`` per second, one
    tick's worth deep like the flow engine's per-tick quota; a URL that finds the waiting
    room full (``buffer``) is turned away. With deterministic fetch times, starts are also
    paced at live replicas x ``rps_per_replica`` (a second bucket, 5% of a tick's starts
    deep), as the flow engine's fetcher quota paces them: otherwise, when a backlog forms,
    every free slot would start at once, finish at once one fetch time later, and repeat
    the burst every fetch time, overloading the stations downstream. With more random
    fetch times the replicas are c slots each (an M/G/c station), whose own randomness
    spreads the starts; they are not paced. One slot (M/D/1) is unchanged: it starts at
    most one fetch per fetch time anyway. Nearly fixed times (cv below PACED_BELOW_CV)
    stay in step for hundreds of fetch times, and are paced too.

    A queue that feeds no fleet (``fleet`` None) hands out at its rate alone: the URL
    goes on as soon as the bucket has a token for it.
    """

    def __init__(
        self,
        env: Any,  # a simpy.Environment; the kernel.Kernel of a CallbackFetchStage
        *,
        tick_ms: int,
        front: Log,
        fleet: Log | None,
        overflow: str,
        buffer: int,
        drain: float,
        fleet_params: Any = None,
        fetch_rng: np.random.Generator | None = None,
        crash_cause: str = "crash_loss",
    ) -> None:
        self.env = env
        self.tick_ms = tick_ms
        self.tick_s = tick_ms / 1000.0
        self.per_s = 1000.0 / tick_ms
        self.front, self.fleet = front, fleet
        self.overflow, self.crash_cause = overflow, crash_cause
        self.buffer = buffer
        self.drain = drain
        self.drain_factor = 1.0
        self.stalls = 0
        self.depth = max(1.0, drain * self.tick_s)
        self.tokens = self.depth
        # Who waits: (wake-up, process) here, a URL's state in a subclass.
        self.waiting: deque[Any] = deque()
        self.rr = 0
        self.refilled_at = 0.0
        self.wake_pending = False
        self.fleet_params = fleet_params
        # The fleet's start rate when paced: live replicas x rps_per_replica (set again
        # on a crash), 5% of a tick's starts deep; unpaced, a bucket that never runs dry.
        self.start_rate = 0.0
        self.start_depth = math.inf
        if fleet_params is not None:
            assert fetch_rng is not None
            f = fleet_params
            self.fetch: Any = Sampler(f.service, fetch_rng)
            self.on_crash = f.on_crash
            self.paced = f.service.cv_value < PACED_BELOW_CV
            slots = station_slots(f.rps_per_replica, f.service.mean_ms)
            self.replicas = [Replica(slots) for _ in range(f.replicas)]
            self.free: float = slots * f.replicas
            if self.paced:
                self.start_rate = f.replicas * f.rps_per_replica
                self.start_depth = float(start_depth(self.start_rate, tick_ms))
            self.fleet_rates: list[tuple[int, float]] = [(0, f.replicas * f.rps_per_replica)]
            self.live_log: list[tuple[int, int]] = [(0, f.replicas)]
        else:
            self.fetch = lambda: 0.0  # handed out: on its way at once
            self.on_crash = "fail"
            self.paced = False
            self.replicas = [Replica(1 << 62)]
            self.free = math.inf
        self.start_tokens = self.start_depth
        self.queue_rates: list[tuple[int, float]] = [(0, drain)]

    def _k(self) -> int:
        return int(self.env.now * self.per_s + 1e-9)

    def _rate(self) -> float:
        return 0.0 if self.stalls else self.drain / self.drain_factor

    def _refill(self) -> None:
        now = self.env.now
        elapsed = now - self.refilled_at
        rate = 0.0 if self.stalls else self.drain / self.drain_factor  # _rate(), inline
        self.tokens = min(self.depth, self.tokens + elapsed * rate)
        self.start_tokens = min(self.start_depth, self.start_tokens + elapsed * self.start_rate)
        self.refilled_at = now

    def _until_tokens(self) -> float | None:
        """Seconds until both buckets hold a whole token; None if either never refills."""
        waits = []
        for tokens, rate in ((self.tokens, self._rate()), (self.start_tokens, self.start_rate)):
            if tokens < 1.0:
                if rate <= 0:
                    return None
                waits.append((1.0 - tokens) / rate)
        return max(waits, default=0.0)

    def _free_replica(self) -> Replica | None:
        if self.free <= 0:
            return None
        reps = self.replicas
        n = len(reps)
        r = reps[self.rr]  # the next in turn, most often free
        if r.up and r.busy < r.slots:
            self.rr = (self.rr + 1) % n
            return r
        for i in range(1, n):
            r = reps[(self.rr + i) % n]
            if r.up and r.busy < r.slots:
                self.rr = (self.rr + i + 1) % n
                return r
        return None

    def try_start(self) -> Replica | None:
        """A fetch slot for a URL right now, if nothing waits and the drain allows."""
        if self.stalls or self.free <= 0:
            return None
        self._refill()
        if self.tokens < 1.0 or self.start_tokens < 1.0:
            return None
        r = self._free_replica()
        if r is not None:
            self.tokens -= 1.0
            self.start_tokens -= 1.0
            r.busy += 1
            self.free -= 1
        return r

    def dispatch(self) -> None:
        """Hand waiting URLs to free fetch slots while the drain allows."""
        while self.waiting and not self.stalls and self.free > 0:
            self._refill()
            if self.tokens < 1.0 or self.start_tokens < 1.0:
                delay = self._until_tokens()
                if not self.wake_pending and delay is not None:
                    self.wake_pending = True
                    self._wake_in(delay + 1e-12)
                return
            r = self._free_replica()
            if r is None:
                return
            self.tokens -= 1.0
            self.start_tokens -= 1.0
            r.busy += 1
            self.free -= 1
            self._start_fetch(self.waiting.popleft(), r)

    def _started(self, fetching: Any, r: Replica) -> float:
        """Count a fetch that starts now on ``r`` (``fetching``: what a crash interrupts);
        the time."""
        now: float = self.env.now
        k = int(now * self.per_s + 1e-9)
        front, fleet = self.front, self.fleet
        front.processed[k] += 1
        front.out[k] += 1
        if fleet is not None:
            fleet.arrived[k] += 1
            fleet.processed[k] += 1
        r.fetching[fetching] = None
        return now

    def _wake_in(self, delay: float) -> None:
        """Call :meth:`_woken` ``delay`` seconds from now."""
        self.env.timeout(delay).callbacks.append(self._woken)

    def _start_fetch(self, waiter: tuple[simpy.Event, simpy.Process], r: Replica) -> None:
        """Start a waiting URL's fetch now; its process wakes when the fetch is done.

        The URL waits on ``ev``; instead of waking it now (one event) for it to start a
        fetch timeout (another), ``ev`` itself is scheduled for the end of the fetch, as
        a Timeout would be. It carries the start time and the replica.
        """
        ev, proc = waiter
        now = self._started(proc, r)
        ev._ok = True
        ev._value = (now, r)
        self.env.schedule(ev, delay=self.fetch())

    def _woken(self, _ev: object) -> None:
        self.wake_pending = False
        self.dispatch()

    def full(self) -> bool:
        """Whether a URL arriving now would be turned away (a full waiting room)."""
        return len(self.waiting) >= self.buffer

    def visit(self, me: Any) -> Generator[simpy.Event, Any, float | None]:
        """Wait in the queue and fetch (process ``me``); the fetch's start time, or None
        if the URL failed here (overflow, or a crash with on_crash: fail). The hot path of
        the request engine: its counts are kept inline."""
        env: simpy.Environment = self.env
        per_s = self.per_s
        front, fleet = self.front, self.fleet
        requeued = False
        while True:
            replica = None
            if not self.waiting and self.free > 0 and not self.stalls:
                replica = self.try_start()
            try:
                if replica is not None:  # a free slot: fetch now
                    t_start = env.now
                    k = int(t_start * per_s + 1e-9)
                    front.processed[k] += 1
                    front.out[k] += 1
                    if fleet is not None:
                        fleet.arrived[k] += 1
                        fleet.processed[k] += 1
                    replica.fetching[me] = None
                    yield env.timeout(self.fetch())
                else:  # wait in the queue; wake up when the fetch is done
                    if len(self.waiting) >= self.buffer:
                        front.failed[self.overflow][int(env.now * per_s + 1e-9)] += 1
                        return None
                    ev = env.event()
                    if requeued:
                        self.waiting.appendleft((ev, me))
                    else:
                        self.waiting.append((ev, me))
                    if self.free > 0 and not self.wake_pending:
                        # A slot is free but a bucket is short of a token: wake up when
                        # it refills, not only when some fetch ends.
                        self.dispatch()
                    t_start, replica = yield ev
            except simpy.Interrupt:
                assert fleet is not None
                k = int(env.now * per_s + 1e-9)
                if self.on_crash == "fail":
                    fleet.failed[self.crash_cause][k] += 1
                    return None
                fleet.extra["requeued"][k] += 1
                front.extra["requeued_in"][k] += 1
                requeued = True
                continue
            break
        replica.fetching.pop(me, None)
        replica.busy -= 1
        self.free += 1
        if fleet is not None:
            fleet.out[int(env.now * per_s + 1e-9)] += 1
        if self.waiting:
            self.dispatch()
        return t_start

    # -- faults ---------------------------------------------------------------------------
    def _at(self, tick: int) -> simpy.Timeout:
        env: simpy.Environment = self.env
        return env.timeout(max(0.0, tick * self.tick_s - env.now))

    def crash(
        self, fault: CrashFault, start: int, end: int | None
    ) -> Generator[simpy.Event, Any, None]:
        yield self._at(start)
        victims = self._crash_down(fault, start)
        if end is None or not victims:
            return
        yield self._at(end)
        self._crash_up(victims, end)

    def _crash_down(self, fault: CrashFault, tick: int) -> list[Replica]:
        """Take ``fault.replicas`` live replicas down; interrupt their fetches, in the order
        they started."""
        victims = [r for r in self.replicas if r.up][: fault.replicas]
        for r in victims:
            self.free -= r.slots - r.busy
            r.up, r.busy = False, 0
            for fetching in list(r.fetching):
                self._interrupt(fetching)
            r.fetching.clear()
        self._log_fleet(tick)
        return victims

    def _interrupt(self, fetching: Any) -> None:
        fetching.interrupt("crash")

    def _crash_up(self, victims: list[Replica], tick: int) -> None:
        for r in victims:
            r.up = True
            self.free += r.slots
        self._log_fleet(tick)
        self.dispatch()

    def _log_fleet(self, tick: int) -> None:
        live = sum(1 for r in self.replicas if r.up)
        rate = live * self.fleet_params.rps_per_replica
        if self.paced:
            self._refill()  # the tokens earned at the old start rate
            self.start_rate = rate
            # The bucket is as deep as 5% of a tick's starts at the live replicas' rate,
            # as the flow engine's burst bound assumes.
            self.start_depth = float(start_depth(rate, self.tick_ms))
            self.start_tokens = min(self.start_tokens, self.start_depth)
        self.live_log.append((tick, live))
        self.fleet_rates.append((tick, rate))

    def change(self, tick: int, stall: int = 0, factor: float = 1.0) -> None:
        """A stall (+1 starts, -1 ends) or a slowdown of the queue's hand-out rate."""
        self._refill()
        self.stalls += stall
        self.drain_factor *= factor
        self.queue_rates.append((tick, self._rate()))
        self.dispatch()


class UrlState:
    """A URL's state on its way through the crawler's pipeline (callback engine)."""

    __slots__ = ("dead", "end", "ka", "measured", "replica", "t", "t_mark", "t_start")

    def __init__(self, t: float, ka: int, measured: bool) -> None:
        self.t = t  # arrival instant
        self.ka = ka  # arrival tick: the window its latencies count in
        self.measured = measured  # arrived after the warm-up
        self.t_start = 0.0  # the fetch's start
        self.replica: Replica | None = None  # where it is fetched
        self.dead = False  # its fetch was cut short by a crash
        self.t_mark = 0.0  # the start of its resolver lookup, or of its wait in the writer
        self.end = 0.0  # the end of its page-store write

    def again(self) -> UrlState:
        """The same URL for a new try at a fetch (after a crash)."""
        return UrlState(self.t, self.ka, self.measured)


class CallbackFetchStage(FetchStage):
    """The same waiting room and fetch slots driven by callbacks on a
    :class:`~gym.engines.kernel.Kernel`: a URL is a :class:`UrlState`, not a process.

    :meth:`enter` is :meth:`FetchStage.visit` up to its first wait, :meth:`done` is the
    rest after the fetch, :meth:`interrupted` its crash branch; each schedules what the
    generator would have yielded, in the same order, so a run steps through the same
    events. ``fetched`` is called with a URL once its fetch is done.
    """

    env: Kernel

    def __init__(self, env: Kernel, fetched: Callable[[UrlState], None], **kwargs: Any) -> None:
        super().__init__(env, **kwargs)
        self.fetched = fetched
        # Fixed fetch times end in the order they start: the kernel's FIFO, not its heap.
        self.fixed_fetch = isinstance(self.fetch, Sampler) and self.fetch.dist == "deterministic"

    def enter(self, url: UrlState, requeued: bool = False) -> None:
        """A URL joins the queue: it starts a fetch at once if a slot and both buckets
        allow and nobody waits; else it waits (at the head if a crash requeued it), or is
        turned away from a full waiting room."""
        if not self.waiting and self.free > 0 and not self.stalls:
            # try_start(), inline: the hot path of the engine.
            now = self.env.now
            elapsed = now - self.refilled_at
            tokens = min(self.depth, self.tokens + elapsed * (self.drain / self.drain_factor))
            starts = min(self.start_depth, self.start_tokens + elapsed * self.start_rate)
            self.refilled_at = now
            if tokens >= 1.0 and starts >= 1.0:
                replica = self._free_replica()
                if replica is not None:
                    self.tokens, self.start_tokens = tokens - 1.0, starts - 1.0
                    replica.busy += 1
                    self.free -= 1
                    self._start_fetch(url, replica)
                    return
            self.tokens, self.start_tokens = tokens, starts
        if len(self.waiting) >= self.buffer:
            k = int(self.env.now * self.per_s + 1e-9)
            self.front.failed[self.overflow][k] += 1
            return
        if requeued:
            self.waiting.appendleft(url)
        else:
            self.waiting.append(url)
        if self.free > 0 and not self.wake_pending:
            # A slot is free but a bucket is short of a token: wake up when it refills,
            # not only when some fetch ends.
            self.dispatch()

    def _start_fetch(self, waiter: UrlState, r: Replica) -> None:  # type: ignore[override]
        env = self.env
        waiter.t_start = self._started(waiter, r)
        waiter.replica = r
        if self.fixed_fetch:
            env.schedule_fifo(self.fetch(), self.done, waiter)
        else:
            env.schedule(self.fetch(), self.done, waiter)

    def _wake_in(self, delay: float) -> None:
        self.env.schedule(delay, self._woken)

    def done(self, url: UrlState) -> None:
        """A fetch ends: its slot is free for the next URL, and the URL goes on."""
        if url.dead:  # a crash cut it short; the URL went on from the interrupt
            return
        r = url.replica
        assert r is not None
        r.fetching.pop(url, None)
        r.busy -= 1
        self.free += 1
        if self.fleet is not None:
            self.fleet.out[int(self.env.now * self.per_s + 1e-9)] += 1
        if self.waiting:
            self.dispatch()
        self.fetched(url)

    def _interrupt(self, fetching: Any) -> None:
        self.env.urgent(self.interrupted, fetching)

    def interrupted(self, url: UrlState) -> None:
        """A crash cut the URL's fetch short: it fails, or goes back to the queue's head."""
        url.dead = True
        fleet = self.fleet
        assert fleet is not None
        k = int(self.env.now * self.per_s + 1e-9)
        if self.on_crash == "fail":
            fleet.failed[self.crash_cause][k] += 1
            return
        fleet.extra["requeued"][k] += 1
        self.front.extra["requeued_in"][k] += 1
        self.enter(url.again(), requeued=True)

    def crash_at(self, fault: CrashFault, start: int, end: int | None) -> None:
        """Schedule a crash of ``fault.replicas`` replicas at ``start``, and their return."""

        def down(_: object) -> None:
            victims = self._crash_down(fault, start)
            if end is not None and victims:
                self.env.at_tick(end, self.tick_s, lambda _: self._crash_up(victims, end))

        self.env.at_tick(start, self.tick_s, down)


# -- what both request engines do the same way ----------------------------------------------


def arrivals(
    env: simpy.Environment,
    offered: np.ndarray,
    tick_s: float,
    even: bool,
    rng: np.random.Generator,
    arrive: Callable[[simpy.Event], None],
    progress: Callable[[float], None] | None,
) -> Generator[simpy.Event, Any, None]:
    """Each tick's URLs, at uniform random instants inside it (a Poisson process), or
    evenly spaced for deterministic arrivals; ``arrive`` is called at each instant."""
    next_report = 1.0
    for k, count in enumerate(offered.tolist()):
        for delay in arrival_delays(k, count, tick_s, even, rng, env.now):
            simpy.Timeout(env, delay).callbacks.append(arrive)
        yield env.timeout(max(0.0, (k + 1) * tick_s - env.now))
        if progress is not None and env.now >= next_report:
            progress(env.now)
            next_report = env.now + 1.0


def arrival_delays(
    k: int, count: int, tick_s: float, even: bool, rng: np.random.Generator, now: float
) -> list[float]:
    """Seconds from ``now`` (tick ``k``'s start) to each of its ``count`` arrivals, in
    order: uniform random instants in the tick (a Poisson process), or evenly spaced."""
    if not count:
        return []
    base = k * tick_s
    if even:
        offsets = (np.arange(count) + 0.5) * (tick_s / count)
    else:
        offsets = np.sort(rng.random(count)) * tick_s
    return [max(0.0, base + off - now) for off in offsets.tolist()]


def run_until(env: simpy.Environment, until: float) -> None:
    """Run SimPy to ``until`` with the cyclic garbage collector off: a run allocates
    hundreds of thousands of short-lived processes and no cycles that outlive them."""
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        env.run(until=until)
    finally:
        if gc_was_on:
            gc.enable()


def rates_of(changes: list[tuple[int, float]], n: int) -> np.ndarray:
    """Capacity per second in force each tick, from (tick, rate) changes."""
    rates = np.zeros(n)
    for (t0, rate), (t1, _) in itertools.pairwise([*changes, (n, 0.0)]):
        rates[t0:t1] = rate
    return rates


def capacity_of(changes: list[tuple[int, float]], n: int, tick_ms: int) -> np.ndarray:
    """Whole URLs per tick from (tick, rate) changes, as the flow engine counts them."""
    out = np.zeros(n, dtype=np.int64)
    carry = 0.0
    for (t0, rate), (t1, _) in itertools.pairwise([*changes, (n, 0.0)]):
        if t1 > t0:
            out[t0:t1], carry = tick_quota(rate, tick_ms, t1 - t0, carry)
    return out


def latency_of(
    samples: Mapping[str, array[float]], ticks: Mapping[str, array[int]]
) -> dict[str, Samples]:
    """Per-URL latencies (s), by component, as the run record's samples in ms.

    The arrays are taken over, not copied: the samples become ms in place, and the
    ticks stay 4-byte integers. The engine must not append to them afterwards."""
    out = {}
    for name, values in samples.items():
        if len(values):
            ms = np.frombuffer(values, dtype=np.float64)
            ms *= 1000.0
            out[name] = Samples.of(np.frombuffer(ticks[name], dtype=np.intc), ms)
    return out
