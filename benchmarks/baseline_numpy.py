"""A pure-numpy computation of the flow model of the crawler pipeline: the flow engine's
speed baseline.

What the flow engine computes, written the shortest way numpy allows: Poisson arrivals
per tick; the frontier as a bounded queue drained at the smaller of its drain rate and
the live fleet's fetch rate (a crash takes replicas away; the one loop over ticks, in
plain floats, is the queue's recursion); fetches that finish one fetch time later; a
binomial split at the cache; the resolver and the page store as Erlang loss systems on
each tick's offered load (with slots = rate x holding time, the slowdown lengthening the
resolver's); a stall losing everything that reaches the stalled store. Then the same
totals: offered, served, failed, throughput, availability, peak saturation per 1 s window.

It leaves out what the flow engine adds for trust (pacing, peakedness of paced streams,
fill-up of stations, the link-discovery loop, retries, latency estimates, explanations)
and handles only the crawler's own faults on the crawler chaos scenario's components. It
is here to be measured against, not used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gym.models import CrashFault, Design, Scenario, SlowdownFault, StallFault

RESOLVER_LATENCY_S = 0.020
STORE_LATENCY_S = 0.020


@dataclass
class Totals:
    offered: int
    served: int
    failed: int
    throughput_rps: float
    availability: float
    peak_saturation: float


def erlang_b(servers: int, load: np.ndarray) -> np.ndarray:
    """Erlang's loss probability for each offered load: the recursion, vectorized over
    the distinct loads (a tick's load takes few values: whole URLs per tick)."""
    values, index = np.unique(load, return_inverse=True)
    b = np.ones_like(values)
    for k in range(1, servers + 1):
        b = values * b / (k + values * b)
    return b[index]


def run(design: Design, scenario: Scenario, seed: int = 0, tick_s: float = 0.01) -> Totals:
    rng = np.random.default_rng(seed)
    n = round(scenario.duration_s / tick_s)
    t = np.arange(n) * tick_s
    # Load: the piecewise-constant multiplier of each tick.
    rate = np.zeros(n)
    for i, stage in enumerate(scenario.load):
        end = scenario.load[i + 1].at_s if i + 1 < len(scenario.load) else scenario.duration_s
        rate[(t >= stage.at_s) & (t < end)] = scenario.base_rps * stage.multiplier
    arrivals = rng.poisson(rate * tick_s)
    # Faults, as per-tick states.
    replicas = np.full(n, float(design.fetchers.replicas))
    store_up = np.ones(n, dtype=bool)
    slow = np.ones(n)
    for f in scenario.faults:
        span = (t >= f.at_s) & (t < f.at_s + (f.for_s if f.for_s is not None else math.inf))
        if isinstance(f, CrashFault):
            replicas[span] -= f.replicas
        elif isinstance(f, StallFault):
            store_up[span] = False
        elif isinstance(f, SlowdownFault):
            slow[span] *= f.factor
    fetch_rate = replicas * design.fetchers.rps_per_replica
    drain = np.minimum(design.frontier.drain_rps, fetch_rate) * tick_s
    # The frontier: a bounded queue. Its recursion is sequential, unless it never backs up.
    buffer = design.frontier.buffer
    if (arrivals <= drain).all():
        out, dropped = arrivals.astype(np.float64), np.zeros(n)
    else:
        out, dropped = np.empty(n), np.empty(n)
        queue = 0.0
        for k, (a, d) in enumerate(zip(arrivals.tolist(), drain.tolist(), strict=True)):
            queue += a
            over = max(0.0, queue - buffer)
            queue -= over
            sent = min(queue, d)
            queue -= sent
            out[k], dropped[k] = sent, over
    sent = np.floor(out).astype(np.int64)
    # Fetches end one fetch time later; a crash loses the crashed replicas' share.
    lag = max(1, round(design.fetchers.service.mean_ms / 1000 / tick_s))
    fetched = np.concatenate((np.zeros(lag, dtype=np.int64), sent[:-lag]))
    lost_crash = np.concatenate(([0.0], np.maximum(0.0, -np.diff(replicas))))
    crash = rng.binomial(fetched, np.minimum(1.0, lost_crash / np.maximum(replicas, 1.0)))
    fetched = fetched - crash
    # The cache, then the resolver and the store as Erlang loss systems.
    misses = rng.binomial(fetched, 1.0 - design.cache.hit_ratio)
    resolver_slots = max(1, round(scenario.resolver.rps * RESOLVER_LATENCY_S))
    load = misses / tick_s * RESOLVER_LATENCY_S * slow
    lost_resolver = rng.binomial(misses, erlang_b(resolver_slots, load))
    writes = misses - lost_resolver
    store_slots = max(1, round(design.page_store.rps * STORE_LATENCY_S))
    lost_store = rng.binomial(writes, erlang_b(store_slots, writes / tick_s * STORE_LATENCY_S))
    lost_store = np.where(store_up, lost_store, writes)
    served = fetched - lost_resolver - lost_store
    failed = dropped.sum() + crash.sum() + lost_resolver.sum() + lost_store.sum()
    # Per 1 s window: saturation of the fleet, the resolver and the store.
    per = round(1 / tick_s)
    windows = n // per

    def window(x: np.ndarray) -> np.ndarray:
        return np.asarray(x[: windows * per], dtype=np.float64).reshape(windows, per).sum(1)

    fleet = window(sent) / np.maximum(window(fetch_rate * tick_s), 1e-9)
    resolver = window(misses * slow) / (scenario.resolver.rps)
    store = np.where(
        window(store_up.astype(np.float64)) > 0, window(writes) / design.page_store.rps, 0.0
    )
    finished = int(served.sum()) + int(failed)
    return Totals(
        offered=int(arrivals.sum()),
        served=int(served.sum()),
        failed=int(failed),
        throughput_rps=float(served.sum()) / scenario.duration_s,
        availability=int(served.sum()) / finished if finished else 0.0,
        peak_saturation=float(max(fleet.max(), resolver.max(), store.max())),
    )
