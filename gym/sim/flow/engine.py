"""The flow engine: integer counts of URLs per tick through a topology, on SimPy.

Build: one component per node of the topology (:mod:`gym.system.topology`), by its kind
(:mod:`gym.system.kinds`); a crawler design is the built-in crawler graph
(:mod:`gym.system.crawler`),
client -> frontier -> fetchers -> cache -> resolver -> [async_writer] -> page_store.
Connect: each component to the ones its edges join it to, and each scenario event becomes
a SimPy process on the node it acts on (a load stage on the sources, a crash on a fleet, a
stall or a slowdown on its target). Simulate: SimPy runs the timeline; every event first
brings every component up to its instant, in the topology's order, then changes state.
Collect: the components' per-tick tallies become a :class:`~gym.sim.record.RunRecord`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Generator
from typing import Protocol, runtime_checkable

import numpy as np
import simpy

from gym.core.streams import stream
from gym.models import CrashFault, Design, Scenario, SlowdownFault, StallFault
from gym.sim import latency
from gym.sim.flow import fluid, graph_latency
from gym.sim.flow.base import Build, Component, Ledger
from gym.sim.flow.junction import Delay, Junction, Splitter
from gym.sim.flow.loss import LossStation
from gym.sim.flow.rules import RULES
from gym.sim.flow.source import Source
from gym.sim.record import RunRecord
from gym.sim.timeline import Timeline
from gym.system import crawler, kinds
from gym.system.graph import GraphDesign
from gym.system.topology import Topology


def run(
    design: Design | GraphDesign,
    scenario: Scenario,
    *,
    seed: int,
    timeline: Timeline,
    topology: Topology,
    warmup_s: float = 0.0,
    progress: object = None,
    step: int | None = None,
) -> RunRecord:
    """Simulate ``design`` under ``scenario`` with the flow engine: ``topology`` is the
    design's, built once when the run starts (``progress`` is unused: a flow run takes
    milliseconds).

    Components advance over the whole interval between two timeline events. ``step``
    also advances them every ``step`` ticks; the results do not depend on it (the tests
    check that every per-tick array is the same tick by tick as in one stride)."""
    if isinstance(design, Design):
        record = run_graph(topology, scenario, seed, timeline, step, causes=crawler.causes(design))
        # Through a weak reference: the record holds the estimate, which must not hold the
        # record (a cycle would keep every unread run of a sweep until the cyclic GC ran).
        of = weakref.ref(record)
        record.latency = latency.Deferred(
            lambda: latency.estimate_flow(_alive(of), design, scenario, warmup_s)
        )
    else:
        built: dict[str, Component] = {}
        record = run_graph(topology, scenario, seed, timeline, step, built=built)
        got = fluid.captured(topology, built)
        of = weakref.ref(record)
        record.latency = latency.Deferred(
            lambda: graph_latency.estimate(_alive(of), topology, got, seed=seed, warmup_s=warmup_s)
        )
    return record


def _alive(ref: weakref.ReferenceType[RunRecord]) -> RunRecord:
    record = ref()
    assert record is not None  # the record holds the estimate that asks for it
    return record


def run_graph(
    graph: Topology,
    scenario: Scenario,
    seed: int,
    timeline: Timeline,
    step: int | None = None,
    causes: tuple[str, ...] | None = None,
    built: dict[str, Component] | None = None,
) -> RunRecord:
    """Run any topology: one component per node, built by its kind, connected along the
    edges and advanced in the topology's order; the scenario's events act on the nodes
    they name. ``causes``: the failure causes the record lists (by default every node's,
    in the topology's order); ``built``, if given, receives each node's component."""
    env = simpy.Environment()
    ledger = Ledger(n_ticks=timeline.n_ticks, tick_ms=timeline.tick_ms)
    build = Build(env=env, ledger=ledger, seed=seed, scenario=scenario, timeline=timeline)
    order = graph.order()
    built = {} if built is None else built
    for name in order:
        node = graph.node(name)
        k = kinds.kind(node.kind)
        component = RULES[node.kind].build(build, node)
        if not k.source:
            component.named(name, node.causes(k.causes))
        component.holds_work = k.holds_work
        built[name] = component
    # Where a node's output divides (several outgoing edges) a splitter sends each URL
    # along one edge; where several edges reach a node a junction adds them.
    splitters: dict[str, Splitter] = {}
    feeds: dict[tuple[str, str], Component] = {}
    for name in order:
        out = graph.outputs(name)
        if len(out) > 1:
            rngs = [stream(seed, f"{name}->{e.target}") for e in out]
            splitter = Splitter(env, rngs, ledger, built[name], [e.share for e in out])
            splitters[name] = splitter
            feeds.update({(name, e.target): p for e, p in zip(out, splitter.ports, strict=True)})
        else:
            feeds.update({(name, e.target): built[name] for e in out})
        # A tee sees what the node passes on, whatever edge each URL then takes.
        feeds.update({(name, e.target): built[name] for e in graph.tees(name)})
    # An edge with a delay hands its feeder's output on that many ticks later.
    delays: dict[str, list[Delay]] = {}
    for e in graph.edges:
        if ticks := e.delay_ticks(timeline.tick_ms):
            delay = Delay(env, ledger, feeds[(e.source, e.target)], ticks)
            feeds[(e.source, e.target)] = delay
            delays.setdefault(e.target, []).append(delay)
    junctions: dict[str, Junction] = {}
    for name in order:
        inputs = [feeds[(e.source, name)] for e in graph.inputs(name)]
        if len(inputs) > 1:
            junctions[name] = Junction(env, stream(seed, f"{name}/join"), ledger, inputs)
            inputs = [junctions[name]]
        outputs = [built[e.target] for e in graph.outputs(name)]
        RULES[graph.node(name).kind].connect(built[name], inputs, outputs)
    # A retry policy on a loss station: its failures come back to it after their waits.
    retry_strides = []
    for name in order:
        node = graph.node(name)
        if node.retry is not None:
            station = built[name]
            assert isinstance(station, LossStation)
            retry_strides.append(station.retry(node.retry, stream(seed, f"{name}/retry")))
    pipeline: list[Component] = []
    for name in order:
        pipeline += delays.get(name, [])
        if name in junctions:
            pipeline.append(junctions[name])
        pipeline.append(built[name])
        if name in splitters:
            pipeline.append(splitters[name])

    # With delayed edges, in strides no longer than the shortest delay: a delayed edge
    # reads only ticks its feeder has computed (the feeder may come later in the order).
    # With retries, in strides no longer than the shortest wait (a stretch's failures come
    # back after it).
    waits = [d.ticks for ds in delays.values() for d in ds] + retry_strides
    stride = min(waits, default=None)
    synced = [0]

    def sync(tick: int) -> None:
        while synced[0] < tick:
            t = tick if stride is None else min(tick, synced[0] + stride)
            for component in pipeline:
                component.advance(t)
            synced[0] = t

    ledger.sync = sync

    # The timeline: one SimPy process per scenario event, on the component it acts on.
    offers = [n for n in order if kinds.kind(graph.node(n).kind).source]
    sources = [built[n] for n in offers]  # each offers the load: a load_stage process
    for stage in scenario.load:
        for source in sources:
            assert isinstance(source, Source)  # the source kind's component
            env.process(source.load_stage(timeline.to_tick(stage.at_s), stage.multiplier))
    for fault in scenario.faults:
        start, end = timeline.fault_ticks(fault)
        target = built[fault.target]
        # The node's kind says it suffers this fault (gym.api.graph_check); its
        # component has the process for it.
        if isinstance(fault, CrashFault):
            assert isinstance(target, Crashable)
            env.process(target.crash(fault, start, end))
        else:
            assert end is not None and isinstance(target, Faultable)
            if isinstance(fault, StallFault):
                env.process(target.stall(fault, start, end))
            else:
                env.process(target.slowdown(fault, start, end))

    if step is not None:
        env.process(_every(env, step, sync))
    env.run(until=timeline.n_ticks)
    sync(timeline.n_ticks)
    # What a node without an outgoing edge passes on is finished there (served).
    for name in order:
        component = built[name]
        if not graph.leaving(name) and name not in offers and component.out.any():
            component.served = component.served + component.out
            component.out = np.zeros_like(component.out)

    # Nodes that make URLs (links found on pages) add them to what the run offered.
    makers = [n for n in order if kinds.kind(graph.node(n).kind).creates]
    return RunRecord.collect(
        timeline=timeline,
        engine="flow",
        seed=seed,
        offered=sources[0].out,  # one source per graph (gym.system.graph)
        # the sources offer; the rest hold, serve or fail URLs
        components=[built[n] for n in order if n not in offers and n not in makers],
        created={n: built[n].out for n in makers},
        causes=causes or tuple(cause for n in order for cause in built[n].causes),
        # URLs on a delayed edge at the end are in flight, on the way to its target.
        in_transit={name: sum(d.in_transit() for d in ds) for name, ds in delays.items()},
    )


@runtime_checkable
class Crashable(Protocol):
    """A component whose replicas can crash (a fleet)."""

    def crash(
        self, fault: CrashFault, start: int, end: int | None
    ) -> Generator[simpy.Event, None, None]: ...


@runtime_checkable
class Faultable(Protocol):
    """A component with a rate that stalls and slowdowns act on."""

    def stall(
        self, fault: StallFault, start: int, end: int
    ) -> Generator[simpy.Event, None, None]: ...

    def slowdown(
        self, fault: SlowdownFault, start: int, end: int
    ) -> Generator[simpy.Event, None, None]: ...


def _every(
    env: simpy.Environment, step: int, sync: Callable[[int], None]
) -> Generator[simpy.Event, None, None]:
    """Bring every component up to date each ``step`` ticks."""
    while True:
        yield env.timeout(max(1, step))
        sync(int(env.now))
