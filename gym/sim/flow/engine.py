"""The flow engine: integer counts of URLs per tick through a topology, on SimPy.

Build: one component per node of the topology (:mod:`gym.system.topology`), by its kind
(:mod:`gym.system.kinds`); every design is a graph by then (a crawler design the one its
loading compiles, :func:`gym.system.compiled.system_topology`).
Connect: each component to the ones its edges join it to, and each scenario event becomes
a SimPy process on the node it acts on (a load stage on the sources, a crash on a fleet, a
stall or a slowdown on its target). Simulate: SimPy runs the timeline; every event first
brings every component up to its instant, in the topology's order, then changes state.
Collect: the components' per-tick tallies become a :class:`~gym.sim.record.RunRecord`.
"""

from __future__ import annotations

import weakref
from collections.abc import Generator, Sequence
from functools import partial
from typing import Any, Protocol, runtime_checkable

import numpy as np
import simpy

from gym.core.streams import stream
from gym.models import CrashFault, Scenario, SlowdownFault, StallFault
from gym.sim import latency
from gym.sim.flow import fluid, graph_latency
from gym.sim.flow.base import NO_DRAWS, Build, Component, Ledger, PerRow, RowView, Stacked
from gym.sim.flow.junction import Delay, Junction, Splitter
from gym.sim.flow.loss import LossStation
from gym.sim.flow.rules import rule_for
from gym.sim.flow.source import Source
from gym.sim.record import RunRecord
from gym.sim.timeline import Timeline
from gym.system import kinds
from gym.system.topology import Topology


def run(
    scenario: Scenario,
    *,
    seed: int,
    timeline: Timeline,
    topology: Topology,
    warmup_s: float = 0.0,
    progress: object = None,
    step: int | None = None,
) -> RunRecord:
    """Simulate ``topology`` (a design's graph, built once when the run starts: a crawler
    design's the one its loading compiles) under ``scenario`` with the flow engine
    (``progress`` is unused: a flow run takes milliseconds).

    Components advance over the whole interval between two timeline events. ``step``
    also advances them every ``step`` ticks; the results do not depend on it (the tests
    check that every per-tick array is the same tick by tick as in one stride)."""
    return run_many(
        scenario,
        seeds=[seed],
        timeline=timeline,
        topology=topology,
        warmup_s=warmup_s,
        step=step,
    )[0]


def run_many(
    scenario: Scenario,
    *,
    seeds: Sequence[int],
    timeline: Timeline,
    topology: Topology,
    warmup_s: float = 0.0,
    step: int | None = None,
) -> list[RunRecord]:
    """The runs of ``topology`` under ``scenario`` for each of ``seeds``, advanced together
    (a batch): record k is the one :func:`run` gives for ``seeds[k]``, to the last digit."""
    built: list[dict[str, Component]] = [{} for _ in seeds]
    records = run_graph(topology, scenario, seeds, timeline, step, built=built)
    for record, seed, got in zip(records, seeds, built, strict=True):
        # Through a weak reference: the record holds the estimate, which must not hold the
        # record (a cycle would keep every unread run of a sweep until the cyclic GC ran).
        of = weakref.ref(record)
        captured = fluid.captured(topology, got)
        record.latency = latency.Deferred(
            partial(_graph_latency, of, topology, captured, seed, warmup_s)
        )
    # The records hold what they need (their tallies' arrays). The components refer to one
    # another (a queue to its fleet and back, a loop's edges): unlinked now, a batch's
    # arrays go when its records go, not at the next full cyclic collection (a sweep's
    # batches would pile up until then).
    for got in built:
        for component in got.values():
            whole = component.whole() if isinstance(component, RowView) else component
            whole.__dict__.clear()
    return records


def _graph_latency(
    of: weakref.ReferenceType[RunRecord],
    topology: Topology,
    captured: dict[str, np.ndarray],
    seed: int,
    warmup_s: float,
) -> dict[str, latency.Samples]:
    return graph_latency.estimate(_alive(of), topology, captured, seed=seed, warmup_s=warmup_s)


def _alive(ref: weakref.ReferenceType[RunRecord]) -> RunRecord:
    record = ref()
    assert record is not None  # the record holds the estimate that asks for it
    return record


class Each:
    """One node of a batch of runs by a kind with no batched component: a component per
    run, each built, connected and advanced as in a run of its own."""

    def __init__(self, parts: list[Component]) -> None:
        self.parts = parts

    def advance(self, t1: int) -> None:
        for part in self.parts:
            part.advance(t1)

    def row(self, k: int) -> Component:
        return self.parts[k]


def _whole(parts: Sequence[Component]) -> Component | None:
    """The batched component each run's ``parts`` are rows of (a batch of two runs or
    more), or None: each run has its own."""
    first = parts[0]
    if len(parts) < 2 or not isinstance(first, RowView):
        return None
    whole = first.whole()
    return whole if all(isinstance(p, RowView) and p.whole() is whole for p in parts) else None


def _batch_of(parts: list[Component]) -> Any:
    """Each run's component of one node (or edge), as a batched component reads it: the
    batched component itself, or the runs' own as a :class:`Stacked` (read as one)."""
    first = parts[0]
    if isinstance(first, RowView):
        return first.whole()
    return Stacked(parts)


def run_graph(
    graph: Topology,
    scenario: Scenario,
    seeds: Sequence[int],
    timeline: Timeline,
    step: int | None = None,
    built: list[dict[str, Component]] | None = None,
) -> list[RunRecord]:
    """Run any topology, once per seed, the runs advanced together: one component per node
    and run, built by its kind, connected along the edges and advanced in the topology's
    order; the scenario's events act on the nodes they name. ``built``, if given,
    receives each run's components by node."""
    batch = _Batch(graph, scenario, seeds, timeline, built)
    batch.build()
    batch.connect()
    batch.schedule(step)
    return batch.run()


class _Batch:
    """The runs of one topology advanced together, in the phases of a run: build a
    component per node (and run), connect them along the edges, schedule the timeline's
    events, run, collect a record per run."""

    def __init__(
        self,
        graph: Topology,
        scenario: Scenario,
        seeds: Sequence[int],
        timeline: Timeline,
        built: list[dict[str, Component]] | None,
    ) -> None:
        self.graph, self.scenario, self.seeds, self.timeline = graph, scenario, seeds, timeline
        self.env = simpy.Environment()
        self.ledger = Ledger(n_ticks=timeline.n_ticks, tick_ms=timeline.tick_ms)
        self.runs = range(len(seeds))
        self.order = graph.order()
        self.built: list[dict[str, Component]] = [{} for _ in self.runs] if built is None else built
        self.nodes: dict[str, Each | Component] = {}
        self.splitters: dict[str, Each | Component] = {}
        self.junctions: dict[str, Each | Component] = {}
        self.delays: dict[str, list[Each | Component]] = {}
        #: What each edge carries, per run: the source's rows, a splitter's port, a delay.
        self.feeds: dict[tuple[str, str], list[Component]] = {}
        self.strides: list[int] = []  # the longest stride each delay or retry allows
        self.pipeline: list[Each | Component] = []  # in the order they advance
        self.offers: list[str] = []  # the sources
        self.synced = 0  # the tick every component has reached

    def build(self) -> None:
        """A component per node, by its kind's rule: one batched component for all the
        runs where the kind has one for this node, else one per run."""
        env, ledger, scenario, timeline = self.env, self.ledger, self.scenario, self.timeline
        builds = [Build(env, ledger, seed, scenario, timeline, self.graph) for seed in self.seeds]
        for name in self.order:
            node = self.graph.node(name)
            k = kinds.kind(node.kind)
            rule = rule_for(node.kind)
            batched = rule.batch(builds, node) if rule.batch and len(builds) > 1 else None
            parts = [rule.build(b, node) for b in builds] if batched is None else [batched]
            for component in parts:
                if not k.source:
                    component.named(name, node.causes(k.causes))
                component.holds_work, component.creates = k.holds_work, k.creates
            self.nodes[name] = Each(parts) if batched is None else batched
            for r in self.runs:
                self.built[r][name] = self.nodes[name].row(r)

    def connect(self) -> None:
        """Splitters where a node's output divides, delays on delayed edges, junctions
        where edges meet; each kind connects its component; retries; the order in which
        everything advances."""
        for name in self.order:
            self._split(name)
        for e in self.graph.edges:
            self._delay(e.source, e.target, e.delay_ticks(self.timeline.tick_ms))
        for name in self.order:
            self._join_and_connect(name)
        for name in self.order:
            self._retry(name)
        for name in self.order:
            self.pipeline += self.delays.get(name, [])
            if name in self.junctions:
                self.pipeline.append(self.junctions[name])
            self.pipeline.append(self.nodes[name])
            if name in self.splitters:
                self.pipeline.append(self.splitters[name])

    def _split(self, name: str) -> None:
        """Where ``name``'s output divides, a splitter sends each URL along one edge (a
        stream per edge); a tee sees what the node passes on, whatever edge it takes."""
        out = self.graph.outputs(name)
        rows = [self.built[r][name] for r in self.runs]
        if len(out) > 1:
            shares = [e.share for e in out]
            whole = _whole(rows)
            if whole is not None:  # one splitter for the batch, each run's streams
                rngs: list[Any] = [
                    PerRow(stream(seed, f"{name}->{e.target}") for seed in self.seeds) for e in out
                ]
                split = Splitter(self.env, rngs, self.ledger, whole, shares, rows=len(rows))
                self.splitters[name] = split
                ports = [[port.row(r) for r in self.runs] for port in split.ports]
            else:
                splits = [
                    Splitter(
                        self.env,
                        [stream(seed, f"{name}->{e.target}") for e in out],
                        self.ledger,
                        c,
                        shares,
                    )
                    for seed, c in zip(self.seeds, rows, strict=True)
                ]
                self.splitters[name] = Each(list(splits))
                ports = [[s.ports[i] for s in splits] for i in range(len(out))]
            for e, feeds in zip(out, ports, strict=True):
                self.feeds[(name, e.target)] = feeds
        else:
            self.feeds.update({(name, e.target): rows for e in out})
        self.feeds.update({(name, e.target): rows for e in self.graph.tees(name)})

    def _delay(self, source: str, target: str, ticks: int) -> None:
        """An edge with a delay hands its feeder's output on ``ticks`` later."""
        if not ticks:
            return
        feeds = self.feeds[(source, target)]
        whole = _whole(feeds)
        delay: Each | Component
        if whole is not None:
            delay = Delay(self.env, self.ledger, whole, ticks, rows=len(feeds))
            self.feeds[(source, target)] = [delay.row(r) for r in self.runs]
        else:
            parts = [Delay(self.env, self.ledger, f, ticks) for f in feeds]
            self.feeds[(source, target)] = list(parts)
            delay = Each(list(parts))
        self.delays.setdefault(target, []).append(delay)
        self.strides.append(ticks)  # a delayed edge reads only ticks its feeder computed

    def _join_and_connect(self, name: str) -> None:
        """Where several edges reach ``name`` a junction adds them; then its kind's rule
        connects its component (each run's, or the batched one to batches)."""
        inputs = [self.feeds[(e.source, name)] for e in self.graph.inputs(name)]
        if len(inputs) > 1:
            inputs = [self._join(name, inputs)]
        connect = rule_for(self.graph.node(name).kind).connect
        built, targets = self.built, [e.target for e in self.graph.outputs(name)]
        node_of = self.nodes[name]
        if isinstance(node_of, Each):
            for r in self.runs:
                outputs = [built[r][t] for t in targets]
                connect(built[r][name], [i[r] for i in inputs], outputs)
        else:
            outputs = [_batch_of([built[r][t] for r in self.runs]) for t in targets]
            connect(node_of, [_batch_of(i) for i in inputs], outputs)

    def _join(self, name: str, inputs: list[list[Component]]) -> list[Component]:
        """A junction adding ``inputs`` (each edge's, a component per run) into ``name``'s
        input: one for the batch where each edge's is a batch's; each run's junction."""
        wholes = [w for w in (_whole(i) for i in inputs) if w is not None]
        if len(wholes) == len(inputs):
            join = Junction(self.env, NO_DRAWS, self.ledger, wholes, rows=len(self.runs))
            self.junctions[name] = join
            return [join.row(r) for r in self.runs]
        joins = [
            Junction(self.env, NO_DRAWS, self.ledger, [i[r] for i in inputs]) for r in self.runs
        ]
        self.junctions[name] = Each(list(joins))
        return list(joins)

    def _retry(self, name: str) -> None:
        """A retry policy on a loss station: its failures come back to it after their
        waits (a stretch no longer than the shortest wait)."""
        node = self.graph.node(name)
        if node.retry is None:
            return
        rngs = [stream(seed, f"{name}/retry") for seed in self.seeds]
        node_of = self.nodes[name]
        if not isinstance(node_of, Each):  # one station for the batch, each run's draws
            assert isinstance(node_of, LossStation)
            self.strides.append(node_of.retry(node.retry, PerRow(rngs)))
            return
        for station, rng in zip(node_of.parts, rngs, strict=True):
            assert isinstance(station, LossStation)
            self.strides.append(station.retry(node.retry, rng))

    def sync(self, tick: int) -> None:
        """Advance every component to ``tick``, in strides no longer than the shortest
        delay or retry wait."""
        stride = min(self.strides, default=None)
        while self.synced < tick:
            t = tick if stride is None else min(tick, self.synced + stride)
            for component in self.pipeline:
                component.advance(t)
            self.synced = t

    def _each(self, name: str) -> list[Component]:
        """The components of ``name`` a timeline event acts on: the batched one, or each
        run's."""
        node_of = self.nodes[name]
        return node_of.parts if isinstance(node_of, Each) else [node_of]

    def schedule(self, step: int | None) -> None:
        """One SimPy process per scenario event and run, on the component it acts on
        (each run's in the order a run of its own starts them)."""
        env, timeline = self.env, self.timeline
        self.offers = [n for n in self.order if kinds.kind(self.graph.node(n).kind).source]
        for stage in self.scenario.load:
            for name in self.offers:
                for source in self._each(name):
                    assert isinstance(source, Source)  # the source kind's component
                    env.process(source.load_stage(timeline.to_tick(stage.at_s), stage.multiplier))
        for fault in self.scenario.faults:
            start, end = timeline.fault_ticks(fault)
            for target in self._each(fault.target):
                env.process(_fault_process(target, fault, start, end))
        if step is not None:
            env.process(_every(env, step, self.ledger))

    def run(self) -> list[RunRecord]:
        self.ledger.sync = self.sync
        self.env.run(until=self.timeline.n_ticks)
        self.sync(self.timeline.n_ticks)
        # The events still scheduled (past the end) hold their processes, which reach the
        # components they act on (their tallies are cleared after the batch: run_many)
        # and the ledger, but no longer what syncs every component.
        self.ledger.sync = _unsynced
        return [
            _record(self.graph, self.built[r], seed, self.timeline, self.offers, self.delays, r)
            for r, seed in zip(self.runs, self.seeds, strict=True)
        ]


def _fault_process(
    target: Component, fault: CrashFault | StallFault | SlowdownFault, start: int, end: int | None
) -> Generator[simpy.Event, None, None]:
    """The process of ``fault`` on ``target``: the node's kind suffers it
    (gym.system.graph.problems_under), so its component has the process for it."""
    if isinstance(fault, CrashFault):
        assert isinstance(target, Crashable)
        return target.crash(fault, start, end)
    assert end is not None and isinstance(target, Faultable)
    if isinstance(fault, StallFault):
        return target.stall(fault, start, end)
    return target.slowdown(fault, start, end)


def _record(
    graph: Topology,
    built: dict[str, Component],
    seed: int,
    timeline: Timeline,
    offers: list[str],
    delays: dict[str, list[Each | Component]],
    r: int,
) -> RunRecord:
    """The record of run ``r`` of a batch, from its components ``built``."""
    order = graph.order()
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
        offered=built[offers[0]].out,  # one source per graph (gym.system.graph)
        # the sources offer; the rest hold, serve or fail URLs
        components=[built[n] for n in order if n not in offers and n not in makers],
        created={n: built[n].out for n in makers},
        causes=graph.causes or tuple(cause for n in order for cause in built[n].causes),
        # URLs on a delayed edge at the end are in flight, on the way to its target.
        in_transit={
            name: sum(d.row(r).in_transit() for d in ds)  # type: ignore[attr-defined]
            for name, ds in delays.items()
        },
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


def _unsynced(_tick: int) -> None:
    """A finished run's ledger: nothing left to bring up to date."""


def _every(env: simpy.Environment, step: int, ledger: Ledger) -> Generator[simpy.Event, None, None]:
    """Bring every component up to date each ``step`` ticks (through the ledger, which
    lets go of the components when the run ends)."""
    while True:
        yield env.timeout(max(1, step))
        ledger.sync(int(env.now))
