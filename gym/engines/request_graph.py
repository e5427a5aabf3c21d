"""The request engine for any topology: one SimPy process per URL, walking the graph.

Each URL starts at the source at a uniform random instant of its tick (the flow engine's
Poisson counts per tick, from the same seeded stream, so the engines see the same
traffic) and visits node after node. Each node's kind gives its rule here as a *stage*
(:data:`gym.system.kinds.Kind.request`):

- a queue is a waiting room handing out through a token bucket at its rate; in front of a
  fleet it is that fleet's waiting room (:class:`~gym.engines.stations.FetchStage`: one
  slot per job a replica holds, crashes interrupt the jobs in flight);
- a cache, an external service and a store are loss stations (slots, no queue: a request
  that finds every slot busy fails); a cache hit, a service's finished share and whatever
  reaches a node without outgoing edges are served where they end;
- a write buffer holds the writes its store cannot take and flushes them, each tick, into
  the store slots left below its ceiling.

Where a node has several outgoing edges each URL takes edge i with chance share i; an
edge with a delay holds the URL that many ticks on the way (a feedback edge). Faults act
on the nodes they name on the tick grid. The run ends in the same
:class:`~gym.sim.record.RunRecord` as the flow engine, with per-node and end-to-end latencies.
"""

from __future__ import annotations

import itertools
from array import array
from collections import deque
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from gym.core.streams import stream
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
from gym.models import CrashFault, Scenario, SlowdownFault, StallFault
from gym.sim.flow.source import arrival_counts
from gym.sim.grid import flush_slots
from gym.sim.record import RunRecord, Tally
from gym.sim.timeline import Timeline
from gym.system import kinds
from gym.system.topology import Node, Topology

Progress = Callable[[float], None]


@dataclass
class Url:
    """One URL on its way: when it arrived, and a write's end time once a write buffer
    has taken a store slot for it."""

    t_arrive: float
    tick: int
    measured: bool
    end: float = 0.0


class Run:
    """What every stage of one run shares: the clock, the tick grid, latency samples."""

    def __init__(
        self,
        env: simpy.Environment,
        timeline: Timeline,
        seed: int,
        warmup_s: float,
        scenario: Scenario,
    ) -> None:
        self.env = env
        self.scenario = scenario
        self.seed = seed
        self.timeline = timeline
        self.n = timeline.n_ticks
        self.tick_ms = timeline.tick_ms
        self.tick_s = timeline.tick_s
        self.per_s = 1.0 / timeline.tick_s
        self.end_s = timeline.n_ticks * timeline.tick_s
        self.warmup_s = warmup_s
        # Per node: latencies (s) and the arrival tick of each URL they belong to, in
        # packed arrays (8 and 4 bytes a sample).
        self.samples: dict[str, array[float]] = {}
        self.sample_ticks: dict[str, array[int]] = {}

    def k(self, t: float) -> int:
        """The tick instant ``t`` falls in."""
        return int(t * self.per_s + 1e-9)

    def sample(self, name: str, url: Url, seconds: float) -> None:
        if url.measured:
            if name not in self.samples:
                self.samples[name], self.sample_ticks[name] = array("d"), array("i")
            self.samples[name].append(seconds)
            self.sample_ticks[name].append(url.tick)

    def at(self, tick: int) -> simpy.Timeout:
        return self.env.timeout(max(0.0, tick * self.tick_s - self.env.now))

    def rates(self, changes: list[tuple[int, float]]) -> np.ndarray:
        """Capacity per second in force each tick, from (tick, rate) changes."""
        return rates_of(changes, self.n)

    def capacity(self, changes: list[tuple[int, float]]) -> np.ndarray:
        """Whole URLs per tick from (tick, rate) changes, as the flow engine counts them."""
        return capacity_of(changes, self.n, self.tick_ms)


class Stage:
    """A node's rule in the request engine. Every stage's requests still inside at the end
    (waiting, in service, held) count as in flight (its log's backlog)."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...], **log: Any) -> None:
        self.run = run
        self.name = node.name
        self.params = node.params
        self.log = Log(node.name, run.n, causes, **log)

    def connect(self, inputs: Sequence[Stage], outputs: Sequence[Stage]) -> None:
        """Join the stages feeding this one and fed by it (most stages need neither)."""

    def visit(self, url: Url, me: Any) -> Generator[simpy.Event, Any, bool]:
        """The URL's time here; whether it goes on (False: finished or failed here)."""
        raise NotImplementedError
        yield  # a generator

    def start(self) -> None:
        """Start the stage's own processes (a write buffer's flusher)."""

    def tally(self) -> Tally:
        raise NotImplementedError

    # Faults: a stage that can suffer one overrides it.
    def crash(
        self, fault: CrashFault, start: int, end: int | None
    ) -> Generator[simpy.Event, Any, None]:
        raise NotImplementedError
        yield

    def change(self, tick: int, stall: int = 0, factor: float = 1.0) -> None:
        raise NotImplementedError


def _faults(stage: Stage, fault: StallFault | SlowdownFault, start: int, end: int) -> Any:
    run = stage.run
    stall = 1 if isinstance(fault, StallFault) else 0
    factor = 1.0 if isinstance(fault, StallFault) else fault.factor
    yield run.at(start)
    stage.change(start, stall=stall, factor=factor)
    yield run.at(end)
    stage.change(end, stall=-stall, factor=1.0 / factor)


class QueueStage(Stage):
    """A queue: its seen-set at the door, then a waiting room handing out at its rate; in
    front of a fleet, the fleet's waiting room (the fleet's jobs run in this stage)."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...]) -> None:
        skips = ("seen_url", "bloom_false_positive", "url_variant")
        super().__init__(run, node, causes, extra=("requeued_in",), skips=skips)
        self.rng = stream(run.seed, node.name)
        self.fleet: FleetStage | None = None
        self.fs: FetchStage

    def connect(self, inputs: Sequence[Stage], outputs: Sequence[Stage]) -> None:
        fleets = [s for s in outputs if isinstance(s, FleetStage)]
        self.fleet = fleets[0] if fleets else None
        p = self.params
        self.fs = FetchStage(
            self.run.env,
            tick_ms=self.run.tick_ms,
            front=self.log,
            fleet=self.fleet.log if self.fleet else None,
            overflow=self.log_cause("overflow"),
            buffer=p.buffer,
            drain=p.drain_rps,
            fleet_params=self.fleet.params if self.fleet else None,
            fetch_rng=stream(self.run.seed, self.fleet.name) if self.fleet else None,
            crash_cause=self.fleet.crash_cause if self.fleet else "",
        )
        if self.fleet is not None:
            self.fleet.fs = self.fs

    def log_cause(self, suffix: str) -> str:
        return next(c for c in self.log.failed if c.endswith(suffix))

    def visit(self, url: Url, me: Any) -> Generator[simpy.Event, Any, bool]:
        run, p, log = self.run, self.params, self.log
        now = run.env.now
        k = run.k(now)
        log.arrived[k] += 1
        if p.seen_fraction and self.rng.random() < p.seen_fraction:
            log.skipped["seen_url"][k] += 1
            return False
        if p.variant_fraction and self.rng.random() < p.variant_fraction:
            log.skipped["url_variant"][k] += 1
            return False
        if p.false_positive_rate and self.rng.random() < p.false_positive_rate:
            log.skipped["bloom_false_positive"][k] += 1
            return False
        t_start = yield from self.fs.visit(me)
        if t_start is None:  # overflowed, or lost in a crash
            return False
        run.sample(self.name, url, t_start - now)
        if self.fleet is not None:
            run.sample(self.fleet.name, url, run.env.now - t_start)
        return True

    def change(self, tick: int, stall: int = 0, factor: float = 1.0) -> None:
        self.fs.change(tick, stall, factor)

    def tally(self) -> Tally:
        run = self.run
        return self.log.tally(
            run.capacity(self.fs.queue_rates),
            limit=self.params.buffer,
            rate=run.rates(self.fs.queue_rates),
        )


class FleetStage(Stage):
    """A fleet: its jobs start and run in the queue stage in front of it (one waiting
    room and its replicas' slots); a URL passes through here once its job is done."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...]) -> None:
        super().__init__(run, node, causes, extra=("requeued",))
        self.crash_cause = causes[0]
        self.fs: FetchStage

    def visit(self, url: Url, me: Any) -> Generator[simpy.Event, Any, bool]:
        return True
        yield

    def crash(
        self, fault: CrashFault, start: int, end: int | None
    ) -> Generator[simpy.Event, Any, None]:
        yield from self.fs.crash(fault, start, end)

    def tally(self) -> Tally:
        run, fs = self.run, self.fs
        tally = self.log.tally(run.capacity(fs.fleet_rates), rate=run.rates(fs.fleet_rates))
        live = np.zeros(run.n, dtype=np.int64)
        for (t0, count), (t1, _) in itertools.pairwise([*fs.live_log, (run.n, 0)]):
            live[t0:t1] = count
        tally.extra["live"] = live
        return tally


class LossStage(Stage):
    """A cache, an external service or a store: slots and no queue (Erlang loss).

    ``finish``: the share of what it answers that is finished here (a cache's hits, a
    service's ``finish_share``); everything is finished at a node without outgoing edges.
    A store behind a write buffer is *gated*: the buffer took its slot for the write."""

    def __init__(
        self,
        run: Run,
        node: Node,
        causes: tuple[str, ...],
        *,
        rate: float,
        service: Any,
        finish: float = 0.0,
        saved: str | None = None,
    ) -> None:
        extra = ((saved,) if saved else ()) + (("retries", "retried") if node.retry else ())
        super().__init__(run, node, causes, extra=extra)
        self.retry = node.retry  # a retry policy for what fails here, or None
        what = causes[0].removesuffix("_overload")
        self.station = LossStation(rate, service, stream(run.seed, f"{node.name}/service"), what)
        self.finish = finish
        self.saved = saved
        self.rng = stream(run.seed, node.name)
        self.uniforms: list[float] = []
        self.terminal = False
        self.gated = False
        self.rate_log: list[tuple[int, float]] = [(0, rate)]

    def connect(self, inputs: Sequence[Stage], outputs: Sequence[Stage]) -> None:
        self.terminal = not outputs
        self.gated = bool(inputs) and isinstance(inputs[0], WriteBufferStage)

    def visit(self, url: Url, me: Any) -> Generator[simpy.Event, Any, bool]:
        run, log, station = self.run, self.log, self.station
        now = run.env.now
        k = run.k(now)
        log.arrived[k] += 1
        if self.gated:  # the write buffer took this write's slot
            end = url.end
        else:
            cause = station.admit(now)
            tries = 1
            while cause and self.retry is not None and tries < self.retry.attempts:
                # Wait (backoff x multiplier^(tries - 1), with jitter) and try again.
                log.extra["retried"][k] += 1
                policy = self.retry
                jitter = self.rng.uniform(1.0 - policy.jitter, 1.0 + policy.jitter)
                yield run.env.timeout(policy.wait_s(tries) * jitter)
                now = run.env.now
                k = run.k(now)
                log.extra["retries"][k] += 1
                cause = station.admit(now)
                tries += 1
            if cause:
                log.failed[cause][k] += 1
                return False
            end = station.occupy(now)
        log.processed[k] += 1
        finished = self.terminal
        saved = False
        if self.finish and self._draw() < self.finish:
            finished, saved = True, bool(self.saved)
        if end >= run.end_s:  # still in service when the run ends
            return False
        run.sample(self.name, url, end - now)
        if finished:
            if saved:
                log.extra[str(self.saved)][run.k(end)] += 1
            log.served[run.k(end)] += 1
            run.sample("end_to_end", url, end - url.t_arrive)
            return False
        yield run.env.timeout(end - now)
        log.out[run.k(run.env.now)] += 1
        return True

    def _draw(self) -> float:
        """The next uniform draw of its own stream (drawn in batches)."""
        if not self.uniforms:
            self.uniforms = self.rng.random(8192).tolist()
        return self.uniforms.pop()

    def change(self, tick: int, stall: int = 0, factor: float = 1.0) -> None:
        self.station.stalls += stall
        self.station.factor *= factor
        self.rate_log.append((tick, self.station.capacity))

    def tally(self) -> Tally:
        run = self.run
        rates = run.rates(self.rate_log)
        tally = self.log.tally(run.capacity(self.rate_log), rate=rates)
        if self.saved:  # a service reports its rate, as the flow engine's does
            tally.extra["rate"] = rates
        return tally


class LookupStage(LossStage):
    """A seen-URL set: a loss station whose lookups skip what was seen before (the
    kind's skip causes, tested in order); the new URLs go on when their lookup ends.
    Links reach it in batches, without a process each (:meth:`batch`)."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...]) -> None:
        p = node.params
        super().__init__(run, node, causes, rate=p.rps, service=p.service)
        self.tests = [
            [(cause, share) for cause, share in p.skips(links=links).items() if share]
            for links in (False, True)
        ]
        for cause in p.skips():
            self.log.skipped[cause] = [0] * (run.n + 1)
        self.start_from: Callable[[Stage, Url, float], None]  # set by the engine
        # Shards by URL hash, each a loss station of its own: a lookup of the hot key goes
        # to shard 0, any other to a shard at random.
        per_shard = p.rps * p.busiest()
        what = causes[0].removesuffix("_overload")
        self.shards = (
            [
                LossStation(per_shard, p.service, stream(run.seed, f"{node.name}/shard{i}"), what)
                for i in range(p.shards)
            ]
            if p.shards > 1
            else [self.station]
        )
        self.hot = p.hot_key_share
        self.rng_shard = stream(run.seed, f"{node.name}/hash")
        self.hashes: list[float] = []

    def look_up(self, now: float, links: bool = False) -> float | None:
        """One lookup at ``now`` (of a link found on a page, or of a seed): its end time
        if the URL is new and goes on, else None (failed, skipped, or still being looked
        up when the run ends)."""
        run, log = self.run, self.log
        k = run.k(now)
        log.arrived[k] += 1
        tests = self.tests[links]
        station = self.station
        if len(self.shards) > 1:
            if not self.hashes:
                self.hashes = self.rng_shard.random(8192).tolist()
            u = self.hashes.pop()
            if u < self.hot:
                station = self.shards[0]
            else:
                u = (u - self.hot) / (1.0 - self.hot)  # uniform again, over the shards
                station = self.shards[min(int(u * len(self.shards)), len(self.shards) - 1)]
        cause = station.admit(now)
        if cause:
            # A lost lookup of a URL already seen loses nothing: skipped as seen.
            if tests and tests[0][0] == "seen_url" and self._draw() < tests[0][1]:
                log.skipped["seen_url"][k] += 1
                return None
            log.failed[cause][k] += 1
            return None
        log.processed[k] += 1
        end = station.occupy(now)
        for skip, share in tests:
            if self._draw() < share:
                log.skipped[skip][k] += 1
                return None
        if end >= run.end_s:  # still being looked up when the run ends
            return None
        return end

    def visit(self, url: Url, me: Any) -> Generator[simpy.Event, Any, bool]:
        run = self.run
        now = run.env.now
        end = self.look_up(now)
        if end is None:
            return False
        run.sample(self.name, url, end - now)
        yield run.env.timeout(end - now)
        self.log.out[run.k(run.env.now)] += 1
        return True

    def change(self, tick: int, stall: int = 0, factor: float = 1.0) -> None:
        super().change(tick, stall, factor)  # the set's capacity, as the flow engine's
        if len(self.shards) > 1:
            for shard in self.shards:
                shard.stalls += stall
                shard.factor *= factor

    def batch(self, count: int) -> None:
        """``count`` links arrive now: each is looked up, and each new one starts its walk
        from here when its lookup ends (a process only for those)."""
        run = self.run
        now = run.env.now
        tick = run.k(now)
        measured = now >= run.warmup_s
        for _ in range(count):
            end = self.look_up(now, links=True)
            if end is not None:
                url = Url(now, tick, measured)
                run.sample(self.name, url, end - now)
                self.start_from(self, url, end)


class LinksStage(Stage):
    """Links found on pages: each page a tee edge copies here yields Poisson(links per
    page) new URLs, sent along its one edge (:meth:`page`); it fails and holds nothing."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...]) -> None:
        super().__init__(run, node, causes)
        from gym.sim.timeline import links_schedule

        self.per_page = links_schedule(node.params.links_per_page, run.scenario, run.timeline)
        self.rng = stream(run.seed, node.name)
        self.draws: list[int] = []
        self.drawn_for = -1.0
        self.target: LookupStage
        self.delay = 0.0
        self.rng_waits = stream(run.seed, f"{node.name}/waits")
        self.waits: list[float] = []

    def spread(self, count: int) -> list[float]:
        """The waits of a page's ``count`` links: uniform over (0, 2 x the delay]."""
        if len(self.waits) < count:
            self.waits.extend(self.rng_waits.random(max(8192, count)).tolist())
        most = 2.0 * self.delay
        return [most * (1.0 - self.waits.pop()) for _ in range(count)]

    def page(self, now: float) -> int:
        """A page is fetched at ``now``: the number of links it yields (counted here)."""
        run, log = self.run, self.log
        k = run.k(now)
        per = float(self.per_page[min(k, run.n - 1)])
        if per != self.drawn_for:
            self.draws, self.drawn_for = [], per
        if not self.draws:
            self.draws = self.rng.poisson(per, 8192).tolist()
        count = int(self.draws.pop())
        log.arrived[k] += 1
        log.processed[k] += 1
        log.out[k] += count
        return count

    def visit(self, url: Url, me: Any) -> Generator[simpy.Event, Any, bool]:
        raise AssertionError("links are made by pages (LinksStage.page), not visited")
        yield

    def tally(self) -> Tally:
        run = self.run
        tally = self.log.tally(np.zeros(run.n, dtype=np.int64))
        tally.backlog = np.zeros(run.n, dtype=np.int64)  # it makes URLs; it holds none
        return tally


class WriteBufferStage(Stage):
    """A write buffer: a write its store has a slot for goes straight in; otherwise it is
    held (up to ``buffer``; beyond, it fails) and flushed each tick into the store slots
    left below ``flush_ceiling``."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...]) -> None:
        super().__init__(run, node, causes, extra=("held_in", "flushed"))
        self.held: deque[simpy.Event] = deque()
        self.idle: simpy.Event | None = None
        self.store: LossStation

    def connect(self, inputs: Sequence[Stage], outputs: Sequence[Stage]) -> None:
        store = outputs[0]
        assert isinstance(store, LossStage)
        self.store = store.station

    def visit(self, url: Url, me: Any) -> Generator[simpy.Event, Any, bool]:
        run, log = self.run, self.log
        now = run.env.now
        k = run.k(now)
        log.arrived[k] += 1
        log.processed[k] += 1
        if self.store.admit(now) is None:
            log.out[k] += 1
            url.end = self.store.occupy(now)
            run.sample(self.name, url, 0.0)
            return True
        log.extra["held_in"][k] += 1  # had to be held (or overflowed): the buffer's demand
        if len(self.held) >= self.params.buffer:
            log.processed[k] -= 1
            log.failed[next(iter(log.failed))][k] += 1
            return False
        ev = run.env.event()
        self.held.append(ev)
        if self.idle is not None and not self.idle.triggered:
            self.idle.succeed()
        url.end = yield ev  # the flusher took a store slot for this write
        run.sample(self.name, url, run.env.now - now)
        return True

    def start(self) -> None:
        self.run.env.process(self._flusher())

    def _flusher(self) -> Generator[simpy.Event, Any, None]:
        """Each tick, send held writes into the store slots left below the ceiling."""
        run, log, store = self.run, self.log, self.store
        ceiling = flush_slots(self.params.flush_ceiling, store.slots)
        while True:
            if not self.held:
                self.idle = run.env.event()
                yield self.idle
                self.idle = None
                continue
            k = run.k(run.env.now)
            if not store.stalls:
                now = run.env.now
                room = ceiling - store.busy(now)
                while room > 0 and self.held:
                    log.out[k] += 1
                    log.extra["flushed"][k] += 1
                    self.held.popleft().succeed(store.occupy(now))
                    room -= 1
            yield run.at(k + 1)  # on the tick grid, as the flow engine flushes

    def tally(self) -> Tally:
        buffer = self.params.buffer
        return self.log.tally(np.full(self.run.n, buffer, dtype=np.int64), limit=buffer)


class Engine:
    """One request-engine run of a topology."""

    def __init__(
        self,
        graph: Topology,
        scenario: Scenario,
        seed: int,
        timeline: Timeline,
        warmup_s: float,
        progress: Progress | None,
    ) -> None:
        self.graph, self.scenario, self.timeline = graph, scenario, timeline
        self.env = simpy.Environment()
        self.run_ = Run(self.env, timeline, seed, warmup_s, scenario)
        self.progress = progress
        self.order = graph.order()
        sources = [n for n in self.order if kinds.kind(graph.node(n).kind).source]
        self.source = sources[0]  # one source per graph (gym.system.graph)
        self.offered = arrival_counts(scenario, timeline, stream(seed, self.source))
        self.rng_times = stream(seed, "arrival_times")
        self.even = scenario.arrivals == "deterministic"
        self.stages: dict[str, Stage] = {}
        for name in self.order:
            node = graph.node(name)
            k = kinds.kind(node.kind)
            if not k.source:
                assert k.request is not None
                self.stages[name] = k.request(self.run_, node, node.causes(k.causes))
        for name, stage in self.stages.items():
            stage.connect(
                [self.stages[e.source] for e in graph.inputs(name) if e.source in self.stages],
                [self.stages[e.target] for e in graph.outputs(name)],
            )
        # Where each URL goes from each node: (targets, cumulative shares, delays in s).
        self.routes: dict[str, tuple[list[Stage], list[float], list[float]]] = {}
        for name in self.order:
            out = graph.outputs(name)
            shares = list(itertools.accumulate(e.share for e in out))
            self.routes[name] = (
                [self.stages[e.target] for e in out],
                shares,
                [e.delay_ticks(timeline.tick_ms) * timeline.tick_s for e in out],
            )
        self.rng_route = {
            name: stream(seed, f"{name}/route")
            for name in self.order
            if len(graph.outputs(name)) > 1
        }
        self.route_draws: dict[str, list[float]] = {name: [] for name in self.rng_route}
        self.transit = dict.fromkeys(self.stages, 0)  # URLs on delayed edges, by target
        # Tees: the links stages a node's passed-on URLs are copied to (each a page).
        self.tees: dict[str, list[LinksStage]] = {}
        for name in self.order:
            for e in graph.tees(name):
                links = self.stages[e.target]
                assert isinstance(links, LinksStage)
                self.tees.setdefault(name, []).append(links)
                (edge,) = graph.outputs(e.target)
                target = self.stages[edge.target]
                assert isinstance(target, LookupStage)
                links.target = target
                links.delay = edge.delay_ticks(timeline.tick_ms) * timeline.tick_s
        for stage in self.stages.values():
            if isinstance(stage, LookupStage):
                stage.start_from = self._start_from

    def _next(self, name: str) -> tuple[Stage | None, float]:
        """The stage a URL leaving ``name`` goes to (None: finished there) and its delay."""
        targets, shares, delays = self.routes[name]
        if not targets:
            return None, 0.0
        if len(targets) == 1:
            return targets[0], delays[0]
        draws = self.route_draws[name]
        if not draws:
            draws.extend(self.rng_route[name].random(8192).tolist())
        u = draws.pop() * shares[-1]
        i = next((i for i, s in enumerate(shares) if u < s), len(shares) - 1)
        return targets[i], delays[i]

    def url(self, t_arrive: float) -> Generator[simpy.Event, Any, None]:
        run = self.run_
        url = Url(t_arrive, run.k(t_arrive), t_arrive >= run.warmup_s)
        yield from self._walk(url, None, *self._next(self.source))

    def _start_from(self, stage: Stage, url: Url, at: float) -> None:
        """Start ``url`` on its way from ``stage``, which it leaves at ``at``."""
        self.env.process(self._leave(stage, url, at))

    def _leave(self, stage: Stage, url: Url, at: float) -> Generator[simpy.Event, Any, None]:
        env = self.env
        yield env.timeout(at - env.now)
        stage.log.out[self.run_.k(env.now)] += 1
        yield from self._walk(url, stage, *self._next(stage.name))

    def _links(self, links: LinksStage) -> None:
        """A page passed a tee: its links go to the seen set, spread evenly over twice the
        edge's delay (each at its own instant, the delay their mean: a parser emits them
        one by one, not at once)."""
        count = links.page(self.env.now)
        if not count:
            return
        target = links.target
        if not links.delay:
            target.batch(count)
            return
        self.transit[target.name] += count

        def arrive(_event: simpy.Event) -> None:
            self.transit[target.name] -= 1
            target.batch(1)

        for wait in links.spread(count):
            self.env.timeout(wait).callbacks.append(arrive)

    def _walk(
        self, url: Url, last: Stage | None, stage: Stage | None, delay: float
    ) -> Generator[simpy.Event, Any, None]:
        run, env = self.run_, self.env
        me = env.active_process
        while stage is not None:
            if delay:  # on a delayed edge: in flight, on the way to the stage
                self.transit[stage.name] += 1
                yield env.timeout(delay)
                self.transit[stage.name] -= 1
            go_on = yield from stage.visit(url, me)
            if not go_on:
                return
            for links in self.tees.get(stage.name, ()):
                self._links(links)
            last = stage
            stage, delay = self._next(stage.name)
        # Passed on by a node with no outgoing edge that does not serve by itself.
        assert last is not None
        last.log.out[run.k(env.now)] -= 1
        last.log.served[run.k(env.now)] += 1
        run.sample("end_to_end", url, env.now - url.t_arrive)

    def _arrive(self, ev: simpy.Event) -> None:
        _ArrivedProcess(self.env, self.url(self.env.now))._resume(ev)

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
        for stage in self.stages.values():
            stage.start()
        for fault in self.scenario.faults:
            start, end = tl.fault_ticks(fault)
            # The node's kind suffers this fault (gym.api.graph_check).
            target = self.stages[fault.target]
            if isinstance(fault, CrashFault):
                env.process(target.crash(fault, start, end))
            else:
                assert end is not None  # stalls and slowdowns always end
                env.process(_faults(target, fault, start, end))
        run_until(env, tl.n_ticks * tl.tick_s)
        return self._record()

    def _record(self) -> RunRecord:
        run = self.run_
        tallies = {name: stage.tally() for name, stage in self.stages.items()}
        in_flight = {name: int(t.backlog[-1]) for name, t in tallies.items()}
        for name, count in self.transit.items():
            in_flight[name] += count
        causes = tuple(c for s in self.stages.values() for c in s.log.failed)
        # Links stages make URLs: part of what was offered, not components of the record.
        makers = [n for n, s in self.stages.items() if isinstance(s, LinksStage)]
        created = {n: tallies.pop(n).out for n in makers}
        for name in makers:
            in_flight.pop(name)
        offered = self.offered + sum(created.values(), np.zeros_like(self.offered))
        record = RunRecord(
            "request",
            0,
            self.timeline,
            offered,
            tallies,
            in_flight,
            causes=causes,
            created=created,
        )
        record.latency = latency_of(run.samples, run.sample_ticks)
        record.check_conservation()
        return record


def run(
    graph: Topology,
    scenario: Scenario,
    *,
    seed: int,
    timeline: Timeline,
    warmup_s: float = 0.0,
    progress: Progress | None = None,
) -> RunRecord:
    """Simulate ``graph`` under ``scenario``, one SimPy process per URL."""
    record = Engine(graph, scenario, seed, timeline, warmup_s, progress).run()
    record.seed = seed
    return record
