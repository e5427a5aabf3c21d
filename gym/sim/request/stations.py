"""The stations a URL meets: :class:`LossSlots`, slots and no queue (a cache, a
service, a store, a lookup's shard), and :class:`WaitingRoom`, a queue's waiting room in front
of a fleet's replicas' slots, driven by callbacks on the kernel."""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from gym.core.streams import substream
from gym.models import CrashFault, ServiceTime
from gym.sim.grid import (
    PACED_BELOW_CV,
    ramp_openings,
    start_depth,
    station_slots,
)
from gym.sim.request.base import Log, Url
from gym.sim.request.kernel import Kernel
from gym.sim.request.sampling import Sampler


class LossSlots:
    """A loss station URL by URL: ``slots`` concurrent requests and no queue (cache,
    service, store; the flow engine's is :class:`gym.sim.flow.loss.LossStation`).

    A request holds a slot until its service ends. Slots are freed lazily: the station
    keeps the end times of the requests in service in a heap and drops the past ones
    when someone asks for a slot, so a request that needs nothing after its service
    (a cache hit, a store write) costs no event.
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

    def flush(
        self,
        held: deque[Url],
        ceiling: int,
        kernel: Kernel,
        log: Log,
        k: int,
        flushed: Callable[[Url], None],
        again: Callable[[object], None],
    ) -> bool:
        """Write held URLs into the slots left free below ``ceiling`` now (each goes on
        through ``flushed``), counted in ``log`` at tick ``k``; with some still held, call
        ``again`` when the first slot frees (every slot below the ceiling is taken, so the
        earliest end in the store, a direct write or a flushed one). Whether any are still
        held."""
        now = kernel.now
        room = ceiling - self.busy(now)
        while room > 0 and held:
            log.out[k] += 1
            log.extra["flushed"][k] += 1
            url = held.popleft()
            url.end = self.occupy(now)
            kernel.schedule(0.0, flushed, url)
            room -= 1
        if held:
            kernel.schedule(self.ends[0] - now, again)
            return True
        return False


class Replica:
    """One replica of a fleet: its slots, how many are busy, whether it is up."""

    __slots__ = ("busy", "downs", "serving", "slots", "up")

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.busy = 0
        self.up = True
        self.downs = 0  # crashes so far: a slot due to open before the last one stays shut
        # The URLs serving here, in the order they started (a dict, not a set: a crash
        # interrupts them in a fixed order, so requeued URLs line up the same every run).
        self.serving: dict[Url, None] = {}


class WaitingRoom:
    """A queue's waiting room in front of a fleet's slots, driven by callbacks.

    The queue hands URLs out through a token bucket refilled at ``drain`` per second, one
    tick's worth deep like the flow engine's per-tick quota; a URL that finds the waiting
    room full (``buffer``) is turned away. The replicas are c slots each, and a free slot
    starts the next waiting URL at once: an M/G/c station, M/D/c with fixed times.

    A fleet declared ``paced`` (:attr:`~gym.system.kinds.fleet.FleetParams.starts_paced`)
    with deterministic or nearly fixed times (cv below PACED_BELOW_CV) has its starts paced at
    live replicas x ``rps_per_replica`` (a second bucket, 5% of a tick's starts deep), as
    the flow engine's fleet quota paces them: there, when a backlog forms, every free
    slot would start at once, finish at once one service time later, and repeat the burst
    every service time, and the stations downstream lose more than the flow engine
    says (0.7-1.0 availability points on three of tests/test_engines_agree.py's designs).
    The price: its queue waits as one server at the fleet's rate (M/D/1 at c mu), not
    M/D/c. An unpaced fleet (a graph's, by default) with fixed times: a replica back from a crash
    opens its slots one by one over slots / ``rps_per_replica``
    (:func:`~gym.sim.grid.ramp_openings`; else, behind a backlog, they would start and
    end together every service time).

    A queue that feeds no fleet (``fleet`` None) hands out at its rate alone: the URL
    goes on as soon as the bucket has a token for it.

    :meth:`enter` is a URL's arrival, :meth:`done` the end of its service (``handed_on`` is
    called with it then), :meth:`interrupted` a crash cutting it short; each schedules
    what a process per URL would have waited on, in the same order.
    """

    def __init__(
        self,
        kernel: Kernel,
        handed_on: Callable[[Url], None],
        *,
        tick_ms: int,
        front: Log,
        fleet: Log | None,
        overflow: str,
        buffer: int,
        drain: float,
        fleet_params: Any = None,
        service_rng: np.random.Generator | None = None,
        crash_cause: str = "crash_loss",
    ) -> None:
        self.env = kernel
        self.handed_on = handed_on
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
        self.waiting: deque[Url] = deque()
        self.rr = 0
        self.refilled_at = 0.0
        self.wake_pending = False
        self.fleet_params = fleet_params
        self._service_rng = service_rng
        self._ramp_rng: np.random.Generator | None = None  # made at the first return
        # The fleet's start rate when paced: live replicas x rps_per_replica (set again
        # on a crash), 5% of a tick's starts deep; unpaced, a bucket that never runs dry.
        self.start_rate = 0.0
        self.start_depth = math.inf
        self.fixed_service = False
        if fleet_params is not None:
            assert service_rng is not None
            f = fleet_params
            self.service_time: Callable[[], float] = Sampler(f.service, service_rng)
            self.on_crash = f.on_crash
            self.paced = f.starts_paced
            # An unpaced fleet of fixed or nearly fixed times: a replica back
            # from a crash opens its slots at rps_per_replica, not all at once.
            self.ramp = not self.paced and f.service.cv_value < PACED_BELOW_CV
            slots = station_slots(f.rps_per_replica, f.service.mean_ms)
            self.replicas = [Replica(slots) for _ in range(f.replicas)]
            self.free: float = slots * f.replicas
            if self.paced:
                self.start_rate = f.replicas * f.rps_per_replica
                self.start_depth = float(start_depth(self.start_rate, tick_ms))
            self.fleet_rates: list[tuple[int, float]] = [(0, f.replicas * f.rps_per_replica)]
            self.live_log: list[tuple[int, int]] = [(0, f.replicas)]
            # Fixed service times end in the order they start: the kernel's FIFO (one
            # constant delay per kernel), not its heap.
            if f.service.dist == "deterministic":
                delay = f.service.mean_ms / 1000.0
                if kernel.fifo_delay in (None, delay):
                    kernel.fifo_delay = delay
                    self.fixed_service = True
        else:
            self.service_time = _no_time  # handed out: on its way at once
            self.on_crash = "fail"
            self.paced = self.ramp = False
            self.replicas = [Replica(1 << 62)]
            self.free = math.inf
        self.start_tokens = self.start_depth
        self.queue_rates: list[tuple[int, float]] = [(0, drain)]

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

    def dispatch(self) -> None:
        """Hand waiting URLs to free fleet slots while the drain allows."""
        while self.waiting and not self.stalls and self.free > 0:
            self._refill()
            if self.tokens < 1.0 or self.start_tokens < 1.0:
                delay = self._until_tokens()
                if not self.wake_pending and delay is not None:
                    self.wake_pending = True
                    self.env.schedule(delay + 1e-12, self._woken)
                return
            r = self._free_replica()
            if r is None:
                return
            self.tokens -= 1.0
            self.start_tokens -= 1.0
            r.busy += 1
            self.free -= 1
            self._start_service(self.waiting.popleft(), r)

    def _woken(self, _: object) -> None:
        self.wake_pending = False
        self.dispatch()

    def _start_service(self, url: Url, r: Replica) -> None:
        """Count a service that starts now on ``r`` and schedule its end."""
        env = self.env
        now = env.now
        k = int(now * self.per_s + 1e-9)
        front, fleet = self.front, self.fleet
        front.processed[k] += 1
        front.out[k] += 1
        if fleet is not None:
            fleet.arrived[k] += 1
            fleet.processed[k] += 1
        r.serving[url] = None
        url.t_start = now
        url.replica = r
        if self.fixed_service:
            env.schedule_fifo(self.service_time(), self.done, url)
        else:
            env.schedule(self.service_time(), self.done, url)

    def full(self) -> bool:
        """Whether a URL arriving now would be turned away (a full waiting room)."""
        return len(self.waiting) >= self.buffer

    def enter(self, url: Url, requeued: bool = False) -> None:
        """A URL joins the queue: it starts a service at once if a slot and both buckets
        allow and nobody waits; else it waits (at the head if a crash requeued it), or is
        turned away from a full waiting room."""
        if not self.waiting and self.free > 0 and not self.stalls:
            # A free slot now, inline: the hot path of the engine.
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
                    self._start_service(url, replica)
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
            # not only when some service ends.
            self.dispatch()

    def done(self, url: Url) -> None:
        """A service ends: its slot is free for the next URL, and the URL goes on."""
        if url.dead:  # a crash cut it short; the URL went on from the interrupt
            return
        r = url.replica
        assert r is not None
        r.serving.pop(url, None)
        r.busy -= 1
        self.free += 1
        if self.fleet is not None:
            self.fleet.out[int(self.env.now * self.per_s + 1e-9)] += 1
        if self.waiting:
            self.dispatch()
        self.handed_on(url)

    def interrupted(self, url: Url) -> None:
        """A crash cut the URL's service short: it fails, or goes back to the queue's head."""
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

    # -- faults ---------------------------------------------------------------------------
    def crash_at(self, fault: CrashFault, start: int, end: int | None) -> None:
        """Schedule a crash of ``fault.replicas`` replicas at ``start``, and their return."""

        def down(_: object) -> None:
            victims = self._crash_down(fault, start)
            if end is not None and victims:
                self.env.at_tick(end, self.tick_s, lambda _: self._crash_up(victims, end))

        self.env.at_tick(start, self.tick_s, down)

    def _crash_down(self, fault: CrashFault, tick: int) -> list[Replica]:
        """Take ``fault.replicas`` live replicas down; interrupt their services, in the order
        they started (each an urgent callback, as SimPy interrupts a process)."""
        victims = [r for r in self.replicas if r.up][: fault.replicas]
        for r in victims:
            self.free -= r.slots - r.busy
            r.up, r.busy = False, 0
            r.downs += 1
            for url in list(r.serving):
                self.env.urgent(self.interrupted, url)
            r.serving.clear()
        self._log_fleet(tick)
        return victims

    def _crash_up(self, victims: list[Replica], tick: int) -> None:
        for r in victims:
            r.up = True
            if self.ramp:
                # Its slots open one by one over slots / rps_per_replica (ramp_openings).
                if self._ramp_rng is None:
                    assert self._service_rng is not None
                    self._ramp_rng = substream(self._service_rng, "ramp")
                r.busy = r.slots
                rate = self.fleet_params.rps_per_replica
                for delay in ramp_openings(self._ramp_rng, r.slots, rate).tolist():
                    self.env.schedule(delay, self._open_slot, (r, r.downs))
            else:
                self.free += r.slots
        self._log_fleet(tick)
        self.dispatch()

    def _open_slot(self, held: tuple[Replica, int]) -> None:
        """One slot of a replica back from a crash opens (unless it crashed again)."""
        r, downs = held
        if r.downs != downs:
            return
        r.busy -= 1
        self.free += 1
        if self.waiting:
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

    def live(self, n: int) -> np.ndarray:
        """Live replicas each tick, from the crash log."""
        live = np.zeros(n, dtype=np.int64)
        for (t0, count), (t1, _) in itertools.pairwise([*self.live_log, (n, 0)]):
            live[t0:t1] = count
        return live


def _no_time() -> float:
    return 0.0
