"""The plain crawler's request pipeline: every URL through the same stages, one event at
a time (a crawler without retries or the link-discovery loop; every other topology is
walked by :mod:`gym.sim.request.engine`).

Every component has concurrent slots = capacity x mean service time (at least one), so
its capacity stays what the design says, and service times are drawn from the design's
distributions. The frontier is the waiting room in front of the fetch slots (its time
is queueing time); it hands URLs out through a token bucket refilled at ``drain_rps``,
one tick's worth deep like the flow engine's per-tick quota. With deterministic fetch
times, starts are also paced at live replicas x ``rps_per_replica`` (a second bucket,
5% of a tick's starts deep), as the flow engine's fetcher quota paces them: otherwise, when a
backlog forms, every free slot would start at once, finish at once one fetch time
later, and repeat the burst every fetch time, overloading the stations downstream. The
cache, the resolver and the page store have no queue: a request that finds every slot
busy fails (an Erlang loss system). The async writer holds writes the store cannot take
and flushes them into the store slots left below its ceiling as soon as one frees.

Arrivals are the flow engine's: the same Poisson count per tick from the same seeded
stream, each URL at a uniform random instant inside its tick (which makes them a
Poisson process). Faults act on the same tick boundaries. Counts are kept per tick, so
the run ends in the same :class:`~gym.sim.record.RunRecord` as the flow engine and is
scored by the same code; per-URL times give the latency statistics.

A URL is a small state (:class:`~gym.sim.request.base.Url`) moved along by callbacks on
the event loop of :mod:`gym.sim.request.kernel`: its arrival, the end of its fetch, of its
cache lookup on a miss, of its name lookup, of its wait in the writer. That loop orders
events as SimPy does, so this pipeline steps through the same events, in the same order,
with the same random draws, as the same model written as one SimPy process per URL
(which it was until 2026-12), at less than half the cost. It shares the kernel, the
waiting room and the loss stations with the walk of any topology; it keeps its own
stream names (``cache_service``, ``resolver``, ``page_store``) and its own order of
draws, which its golden results pin.
"""

from __future__ import annotations

import gc
from array import array
from collections import deque
from collections.abc import Callable

import numpy as np

from gym.core.streams import stream
from gym.models import CrashFault, Design, Scenario, StallFault
from gym.sim.flow.source import arrival_counts
from gym.sim.grid import flush_slots
from gym.sim.record import RunRecord
from gym.sim.request.base import (
    Log,
    Url,
    arrival_delays,
    capacity_of,
    latency_of,
    rates_of,
)
from gym.sim.request.kernel import Kernel
from gym.sim.request.stations import LossStation, WaitingRoom
from gym.sim.timeline import Timeline
from gym.system import crawler
from gym.system.crawler import (
    cache_capacity_rps,
    fetchers_in_effect,
    page_store_in_effect,
    politeness,
)

# The flusher: waiting for a store slot to free (or just woken), waiting for a held
# write, woken by one, or waiting for the store's stall to end.
_BUSY, _WAITING, _WOKEN, _STALLED = 0, 1, 2, 3

Progress = Callable[[float], None]


class Engine:
    """One run of the request engine."""

    def __init__(
        self,
        design: Design,
        scenario: Scenario,
        seed: int,
        timeline: Timeline,
        warmup_s: float,
        progress: Progress | None,
    ) -> None:
        self.design, self.scenario, self.timeline = design, scenario, timeline
        self.kernel = Kernel()
        self.n = timeline.n_ticks
        self.per_s = 1.0 / timeline.tick_s
        self.warmup_s = warmup_s
        self.progress = progress
        self.rng_hits = stream(seed, "cache")
        self.hit_ratio = design.cache.hit_ratio
        self.uniforms: list[float] = []  # hit-or-miss draws, in batches
        self.end_s = timeline.n_ticks * timeline.tick_s
        self.writer_buffer = design.async_writer.buffer if design.async_writer else 0
        self.offered = arrival_counts(scenario, timeline, stream(seed, "client"))
        self.offered_list: list[int] = self.offered.tolist()
        self.rng_times = stream(seed, "arrival_times")
        self.even = scenario.arrivals == "deterministic"
        self.next_report = 1.0

        n = self.n
        self.logs = {
            "frontier": Log(
                "frontier",
                n,
                ("frontier_overflow",),
                ("requeued_in",),
                ("seen_url", "bloom_false_positive", "url_variant"),
            ),
            "fetchers": Log("fetchers", n, ("crash_loss",), ("requeued",)),
            "cache": Log("cache", n, ("cache_overload", "cache_unavailable")),
            "resolver": Log(
                "resolver", n, ("resolver_overload", "resolver_unavailable"), ("writes_saved",)
            ),
            "page_store": Log("page_store", n, ("store_overload", "store_unavailable")),
        }
        if design.async_writer is not None:
            self.logs["async_writer"] = Log(
                "async_writer", n, ("writer_overflow",), ("held_in", "flushed")
            )

        # Fetch stage: the frontier's waiting room in front of the replicas' slots.
        self.seen_fraction = crawler.seen_skipped(design, scenario)
        self.variant_fraction = crawler.variants(design, scenario)
        self.bloom_fp = design.dedup.fp_rate if design.dedup.seen_set == "bloom" else 0.0
        self.duplicates = (
            scenario.dedup.duplicate_body_fraction if design.dedup.content_hash else 0.0
        )
        self.dedup_at_door = bool(self.seen_fraction or self.bloom_fp or self.variant_fraction)
        self.rng_dedup = stream(seed, "frontier")
        self.front = self.logs["frontier"]
        self.fs = WaitingRoom(
            self.kernel,
            self._fetched,
            tick_ms=timeline.tick_ms,
            front=self.logs["frontier"],
            fleet=self.logs["fetchers"],
            overflow="frontier_overflow",
            buffer=design.frontier.buffer,
            drain=politeness(design, scenario).limit_rps,  # min(drain, hosts / delay)
            fleet_params=fetchers_in_effect(design, scenario),
            fetch_rng=stream(seed, "fetchers"),
        )

        # Loss stations.
        self.cache = LossStation(
            cache_capacity_rps(design, scenario.catalog),
            design.cache.service,
            stream(seed, "cache_service"),
            "cache",
        )
        self.resolver = LossStation(
            scenario.resolver.rps,
            scenario.resolver.service,
            stream(seed, "resolver"),
            "resolver",
        )
        self.store = LossStation(
            page_store_in_effect(design, scenario.catalog).rps,
            design.page_store.service,
            stream(seed, "page_store"),
            "store",
        )
        self.cache_log = self.logs["cache"]
        self.resolver_log = self.logs["resolver"]
        self.store_log = self.logs["page_store"]
        self.held: deque[Url] = deque()  # writes the async writer holds
        self.flusher_idle = _BUSY
        self.flush_ceiling = (
            flush_slots(design.async_writer.flush_ceiling, self.store.slots)
            if design.async_writer
            else 0
        )

        # Capacity per second, as (tick, rate) changes, for the per-tick capacity arrays.
        self.rate_log: dict[str, list[tuple[int, float]]] = {
            "frontier": self.fs.queue_rates,
            "fetchers": self.fs.fleet_rates,
            "cache": [(0, self.cache.rate)],
            "resolver": [(0, self.resolver.rate)],
            "page_store": [(0, self.store.rate)],
        }
        names: tuple[str, ...] = ("frontier", "fetchers", "cache", "resolver")
        names += ("async_writer", "page_store", "end_to_end")
        # Per component: latencies (s) and the arrival tick of each URL they belong to, in
        # packed arrays (8 and 4 bytes a sample, not a list's pointer and float object).
        # The frontier's and the fetch's samples are taken together: one array of ticks.
        self.samples: dict[str, array[float]] = {k: array("d") for k in names}
        self.sample_ticks: dict[str, array[int]] = {k: array("i") for k in names}
        self.sample_ticks["fetchers"] = self.sample_ticks["frontier"]
        # Their appends, bound once: the hot path takes 4 to 10 samples a URL.
        self.s_frontier = self.samples["frontier"].append
        self.s_fetch = self.samples["fetchers"].append
        self.s_cache = self.samples["cache"].append
        self.s_resolver = self.samples["resolver"].append
        self.s_writer = self.samples["async_writer"].append
        self.s_store = self.samples["page_store"].append
        self.s_e2e = self.samples["end_to_end"].append
        self.k_frontier = self.sample_ticks["frontier"].append  # and the fetch's
        self.k_cache = self.sample_ticks["cache"].append
        self.k_resolver = self.sample_ticks["resolver"].append
        self.k_writer = self.sample_ticks["async_writer"].append
        self.k_store = self.sample_ticks["page_store"].append
        self.k_e2e = self.sample_ticks["end_to_end"].append

    # -- helpers --------------------------------------------------------------------------
    def tick(self) -> int:
        return int(self.kernel.now * self.per_s + 1e-9)

    # -- one URL, step by step ----------------------------------------------------------
    def _arrive(self, t: float) -> None:
        """A URL arrives: the seen set skips it, the frontier turns it away when its
        waiting room is full, or it joins the queue."""
        per_s = self.per_s
        k = int(t * per_s + 1e-9)
        front = self.front
        front.arrived[k] += 1
        if self.dedup_at_door:  # the seen set
            rng = self.rng_dedup
            if rng.random() < self.seen_fraction:
                front.skipped["seen_url"][k] += 1
                return
            if self.variant_fraction and rng.random() < self.variant_fraction:
                front.skipped["url_variant"][k] += 1  # canonicalized: a known URL's variant
                return
            if rng.random() < self.bloom_fp:
                front.skipped["bloom_false_positive"][k] += 1
                return
        fs = self.fs
        if len(fs.waiting) >= fs.buffer:  # a full waiting room: tail drop
            front.failed["frontier_overflow"][k] += 1
            return
        fs.enter(Url(t, k, t >= self.warmup_s))

    def _fetched(self, url: Url) -> None:
        """The fetch is done: the cache looks the URL up. A hit is served when its lookup
        ends; a miss goes on to the resolver."""
        now = self.kernel.now
        per_s = self.per_s
        k = int(now * per_s + 1e-9)
        ka = url.ka
        measured = url.measured
        if measured:
            t_start = url.t_start
            self.s_frontier(t_start - url.t)
            self.k_frontier(ka)
            self.s_fetch(now - t_start)
        cache, log = self.cache, self.cache_log
        log.arrived[k] += 1
        cause = cache.admit(now)
        if cause:
            log.failed[cause][k] += 1
            return
        log.processed[k] += 1
        end = cache.occupy(now)
        if not self.uniforms:
            self.uniforms = self.rng_hits.random(8192).tolist()
        hit = self.uniforms.pop() < self.hit_ratio
        if end >= self.end_s:  # still being looked up when the run ends
            return
        if measured:
            self.s_cache(end - now)
            self.k_cache(ka)
        if hit:
            log.served[int(end * per_s + 1e-9)] += 1
            if measured:
                self.s_e2e(end - url.t)
                self.k_e2e(ka)
            return
        self.kernel.schedule(end - now, self._looked_up, url)

    def _looked_up(self, url: Url) -> None:
        """A cache miss's lookup ends: the resolver (no queue) takes it or turns it away."""
        now = self.kernel.now
        k = int(now * self.per_s + 1e-9)
        self.cache_log.out[k] += 1
        res, log = self.resolver, self.resolver_log
        log.arrived[k] += 1
        cause = res.admit(now)
        if cause:
            log.failed[cause][k] += 1
            return
        log.processed[k] += 1
        url.t_mark = now
        end = res.occupy(now)
        self.kernel.schedule(end - now, self._resolved, url)

    def _resolved(self, url: Url) -> None:
        """The name is resolved: a duplicate body is done (content hashing); the rest go to
        the page store, through the async writer if there is one."""
        now = self.kernel.now
        k = int(now * self.per_s + 1e-9)
        log = self.resolver_log
        if url.measured:
            self.s_resolver(now - url.t_mark)
            self.k_resolver(url.ka)
        if self.duplicates and self.rng_dedup.random() < self.duplicates:
            # Content hashing: this body is stored already; no write, the page is done.
            log.served[k] += 1
            log.extra["writes_saved"][k] += 1
            if url.measured:
                self.s_e2e(now - url.t)
                self.k_e2e(url.ka)
            return
        log.out[k] += 1
        store = self.store
        if self.writer_buffer:
            wlog = self.logs["async_writer"]
            wlog.arrived[k] += 1
            wlog.processed[k] += 1
            if store.admit(now) is None:
                wlog.out[k] += 1
                if url.measured:
                    self.s_writer(0.0)
                    self.k_writer(url.ka)
                self.store_log.arrived[k] += 1
                self._write(url, now, k, store.occupy(now))
                return
            # A write that had to be held (or overflowed): the buffer's demand, as the
            # flow engine counts it.
            wlog.extra["held_in"][k] += 1
            if len(self.held) >= self.writer_buffer:
                wlog.processed[k] -= 1
                wlog.failed["writer_overflow"][k] += 1
                return
            url.t_mark = now
            self.held.append(url)
            if self.flusher_idle == _WAITING:
                self.flusher_idle = _WOKEN
                self.kernel.schedule(0.0, self._flusher_woken)
            return
        self.store_log.arrived[k] += 1
        cause = store.admit(now)
        if cause:
            self.store_log.failed[cause][k] += 1
            return
        self._write(url, now, k, store.occupy(now))

    def _flushed(self, url: Url) -> None:
        """The flusher gave a held write a store slot (ending at ``url.end``)."""
        now = self.kernel.now
        if url.measured:
            self.s_writer(now - url.t_mark)
            self.k_writer(url.ka)
        k = int(now * self.per_s + 1e-9)
        self.store_log.arrived[k] += 1
        self._write(url, now, k, url.end)

    def _write(self, url: Url, now: float, k: int, end: float) -> None:
        """The page store writes the page from ``now`` to ``end``."""
        slog = self.store_log
        slog.processed[k] += 1
        if end >= self.end_s:  # still being written when the run ends
            return
        slog.served[int(end * self.per_s + 1e-9)] += 1
        if url.measured:
            self.s_store(end - now)
            self.k_store(url.ka)
            self.s_e2e(end - url.t)
            self.k_e2e(url.ka)

    # -- what runs on the tick grid -----------------------------------------------------
    def _tick(self, k: int) -> None:
        """Tick ``k`` starts: its URLs' arrival instants (uniform in the tick: a Poisson
        process; evenly spaced for deterministic arrivals), which the kernel merges with
        its heap, and the next tick's start."""
        kernel = self.kernel
        now = kernel.now
        if self.progress is not None and now >= self.next_report and k > 0:
            self.progress(now)
            self.next_report = now + 1.0
        if k >= self.n:
            return
        tick_s = self.timeline.tick_s
        delays = arrival_delays(k, self.offered_list[k], tick_s, self.even, self.rng_times, now)
        # As SimPy times a timeout: now + its delay.
        kernel.arrivals([now + d for d in delays], self._arrive)
        kernel.schedule(max(0.0, (k + 1) * tick_s - now), self._tick, k + 1)

    def _flush(self, _: object = None) -> None:
        """Send held writes into the store slots left below the ceiling, then again when
        the next write in the store ends (a slot frees); with none held, wait until a
        write is; while the store stalls, until the stall ends."""
        if not self.held:
            self.flusher_idle = _WAITING
            return
        store = self.store
        if store.stalls:
            self.flusher_idle = _STALLED
            return
        log = self.logs["async_writer"]
        k = self.tick()
        if not store.flush(
            self.held, self.flush_ceiling, self.kernel, log, k, self._flushed, self._flush
        ):
            self.flusher_idle = _WAITING

    def _flusher_woken(self, _: object) -> None:
        self.flusher_idle = _BUSY
        self._flush()

    def _fault(self, target: str, start: int, end: int, stall: int, factor: float) -> None:
        """A stall or a slowdown of ``target`` from tick ``start`` to ``end``."""
        tick_s = self.timeline.tick_s

        def begin(_: object) -> None:
            self._change(target, start, stall, factor)
            self.kernel.at_tick(
                end, tick_s, lambda _: self._change(target, end, -stall, 1 / factor)
            )

        self.kernel.at_tick(start, tick_s, begin)

    def _change(self, target: str, tick: int, stall: int = 0, factor: float = 1.0) -> None:
        if target == "frontier":
            self.fs.change(tick, stall, factor)
            return
        station = {"cache": self.cache, "resolver": self.resolver, "page_store": self.store}[target]
        station.stalls += stall
        station.factor *= factor
        self.rate_log[target].append((tick, station.capacity))
        if station is self.store and self.flusher_idle == _STALLED and not station.stalls:
            self.flusher_idle = _WOKEN  # the stall ended: flush what it held
            self.kernel.schedule(0.0, self._flusher_woken)

    # -- run ------------------------------------------------------------------------------
    def run(self) -> RunRecord:
        kernel, tl = self.kernel, self.timeline
        # What SimPy would start at 0, in its order: the arrivals, the flusher, the faults.
        self._tick(0)
        if self.design.async_writer is not None:
            self._flush()
        for fault in self.scenario.faults:
            start, end = tl.fault_ticks(fault)
            if isinstance(fault, CrashFault):
                self.fs.crash_at(fault, start, end)
            else:
                assert end is not None  # stalls and slowdowns always end
                if isinstance(fault, StallFault):
                    self._fault(fault.target, start, end, 1, 1.0)
                else:
                    self._fault(fault.target, start, end, 0, fault.factor)
        kernel.stop_at(self.n * tl.tick_s)
        gc_was_on = gc.isenabled()
        gc.disable()  # hundreds of thousands of short-lived URLs, no cycles among them
        try:
            kernel.run()
        finally:
            if gc_was_on:
                gc.enable()
        return self._record()

    def _rates(self, name: str) -> np.ndarray:
        """Capacity per second in force each tick, from the rate log."""
        return rates_of(self.rate_log[name], self.n)

    def _capacity(self, name: str) -> np.ndarray:
        return capacity_of(self.rate_log[name], self.n, self.timeline.tick_ms)

    def _record(self) -> RunRecord:
        logs = self.logs
        tallies = {
            name: logs[name].tally(
                self._capacity(name),
                limit=self.fs.buffer if name == "frontier" else None,
                rate=self._rates(name),
            )
            for name in ("frontier", "fetchers", "cache", "resolver")
        }
        live = np.zeros(self.n, dtype=np.int64)
        for (t0, count), (t1, _) in zip(
            self.fs.live_log, [*self.fs.live_log[1:], (self.n, 0)], strict=False
        ):
            live[t0:t1] = count
        tallies["fetchers"].extra["live"] = live
        tallies["resolver"].extra["rate"] = self._rates("resolver")
        if "async_writer" in logs:
            buffer = self.design.async_writer.buffer  # type: ignore[union-attr]
            tallies["async_writer"] = logs["async_writer"].tally(
                np.full(self.n, buffer, dtype=np.int64), limit=buffer
            )
        tallies["page_store"] = logs["page_store"].tally(
            self._capacity("page_store"), rate=self._rates("page_store")
        )
        in_flight = {name: int(t.backlog[-1]) for name, t in tallies.items()}
        record = RunRecord("request", 0, self.timeline, self.offered, tallies, in_flight)
        record.latency = latency_of(self.samples, self.sample_ticks)
        record.check_conservation()
        return record
