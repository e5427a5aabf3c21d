"""The flow engine: integer counts of URLs per tick through the pipeline, on SimPy.

Build: one component per design key, wired client -> frontier -> fetchers -> cache ->
resolver -> [async_writer] -> page_store. Connect: each scenario event becomes a SimPy
process on the component it acts on (a load stage on the client, a crash on the fleet,
a stall or a slowdown on its target). Simulate: SimPy runs the timeline; every event
first brings the pipeline up to its instant, in order, then changes state. Collect: the
components' per-tick tallies become a :class:`~gym.record.RunRecord`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

import simpy

from gym import latency
from gym.components import (
    AsyncWriter,
    Cache,
    Client,
    Component,
    FetcherFleet,
    Frontier,
    Ledger,
    PageStore,
    RatedComponent,
    Resolver,
)
from gym.costing import cache_capacity_rps, politeness
from gym.models import CrashFault, Design, Scenario, StallFault
from gym.record import RunRecord
from gym.streams import stream
from gym.timeline import Timeline


def run(
    design: Design,
    scenario: Scenario,
    *,
    seed: int,
    timeline: Timeline,
    warmup_s: float = 0.0,
    progress: object = None,
    step: int | None = None,
) -> RunRecord:
    """Simulate ``design`` under ``scenario`` with the flow engine (``progress`` is unused:
    a flow run takes milliseconds).

    Components advance over the whole interval between two timeline events. ``step``
    also advances them every ``step`` ticks; the results do not depend on it (the tests
    check that every per-tick array is the same tick by tick as in one stride)."""
    env = simpy.Environment()
    ledger = Ledger(n_ticks=timeline.n_ticks, tick_ms=timeline.tick_ms)

    # Build and connect, in pipeline order.
    client = Client(env, stream(seed, "client"), ledger, scenario)
    fleet = FetcherFleet(env, stream(seed, "fetchers"), ledger, design.fetchers)
    polite = politeness(design, scenario)
    bloom = design.dedup.fp_rate if design.dedup.seen_set == "bloom" else 0.0
    frontier = Frontier(
        env,
        stream(seed, "frontier"),
        ledger,
        design.frontier,
        client,
        fleet,
        rate=polite.limit_rps,
        seen_fraction=scenario.dedup.seen_url_fraction,
        false_positive_rate=bloom,
    )
    fleet.upstream = frontier
    cache = Cache(
        env,
        stream(seed, "cache"),
        ledger,
        design.cache.hit_ratio,
        cache_capacity_rps(design, scenario.catalog),
        design.cache.service,
        fleet,
    )
    duplicates = scenario.dedup.duplicate_body_fraction if design.dedup.content_hash else 0.0
    resolver = Resolver(env, stream(seed, "resolver"), ledger, scenario.resolver, cache, duplicates)
    store = PageStore(env, stream(seed, "page_store"), ledger, design.page_store)
    writer: AsyncWriter | None = None
    if design.async_writer is not None:
        writer = AsyncWriter(
            env, stream(seed, "async_writer"), ledger, design.async_writer, resolver, store
        )
        store.upstream = writer
        store.gated = True
    else:
        store.upstream = resolver
    pipeline: list[Component] = [client, frontier, fleet, cache, resolver]
    if writer is not None:
        pipeline.append(writer)
    pipeline.append(store)

    def sync(tick: int) -> None:
        for component in pipeline:
            component.advance(tick)

    ledger.sync = sync

    # The timeline: one SimPy process per scenario event, on the component it acts on.
    for stage in scenario.load:
        env.process(client.load_stage(timeline.to_tick(stage.at_s), stage.multiplier))
    # Stalls and slowdowns act on a rated component, found by its name.
    targets = {c.name: c for c in pipeline if isinstance(c, RatedComponent)}
    for fault in scenario.faults:
        start, end = timeline.fault_ticks(fault)
        if isinstance(fault, CrashFault):
            env.process(fleet.crash(fault, start, end))
        else:
            assert end is not None  # stalls and slowdowns always end
            target = targets[fault.target]
            if isinstance(fault, StallFault):
                env.process(target.stall(fault, start, end))
            else:
                env.process(target.slowdown(fault, start, end))

    if step is not None:
        env.process(_every(env, step, sync))
    env.run(until=timeline.n_ticks)
    sync(timeline.n_ticks)

    record = RunRecord.collect(
        timeline=timeline,
        engine="flow",
        seed=seed,
        offered=client.out,
        components=pipeline[1:],  # the client offers; the rest hold, serve or fail URLs
    )
    record.latency = latency.estimate_flow(record, design, scenario, warmup_s)
    return record


def _every(
    env: simpy.Environment, step: int, sync: Callable[[int], None]
) -> Generator[simpy.Event, None, None]:
    """Bring every component up to date each ``step`` ticks."""
    while True:
        yield env.timeout(max(1, step))
        sync(int(env.now))
