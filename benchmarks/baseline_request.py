"""A straightforward per-request SimPy model of the gym's pipeline: the speed baseline.

One SimPy process per URL, written the way one would write it first: exponential
inter-arrival times, a ``simpy.Store`` as the frontier (tail drop when full), a
dispatcher paced at the drain rate, one ``simpy.Resource`` of fetch slots per replica
(rps_per_replica x fetch time), a coin flip for the cache, and the resolver and the page
store as concurrency-limited resources without a queue (slots = rate x latency; a
slowdown by f multiplies the latency by f). Faults follow the scenario.

It is here to be measured against, not used: the gym's engines live in ``gym/sim/flow``
and ``gym/sim/request``.
It models the same pipeline, so its totals land near the flow engine's (the benchmark
prints both), but it is not tuned to match it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import simpy

from gym.models import CrashFault, Design, Scenario, SlowdownFault, StallFault
from gym.system.crawler import cache_capacity_rps

RESOLVER_LATENCY_S = 0.020
STORE_LATENCY_S = 0.020


@dataclass
class Replica:
    slots: simpy.Resource
    up: bool = True
    fetching: set[Any] = field(default_factory=set)


@dataclass
class Totals:
    offered: int = 0
    served: int = 0
    failed: int = 0

    def in_flight(self) -> int:
        return self.offered - self.served - self.failed


def run(design: Design, scenario: Scenario, seed: int = 0) -> Totals:
    """Simulate one run, one process per URL; returns the totals."""
    env = simpy.Environment()
    rnd = random.Random(seed)
    totals = Totals()
    fetch_s = design.fetchers.service.mean_ms / 1000
    slots_per_replica = max(1, round(design.fetchers.rps_per_replica * fetch_s))
    replicas = [
        Replica(simpy.Resource(env, capacity=slots_per_replica))
        for _ in range(design.fetchers.replicas)
    ]
    frontier = simpy.Store(env, capacity=design.frontier.buffer)
    state = {"resolver_slow": 1.0, "resolver_down": False, "store_down": False, "rr": 0}
    resolver = simpy.Resource(env, max(1, round(scenario.resolver.rps * RESOLVER_LATENCY_S)))
    store = simpy.Resource(env, max(1, round(design.page_store.rps * STORE_LATENCY_S)))
    _ = cache_capacity_rps(design, scenario.catalog)  # ample in every shipped design

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
                if len(frontier.items) >= design.frontier.buffer:
                    totals.failed += 1  # frontier overflow
                else:
                    frontier.put(1)
            if end > env.now:
                yield env.timeout(end - env.now)

    def dispatcher() -> Any:
        pace = 1.0 / design.frontier.drain_rps
        while True:
            yield frontier.get()
            yield env.timeout(pace)
            while True:
                live = [r for r in replicas if r.up]
                if live:
                    break
                yield env.timeout(0.01)
            state["rr"] = (state["rr"] + 1) % len(live)
            replica = live[state["rr"]]
            request = replica.slots.request()
            yield request
            env.process(fetch(replica, request))

    def fetch(replica: Replica, request: Any) -> Any:
        me = env.active_process
        replica.fetching.add(me)
        try:
            yield env.timeout(fetch_s)
        except simpy.Interrupt:
            totals.failed += 1  # crash loss
            return
        finally:
            replica.fetching.discard(me)
            replica.slots.release(request)
        if rnd.random() < design.cache.hit_ratio:
            totals.served += 1
            return
        if state["resolver_down"] or resolver.count >= resolver.capacity:
            totals.failed += 1  # resolver overload
            return
        with resolver.request() as r:
            yield r
            yield env.timeout(RESOLVER_LATENCY_S * state["resolver_slow"])
        if state["store_down"] or store.count >= store.capacity:
            totals.failed += 1  # store unavailable / overload
            return
        with store.request() as s:
            yield s
            yield env.timeout(STORE_LATENCY_S)
        totals.served += 1

    def fault(f: CrashFault | StallFault | SlowdownFault) -> Any:
        yield env.timeout(f.at_s)
        if isinstance(f, CrashFault):
            victims = [r for r in replicas if r.up][: f.replicas]
            for r in victims:
                r.up = False
                for p in list(r.fetching):
                    p.interrupt()
            if f.for_s is not None:
                yield env.timeout(f.for_s)
                for r in victims:
                    r.up = True
        elif isinstance(f, StallFault):
            if f.target not in ("page_store", "resolver"):
                raise NotImplementedError("the baseline stalls only page_store or resolver")
            key = "store_down" if f.target == "page_store" else "resolver_down"
            state[key] = True
            yield env.timeout(f.for_s)
            state[key] = False
        else:
            if f.target != "resolver":
                raise NotImplementedError("the baseline slows down only the resolver")
            state["resolver_slow"] = f.factor
            yield env.timeout(f.for_s)
            state["resolver_slow"] = 1.0

    env.process(arrivals())
    env.process(dispatcher())
    for f in scenario.faults:
        env.process(fault(f))
    env.run(until=scenario.duration_s)
    return totals
