"""The request engine: one walk of any topology, every URL one event at a time.

Each node's kind has its rule (:mod:`gym.sim.request`, a module per kind); the engine
builds one per node, joins them along the edges and runs the kernel. Where a node has
several outgoing edges each URL takes edge i with chance share i (a stream per node,
``<node>/route``); an edge with a delay holds the URL that long on the way. A tee edge
(to a ``links`` node) sees every URL its node passes on. Faults act on the nodes they
name, on the tick grid. The run ends in the same :class:`~gym.sim.record.RunRecord` as the
flow engine, with per-node and end-to-end latencies.

Every callback stands for an event of the same model written as one SimPy process per
URL (this engine's form until 2026-12), scheduled at the same point: the kernel orders
them as SimPy does, so a run draws the same numbers and gives the same record.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from gym.core.streams import stream
from gym.models import CrashFault, Scenario, StallFault
from gym.sim.record import RunRecord
from gym.sim.request import rule_for
from gym.sim.request.base import Rule, Run, Url, latency_of, run_kernel
from gym.sim.request.kernel import Kernel
from gym.sim.request.source import Progress, SourceRule
from gym.sim.timeline import Timeline
from gym.system import kinds
from gym.system.topology import Topology

Hand = Callable[[Url], None]


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
        self.run_ = run = Run(timeline, seed, warmup_s, scenario)
        self.order = graph.order()
        sources = [n for n in self.order if kinds.kind(graph.node(n).kind).source]
        node = graph.node(sources[0])  # one source per graph (gym.system.graph)
        self.source: SourceRule = rule_for(node.kind)(run, node, ())
        self.source.progress = progress
        self.rules: dict[str, Rule] = {}
        for name in self.order:
            node = graph.node(name)
            k = kinds.kind(node.kind)
            if not k.source:
                self.rules[name] = rule_for(node.kind)(run, node, node.causes(k.causes))
        for name, rule in self.rules.items():
            rule.connect(
                [self.rules[e.source] for e in graph.inputs(name) if e.source in self.rules],
                [self.rules[e.target] for e in graph.outputs(name)],
            )
        # Tees: the rules a node's passed-on URLs are copied to (a links node: each a
        # page), each sending what it makes along its one edge.
        tees: dict[str, list[Rule]] = {}
        for name in self.order:
            for e in graph.tees(name):
                copies = self.rules[e.target]
                tees.setdefault(name, []).append(copies)
                (edge,) = graph.outputs(e.target)
                delay_s = edge.delay_ticks(timeline.tick_ms) * timeline.tick_s
                copies.tee_to(self.rules[edge.target], delay_s)
        self.source.onward = self._onward(self.source.name)
        for name, rule in self.rules.items():
            rule.onward = onward = self._onward(name)
            rule.passed = _with_tees([t.tee for t in tees.get(name, ())], onward)

    def _onward(self, name: str) -> Hand:
        """What hands a URL leaving ``name`` on: along one of its edges, by the shares
        (after the edge's delay), or, with none, served there."""
        run, kernel = self.run_, self.run_.kernel
        out = self.graph.outputs(name)
        if not out:
            last = self.rules[name]
            log = last.log

            def finish(url: Url) -> None:
                # Passed on by a node with no outgoing edge that does not serve by itself.
                k = int(kernel.now * run.per_s + 1e-9)
                log.out[k] -= 1
                log.served[k] += 1
                run.sample("end_to_end", url, kernel.now - url.t)

            return finish
        tick_ms, tick_s = self.timeline.tick_ms, self.timeline.tick_s
        legs = [_leg(kernel, self.rules[e.target], e.delay_ticks(tick_ms) * tick_s) for e in out]
        if len(legs) == 1:
            return legs[0]
        shares = list(itertools.accumulate(e.share for e in out))
        rng = stream(run.seed, f"{name}/route")
        draws: list[float] = []
        last_i = len(shares) - 1

        def route(url: Url) -> None:
            if not draws:
                draws.extend(rng.random(8192).tolist())
            u = draws.pop() * shares[-1]
            i = next((i for i, s in enumerate(shares) if u < s), last_i)
            legs[i](url)

        return route

    def run(self) -> RunRecord:
        run, tl = self.run_, self.timeline
        kernel = run.kernel
        # What a SimPy model starts at 0, in its order: the arrivals, each rule's own
        # work (a flusher), the faults.
        self.source.start()
        for rule in self.rules.values():
            rule.start()
        for fault in self.scenario.faults:
            start, end = tl.fault_ticks(fault)
            # The node's kind suffers this fault (gym.system.graph.problems_under).
            target = self.rules[fault.target]
            if isinstance(fault, CrashFault):
                target.crash(fault, start, end)
            else:
                assert end is not None  # stalls and slowdowns always end
                if isinstance(fault, StallFault):
                    _fault(run, target, start, end, 1, 1.0)
                else:
                    _fault(run, target, start, end, 0, fault.factor)
        kernel.stop_at(tl.n_ticks * tl.tick_s)
        run_kernel(kernel)
        return self._record()

    def _record(self) -> RunRecord:
        run = self.run_
        tallies = {name: rule.tally() for name, rule in self.rules.items()}
        in_flight = {name: int(t.backlog[-1]) for name, t in tallies.items()}
        for name, rule in self.rules.items():
            in_flight[name] += rule.transit
        causes = tuple(c for r in self.rules.values() for c in r.log.failed)
        # Nodes that make URLs (links): part of what was offered, not components of the
        # record.
        makers = [n for n in self.rules if kinds.kind(self.graph.node(n).kind).creates]
        created = {n: tallies.pop(n).out for n in makers}
        for name in makers:
            in_flight.pop(name)
        offered = self.source.offered
        offered = offered + sum(created.values(), np.zeros_like(offered))
        record = RunRecord(
            "request",
            0,
            self.timeline,
            offered,
            tallies,
            in_flight,
            causes=self.graph.causes or causes,
            created=created,
        )
        record.latency = latency_of(run.samples, run.sample_ticks)
        record.check_conservation()
        return record


def _leg(kernel: Kernel, target: Rule, delay: float) -> Hand:
    """Along one edge to ``target``: at once, or after ``delay`` seconds in flight."""
    if not delay:
        return target.visit

    def arrive(url: Url) -> None:
        target.transit -= 1
        target.visit(url)

    def leg(url: Url) -> None:
        target.transit += 1
        kernel.schedule(delay, arrive, url)

    return leg


def _with_tees(tees: list[Hand], onward: Hand) -> Hand:
    if not tees:
        return onward

    def passed(url: Url) -> None:
        for tee in tees:
            tee(url)
        onward(url)

    return passed


def _fault(run: Run, rule: Rule, start: int, end: int, stall: int, factor: float) -> None:
    """A stall or a slowdown of ``rule`` from tick ``start`` to ``end``."""

    def begin(_: object) -> None:
        rule.change(start, stall=stall, factor=factor)
        run.at_tick(end, lambda _: rule.change(end, stall=-stall, factor=1.0 / factor))

    run.at_tick(start, begin)


def run(
    scenario: Scenario,
    *,
    seed: int,
    timeline: Timeline,
    topology: Topology,
    warmup_s: float = 0.0,
    progress: Progress | None = None,
) -> RunRecord:
    """Simulate ``topology`` under ``scenario``, every URL walked through it: a design's
    graph (a crawler design's the one its loading compiles), built once when the run
    starts; it carries everything the walk needs."""
    return run_graph(
        topology, scenario, seed=seed, timeline=timeline, warmup_s=warmup_s, progress=progress
    )


def run_graph(
    graph: Topology,
    scenario: Scenario,
    *,
    seed: int,
    timeline: Timeline,
    warmup_s: float = 0.0,
    progress: Progress | None = None,
) -> RunRecord:
    """Simulate ``graph`` under ``scenario``, every URL walked through it."""
    record = Engine(graph, scenario, seed, timeline, warmup_s, progress).run()
    record.seed = seed
    return record
