"""A straightforward per-request SimPy model of any topology: the speed baseline of the
request engine for graph designs and for crawlers with retries or the link-discovery
loop (their built-in graph, :func:`gym.system.crawler.topology`).

One SimPy process per URL, walking the graph, written the way one would write it first:
exponential inter-arrival times per load stage; a queue is a ``simpy.Store`` (tail drop
when full) with a dispatcher paced at its drain rate handing out to its fleet's replicas,
one ``simpy.Resource`` of fetch slots each (rps_per_replica x fetch time); a cache, a
service, a store and a seen set are ``simpy.Resource`` s without a queue (slots = rate x
mean service time; a request that finds them full fails, or waits out its retry policy's
backoff and tries again); a coin flip for a cache's hits, a service's finished share and a
seen set's skips; a write buffer is a ``simpy.Store`` its flusher empties into the store's
free slots once a tick; a fetched page's links are Poisson per page, each its own process
after its delay. A node's output takes an edge by its shares; a delayed edge is a timeout.
Faults follow the scenario (a crash interrupts the crashed replicas' fetches; a stall
refuses; a slowdown stretches service times).

It is here to be measured against, not used: the gym's request engine is
``gym/sim/request``. It models the same system, so its totals land near the engines'
(``bench_topologies`` prints both), but it is not tuned to match them.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from gym.models import CrashFault, Scenario, SlowdownFault, StallFault
from gym.system.topology import Node, Topology


@dataclass
class Totals:
    offered: int = 0
    served: int = 0
    failed: int = 0
    skipped: int = 0


@dataclass
class Station:
    """A node with slots and no queue."""

    res: simpy.Resource
    mean_s: float
    dist: str
    cv: float
    down: bool = False
    slow: float = 1.0


@dataclass
class Replica:
    slots: simpy.Resource
    up: bool = True
    fetching: set[Any] = field(default_factory=set)


def _slots(rate: float, mean_ms: float) -> int:
    return max(1, round(rate * mean_ms / 1000.0))


def _draw(rnd: random.Random, mean_s: float, dist: str, cv: float) -> float:
    if dist == "deterministic":
        return mean_s
    if dist == "exponential":
        return rnd.expovariate(1.0 / mean_s)
    sigma = math.sqrt(math.log1p(cv * cv))
    return rnd.lognormvariate(math.log(mean_s) - sigma * sigma / 2, sigma)


def run(graph: Topology, scenario: Scenario, seed: int = 0) -> Totals:
    """Simulate one run of ``graph``, one process per URL; returns the totals."""
    env = simpy.Environment()
    rnd = random.Random(seed)
    nrng = np.random.default_rng(seed)
    totals = Totals()
    stations: dict[str, Station] = {}
    queues: dict[str, tuple[simpy.Store, Node, list[Replica] | None, dict[str, Any]]] = {}
    buffers: dict[str, tuple[simpy.Store, Node]] = {}
    fleet_of: dict[str, str] = {}
    source = next(n.name for n in graph.nodes if n.kind == "source")

    for node in graph.nodes:
        p = node.params
        if node.kind in ("cache", "service", "store", "lookup"):
            s = p.service
            stations[node.name] = Station(
                simpy.Resource(env, _slots(p.rps, s.mean_ms)), s.mean_ms / 1000, s.dist, s.cv_value
            )
        elif node.kind == "write_buffer":
            buffers[node.name] = (simpy.Store(env, capacity=p.buffer), node)
    for node in graph.nodes:
        if node.kind == "queue":
            out = graph.outputs(node.name)
            fleet = (
                graph.node(out[0].target)
                if out and graph.node(out[0].target).kind == "fleet"
                else None
            )
            reps = None
            if fleet is not None:
                f = fleet.params
                per = _slots(f.rps_per_replica, f.service.mean_ms)
                reps = [Replica(simpy.Resource(env, per)) for _ in range(f.replicas)]
                fleet_of[fleet.name] = node.name
            queues[node.name] = (
                simpy.Store(env, capacity=node.params.buffer),
                node,
                reps,
                {"rr": 0, "down": False, "slow": 1.0, "fleet": fleet},
            )

    def pick(name: str) -> tuple[str | None, float]:
        out = graph.outputs(name)
        if not out:
            return None, 0.0
        u = rnd.random()
        acc = 0.0
        for e in out:
            acc += e.share
            if u < acc:
                return e.target, e.delay_s
        return out[-1].target, out[-1].delay_s

    def links_of(name: str) -> list[Node]:
        return [graph.node(e.target) for e in graph.tees(name)]

    def walk(at: str | None, delay: float, links: bool = False) -> Any:
        while at is not None:
            if delay:
                yield env.timeout(delay)
            node = graph.node(at)
            go_on = yield from visit(node, links)
            links = False
            if not go_on:
                return
            for tee in links_of(at):
                page_links(tee)
            at, delay = pick(at)
        totals.served += 1

    def visit(node: Node, links: bool) -> Any:
        kind, p = node.kind, node.params
        if kind == "fleet":
            return True
        if kind == "queue":
            store, _node, _reps, st = queues[node.name]
            for share in (p.seen_fraction, p.variant_fraction, p.false_positive_rate):
                if share and rnd.random() < share:
                    totals.skipped += 1
                    return False
            if len(store.items) >= p.buffer:
                totals.failed += 1
                return False
            done = env.event()
            store.put(done)
            ok = yield done
            return ok
        if kind == "write_buffer":
            store_name = graph.outputs(node.name)[0].target
            st = stations[store_name]
            if not st.down and st.res.count < st.res.capacity:
                return True
            buf, _ = buffers[node.name]
            if len(buf.items) >= p.buffer:
                totals.failed += 1
                return False
            done = env.event()
            buf.put(done)
            yield done
            return True
        st = stations[node.name]
        tries = 1
        while st.down or st.res.count >= st.res.capacity:
            if node.retry is not None and tries < node.retry.attempts:
                r = node.retry
                yield env.timeout(r.wait_s(tries) * rnd.uniform(1 - r.jitter, 1 + r.jitter))
                tries += 1
                continue
            totals.failed += 1
            return False
        with st.res.request() as req:
            yield req
            yield env.timeout(_draw(rnd, st.mean_s, st.dist, st.cv) * st.slow)
        if kind == "lookup":
            skips = p.skips(links=links)
            for share in skips.values():
                if share and rnd.random() < share:
                    totals.skipped += 1
                    return False
            return True
        finish = {"cache": "hit_ratio", "service": "finish_share"}.get(kind)
        if finish and rnd.random() < getattr(p, finish):
            totals.served += 1
            return False
        if not graph.outputs(node.name):
            totals.served += 1
            return False
        return True

    def page_links(tee: Node) -> None:
        count = int(nrng.poisson(tee.params.links_per_page))
        (edge,) = graph.outputs(tee.name)
        for _ in range(count):
            totals.offered += 1
            env.process(walk(edge.target, rnd.uniform(0, 2 * edge.delay_s), links=True))

    def dispatcher(name: str) -> Any:
        store, node, reps, st = queues[name]
        pace = 1.0 / node.params.drain_rps
        while True:
            done = yield store.get()
            yield env.timeout(pace * st["slow"])
            while st["down"]:
                yield env.timeout(0.01)
            if reps is None:
                done.succeed(True)
                continue
            while True:
                live = [r for r in reps if r.up]
                if live:
                    break
                yield env.timeout(0.01)
            st["rr"] = (st["rr"] + 1) % len(live)
            replica = live[st["rr"]]
            request = replica.slots.request()
            yield request
            env.process(fetch(st["fleet"], replica, request, done))

    def fetch(fleet: Node, replica: Replica, request: Any, done: simpy.Event) -> Any:
        me = env.active_process
        replica.fetching.add(me)
        s = fleet.params.service
        try:
            yield env.timeout(_draw(rnd, s.mean_ms / 1000, s.dist, s.cv_value))
        except simpy.Interrupt:
            totals.failed += 1  # crash loss (a requeue is not modelled: it fails)
            done.succeed(False)
            return
        finally:
            replica.fetching.discard(me)
            replica.slots.release(request)
        done.succeed(True)

    def flusher(name: str, tick_s: float) -> Any:
        buf, node = buffers[name]
        st = stations[graph.outputs(name)[0].target]
        ceiling = max(1, int(st.res.capacity * node.params.flush_ceiling))
        while True:
            yield env.timeout(tick_s)
            while buf.items and not st.down and st.res.count < ceiling:
                done = yield buf.get()
                done.succeed()

    def arrivals() -> Any:
        stages = scenario.load
        for i, stage in enumerate(stages):
            end = stages[i + 1].at_s if i + 1 < len(stages) else scenario.duration_s
            rate = scenario.base_rps * stage.multiplier
            while rate > 0:
                gap = rnd.expovariate(rate)
                if env.now + gap >= end:
                    break
                yield env.timeout(gap)
                totals.offered += 1
                env.process(walk(*pick(source)))
            if end > env.now:
                yield env.timeout(end - env.now)

    def fault(f: CrashFault | StallFault | SlowdownFault) -> Any:
        yield env.timeout(f.at_s)
        if isinstance(f, CrashFault):
            reps = queues[fleet_of[f.target]][2] or []
            victims = [r for r in reps if r.up][: f.replicas]
            for r in victims:
                r.up = False
                for proc in list(r.fetching):
                    proc.interrupt()
            if f.for_s is not None:
                yield env.timeout(f.for_s)
                for r in victims:
                    r.up = True
            return
        target: Any = stations.get(f.target)
        q = queues.get(f.target)
        if isinstance(f, StallFault):
            if q is not None:
                q[3]["down"] = True
            else:
                target.down = True
            yield env.timeout(f.for_s)
            if q is not None:
                q[3]["down"] = False
            else:
                target.down = False
        else:
            if q is not None:
                q[3]["slow"] = f.factor
            else:
                target.slow = f.factor
            yield env.timeout(f.for_s)
            if q is not None:
                q[3]["slow"] = 1.0
            else:
                target.slow = 1.0

    env.process(arrivals())
    for name in queues:
        env.process(dispatcher(name))
    for name in buffers:
        env.process(flusher(name, 0.01))
    for f in scenario.faults:
        env.process(fault(f))
    env.run(until=scenario.duration_s)
    return totals
