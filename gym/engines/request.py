"""The request engine: one SimPy process per URL through the same pipeline.

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
and flushes them, each tick, into the store slots left below its ceiling.

Arrivals are the flow engine's: the same Poisson count per tick from the same seeded
stream, each URL at a uniform random instant inside its tick (which makes them a
Poisson process). Faults act on the same tick boundaries. Counts are kept per tick, so
the run ends in the same :class:`~gym.record.RunRecord` as the flow engine and is
scored by the same code; per-URL times give the latency statistics.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

from gym import crawler
from gym.components.client import arrival_counts
from gym.costing import (
    cache_capacity_rps,
    fetchers_in_effect,
    page_store_in_effect,
    politeness,
)
from gym.engines.stations import (
    FetchStage,
    Log,
    LossStation,
    _ArrivedProcess,
    arrivals,
    capacity_of,
    latency_of,
    rates_of,
    run_until,
)
from gym.models import CrashFault, Design, GraphDesign, Scenario, SlowdownFault, StallFault
from gym.record import RunRecord
from gym.rounding import flush_slots
from gym.streams import stream
from gym.timeline import Timeline

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
        self.env = simpy.Environment()
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
        self.rng_times = stream(seed, "arrival_times")
        self.even = scenario.arrivals == "deterministic"

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
        self.rng_dedup = stream(seed, "frontier")
        self.fs = FetchStage(
            self.env,
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
        self.held: deque[simpy.Event] = deque()
        self.flusher_idle: simpy.Event | None = None

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
        # packed arrays (8 bytes a sample, not a list's pointer and float object).
        self.samples: dict[str, array[float]] = {k: array("d") for k in names}
        self.sample_ticks: dict[str, array[int]] = {k: array("q") for k in names}
        self.s_frontier = self.samples["frontier"]
        self.s_fetch = self.samples["fetchers"]
        self.s_cache = self.samples["cache"]
        self.s_resolver = self.samples["resolver"]
        self.s_writer = self.samples["async_writer"]
        self.s_store = self.samples["page_store"]
        self.s_e2e = self.samples["end_to_end"]
        self.k_frontier = self.sample_ticks["frontier"]
        self.k_fetch = self.sample_ticks["fetchers"]
        self.k_cache = self.sample_ticks["cache"]
        self.k_resolver = self.sample_ticks["resolver"]
        self.k_writer = self.sample_ticks["async_writer"]
        self.k_store = self.sample_ticks["page_store"]
        self.k_e2e = self.sample_ticks["end_to_end"]

    # -- helpers --------------------------------------------------------------------------
    def tick(self) -> int:
        return int(self.env.now * self.per_s + 1e-9)

    # -- one URL ------------------------------------------------------------------------
    def url(self, t_arrive: float) -> Generator[simpy.Event, Any, None]:
        env, logs, per_s = self.env, self.logs, self.per_s
        end_of_run = self.end_s
        measured = t_arrive >= self.warmup_s
        ka = int(t_arrive * per_s + 1e-9)
        t_start = yield from self.fs.visit(env.active_process)
        if t_start is None:  # overflowed, or lost in a crash
            return
        now = env.now
        k = int(now * per_s + 1e-9)
        if measured:
            self.s_frontier.append(t_start - t_arrive)
            self.k_frontier.append(ka)
            self.s_fetch.append(now - t_start)
            self.k_fetch.append(ka)

        # Cache: a hit is served when its lookup ends; a miss goes on to the resolver.
        cache, log = self.cache, logs["cache"]
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
        if end >= end_of_run:  # still being looked up when the run ends
            return
        if measured:
            self.s_cache.append(end - now)
            self.k_cache.append(ka)
        if hit:
            log.served[int(end * per_s + 1e-9)] += 1
            if measured:
                self.s_e2e.append(end - t_arrive)
                self.k_e2e.append(ka)
            return
        yield env.timeout(end - now)
        now = env.now
        k = int(now * per_s + 1e-9)
        log.out[k] += 1

        # Resolver: no queue.
        res, log = self.resolver, logs["resolver"]
        log.arrived[k] += 1
        cause = res.admit(now)
        if cause:
            log.failed[cause][k] += 1
            return
        log.processed[k] += 1
        t_lookup = now
        end = res.occupy(now)
        yield env.timeout(end - now)
        now = env.now
        k = int(now * per_s + 1e-9)
        if measured:
            self.s_resolver.append(now - t_lookup)
            self.k_resolver.append(ka)
        if self.duplicates and self.rng_dedup.random() < self.duplicates:
            # Content hashing: this body is stored already; no write, the page is done.
            log.served[k] += 1
            log.extra["writes_saved"][k] += 1
            if measured:
                self.s_e2e.append(now - t_arrive)
                self.k_e2e.append(ka)
            return
        log.out[k] += 1
        # Async writer (optional), then the page store.
        store, slog = self.store, logs["page_store"]
        if self.writer_buffer:
            wlog = logs["async_writer"]
            wlog.arrived[k] += 1
            wlog.processed[k] += 1
            if store.admit(now) is None:
                wlog.out[k] += 1
                end = store.occupy(now)
                if measured:
                    self.s_writer.append(0.0)
                    self.k_writer.append(ka)
            else:
                # A write that had to be held (or overflowed): the buffer's demand, as the
                # flow engine counts it.
                wlog.extra["held_in"][k] += 1
                if len(self.held) >= self.writer_buffer:
                    wlog.processed[k] -= 1
                    wlog.failed["writer_overflow"][k] += 1
                    return
                ev = env.event()
                self.held.append(ev)
                if self.flusher_idle is not None and not self.flusher_idle.triggered:
                    self.flusher_idle.succeed()
                end = yield ev  # the flusher took a store slot for this write
                if measured:
                    self.s_writer.append(env.now - now)
                    self.k_writer.append(ka)
                now = env.now
                k = int(now * per_s + 1e-9)
            slog.arrived[k] += 1
        else:
            slog.arrived[k] += 1
            cause = store.admit(now)
            if cause:
                slog.failed[cause][k] += 1
                return
            end = store.occupy(now)
        slog.processed[k] += 1
        if end >= end_of_run:  # still being written when the run ends
            return
        slog.served[int(end * per_s + 1e-9)] += 1
        if measured:
            self.s_store.append(end - now)
            self.k_store.append(ka)
            self.s_e2e.append(end - t_arrive)
            self.k_e2e.append(ka)

    # -- processes ------------------------------------------------------------------------
    def _arrive(self, ev: simpy.Event) -> None:
        """A URL arrives: the frontier takes it (and its process starts) or turns it away."""
        t = self.env.now
        k = int(t * self.per_s + 1e-9)
        front = self.logs["frontier"]
        front.arrived[k] += 1
        if self.seen_fraction or self.bloom_fp or self.variant_fraction:  # the seen set
            draw = self.rng_dedup.random()
            if draw < self.seen_fraction:
                front.skipped["seen_url"][k] += 1
                return
            if self.variant_fraction and self.rng_dedup.random() < self.variant_fraction:
                front.skipped["url_variant"][k] += 1  # canonicalized: a known URL's variant
                return
            if self.rng_dedup.random() < self.bloom_fp:
                front.skipped["bloom_false_positive"][k] += 1
                return
        if self.fs.full():  # a full waiting room: tail drop
            front.failed["frontier_overflow"][k] += 1
            return
        _ArrivedProcess(self.env, self.url(t))._resume(ev)

    def flusher(self) -> Generator[simpy.Event, Any, None]:
        """Each tick, send held writes into the store slots left below the ceiling."""
        assert self.design.async_writer is not None
        ceiling = flush_slots(self.design.async_writer.flush_ceiling, self.store.slots)
        log = self.logs["async_writer"]
        while True:
            if not self.held:
                self.flusher_idle = self.env.event()
                yield self.flusher_idle
                self.flusher_idle = None
                continue
            if not self.store.stalls:
                now = self.env.now
                room = ceiling - self.store.busy(now)
                k = self.tick()
                while room > 0 and self.held:
                    log.out[k] += 1
                    log.extra["flushed"][k] += 1
                    self.held.popleft().succeed(self.store.occupy(now))
                    room -= 1
            yield self._at(self.tick() + 1)  # on the tick grid, as the flow engine flushes

    def _at(self, tick: int) -> simpy.Timeout:
        return self.env.timeout(max(0.0, tick * self.timeline.tick_s - self.env.now))

    def stall(self, fault: StallFault, start: int, end: int) -> Generator[simpy.Event, Any, None]:
        yield self._at(start)
        self._change(fault.target, start, stall=+1)
        yield self._at(end)
        self._change(fault.target, end, stall=-1)

    def slowdown(
        self, fault: SlowdownFault, start: int, end: int
    ) -> Generator[simpy.Event, Any, None]:
        yield self._at(start)
        self._change(fault.target, start, factor=fault.factor)
        yield self._at(end)
        self._change(fault.target, end, factor=1.0 / fault.factor)

    def _change(self, target: str, tick: int, stall: int = 0, factor: float = 1.0) -> None:
        if target == "frontier":
            self.fs.change(tick, stall, factor)
            return
        station = {"cache": self.cache, "resolver": self.resolver, "page_store": self.store}[target]
        station.stalls += stall
        station.factor *= factor
        self.rate_log[target].append((tick, station.capacity))

    # -- run ------------------------------------------------------------------------------
    def run(self) -> RunRecord:
        env, tl = self.env, self.timeline
        env.process(
            arrivals(
                env,
                self.offered,
                tl.tick_s,
                self.even,
                self.rng_times,
                self._arrive,
                self.progress,
            )
        )
        if self.design.async_writer is not None:
            env.process(self.flusher())
        for fault in self.scenario.faults:
            start, end = tl.fault_ticks(fault)
            if isinstance(fault, CrashFault):
                env.process(self.fs.crash(fault, start, end))
            else:
                assert end is not None  # stalls and slowdowns always end
                if isinstance(fault, StallFault):
                    env.process(self.stall(fault, start, end))
                else:
                    env.process(self.slowdown(fault, start, end))
        run_until(env, self.n * tl.tick_s)
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


def run(
    design: Design | GraphDesign,
    scenario: Scenario,
    *,
    seed: int,
    timeline: Timeline,
    warmup_s: float = 0.0,
    progress: Progress | None = None,
) -> RunRecord:
    """Simulate ``design`` under ``scenario``, one SimPy process per URL (a graph design,
    and a crawler with the link-discovery loop or retries, through
    :mod:`gym.engines.request_graph`)."""
    if isinstance(design, GraphDesign) or design.discovery or design.retries:
        # A graph, or a crawler with the link-discovery loop or retries (its built-in graph
        # walked).
        from gym.engines import request_graph
        from gym.models.graph import topology

        graph = (
            topology(design)
            if isinstance(design, GraphDesign)
            else crawler.topology(design, scenario)
        )
        record = request_graph.run(
            graph,
            scenario,
            seed=seed,
            timeline=timeline,
            warmup_s=warmup_s,
            progress=progress,
        )
        if isinstance(design, Design):
            record.causes = crawler.causes(design)
        return record
    record = Engine(design, scenario, seed, timeline, warmup_s, progress).run()
    record.seed = seed
    return record
