"""Each component's rule, checked with numbers worked out by hand.

Scenarios here use deterministic arrivals (exactly rate x tick per 10 ms tick), so every
count below is arithmetic on the model's own definitions (docs/specification.md section 2).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gym
from gym.sim.flow.base import tick_quota
from tests.conftest import design, scenario


def test_tick_quota_integer_rate_is_exact() -> None:
    """4,000/s in 10 ms ticks is exactly 40 per tick, with nothing carried."""
    quota, carry = tick_quota(4_000, 10, 1_000, 0.0)
    assert set(quota.tolist()) == {40}
    assert carry == pytest.approx(0.0)


def test_tick_quota_fraction_carries_over() -> None:
    """5,000/3 per s is 16.67 per tick: 100 ticks give floor(1666.67) = 1,666, and the
    fraction carries, so 300 ticks give exactly 5,000."""
    rate = 5_000 / 3
    quota, carry = tick_quota(rate, 10, 100, 0.0)
    assert quota.sum() == 1_666
    assert set(quota.tolist()) <= {16, 17}
    more, _ = tick_quota(rate, 10, 200, carry)
    assert quota.sum() + more.sum() == 5_000


def test_frontier_overflows_by_the_known_amount() -> None:
    """1,000/s arrive, 500/s drain: the queue grows 5 per tick, fills its 2,000-URL buffer
    after 400 ticks, then drops 5 per tick for the remaining 600 ticks: 3,000 dropped."""
    d = design(frontier={"drain_rps": 500, "buffer": 2_000})
    r = gym.simulate(d, scenario(), seed=0)
    m = r.metrics
    assert m.failed_by_cause["frontier_overflow"] == 3_000
    assert r.metrics.record.components["frontier"].processed.sum() == 5_000
    assert m.record.in_flight_end["frontier"] == 2_000
    first = int(np.argmax(m.record.components["frontier"].failed["frontier_overflow"] > 0))
    assert first == 400


def test_frontier_hands_out_no_more_than_live_fetchers_start() -> None:
    """A drain of 30,000/s behind one 300/s fetcher hands out 3 URLs per tick."""
    d = design(fetchers={"replicas": 1, "rps_per_replica": 300})
    r = gym.simulate(d, scenario(), seed=0)
    dispatched = r.metrics.record.components["frontier"].processed
    assert set(dispatched.tolist()) == {3}
    # 10 arrive, 3 leave per tick; the 100,000-URL buffer never fills in 1,000 ticks.
    assert r.metrics.record.in_flight_end["frontier"] == 7 * 1_000


def test_fetch_takes_the_service_time() -> None:
    """A fetch started in tick k finishes in tick k + 25 (250 ms): nothing reaches the cache
    in the first 25 ticks, then 10 per tick; at the end 25 ticks of fetches are in flight."""
    r = gym.simulate(design(), scenario(), seed=0)
    done = r.metrics.record.components["fetchers"].out
    assert done[:25].sum() == 0
    assert set(done[25:].tolist()) == {10}
    assert r.metrics.record.in_flight_end["fetchers"] == 250


def test_crash_fails_the_crashed_replicas_share_of_fetches_in_flight() -> None:
    """At t=2 s, 25 ticks x 10 = 250 fetches are in flight over 4 live replicas; one
    crashes: floor(250 x 1/4) = 62 fail. Capacity drops from 16,000/s to 12,000/s."""
    sc = scenario(faults=[{"kind": "crash", "at_s": 2, "target": "fetchers", "replicas": 1}])
    r = gym.simulate(design(), sc, seed=0)
    assert r.metrics.failed_by_cause["crash_loss"] == 62
    cap = r.metrics.components["fetchers"].capacity
    assert cap[1] == 16_000 and cap[2] == 12_000


def test_crash_with_requeue_loses_nothing() -> None:
    """With on_crash: requeue the same 62 fetches go back to the frontier and are served."""
    sc = scenario(faults=[{"kind": "crash", "at_s": 2, "replicas": 1}])
    d = design(fetchers={"replicas": 4, "rps_per_replica": 4_000, "on_crash": "requeue"})
    r = gym.simulate(d, sc, seed=0)
    assert r.metrics.failed == 0
    assert r.metrics.record.components["fetchers"].extra["requeued"].sum() == 62
    assert r.to_dict()["fetchers_on_crash"] == "requeue"


def test_crash_recovers_after_for_s() -> None:
    """Replicas down for 3 s come back: capacity 12,000/s during t=2-5 s, 16,000/s after."""
    sc = scenario(faults=[{"kind": "crash", "at_s": 2, "for_s": 3, "replicas": 1}])
    cap = gym.simulate(design(), sc, seed=0).metrics.components["fetchers"].capacity
    assert cap.tolist() == [16_000] * 2 + [12_000] * 3 + [16_000] * 5


def test_all_replicas_down_is_a_fetcher_outage() -> None:
    """When every replica crashes, the fleet's capacity is 0: an outage, not a saturation."""
    sc = scenario(faults=[{"kind": "crash", "at_s": 4, "replicas": 4}])
    r = gym.simulate(design(), sc, seed=0)
    fetchers = r.metrics.components["fetchers"]
    assert fetchers.outage.tolist() == [False] * 4 + [True] * 6
    assert np.isnan(fetchers.saturation[4:]).all()
    assert ("fetchers", 4.0, 10.0) in r.metrics.outages


def test_stall_fails_exactly_the_misses_that_reach_it() -> None:
    """Hit ratio 0: every fetch is a miss and a store write. A 2 s stall from t=3 s sees
    10 writes per tick for 200 ticks: exactly 2,000 fail as store_unavailable."""
    d = design(cache={"hit_ratio": 0.0})
    sc = scenario(faults=[{"kind": "stall", "at_s": 3, "for_s": 2, "target": "page_store"}])
    r = gym.simulate(d, sc, seed=0)
    assert r.metrics.failed_by_cause["store_unavailable"] == 2_000
    assert r.metrics.failed == 2_000


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stall_with_random_hits_fails_the_misses_in_the_stall(seed: int) -> None:
    """With hit ratio 0.92 the misses are random, but the store fails exactly those that
    arrive during the stall, and no write outside it."""
    d = design(cache={"hit_ratio": 0.92})
    sc = scenario(faults=[{"kind": "stall", "at_s": 3, "for_s": 2, "target": "page_store"}])
    rec = gym.simulate(d, sc, seed=seed).metrics.record
    store = rec.components["page_store"]
    misses = rec.components["resolver"].out
    assert store.failed["store_unavailable"][300:500].sum() == misses[300:500].sum()
    assert store.failed["store_unavailable"].sum() == misses[300:500].sum()


def test_resolver_slowdown_divides_capacity() -> None:
    """Hit ratio 0, 2,000 URLs/s all need DNS; a x3 slowdown of a 5,000/s resolver leaves
    5,000/3/s of capacity (1,666 + 1,667 + 1,667 with the carry). Its 100 slots now hold each
    lookup 60 ms: evenly spaced arrivals offer 120 Erlangs, and 1 - 100/120 of them fail,
    1,000 in 3 s, within 1% (tests/test_erlang.py has the Poisson case)."""
    d = design(cache={"hit_ratio": 0.0})
    sc = scenario(
        base_rps=2_000,
        faults=[{"kind": "slowdown", "at_s": 4, "for_s": 3, "target": "resolver", "factor": 3}],
    )
    r = gym.simulate(d, sc, seed=0)
    resolver = r.metrics.components["resolver"]
    assert resolver.capacity[4:7].sum() == 5_000
    lost = r.metrics.record.components["resolver"].failed["resolver_overload"]
    assert lost[:400].sum() == 0 and lost[700 + 6 :].sum() == 0  # only in the slowdown
    assert lost.sum() == pytest.approx(1_000, rel=0.01)


@pytest.mark.parametrize("seed", range(5))
def test_cache_hits_are_binomial(seed: int) -> None:
    """Hits among n lookups ~ Binomial(n, h): within 5 standard deviations of n x h."""
    d = design(cache={"hit_ratio": 0.6})
    rec = gym.simulate(d, scenario(duration_s=20), seed=seed).metrics.record
    n = int(rec.components["cache"].processed.sum())
    hits = int(rec.components["cache"].served.sum())
    sd = math.sqrt(n * 0.6 * 0.4)
    assert abs(hits - n * 0.6) < 5 * sd


def test_async_writer_holds_a_stall_and_flushes_below_the_ceiling() -> None:
    """A 60,000-write buffer holds a 2 s stall of 1,000 writes/s; afterwards the writer
    flushes only into room below 85% of the store, floor(0.85 x 15) - 10 = 2 writes per
    tick, so the 2,000 held writes take 1,000 ticks (t=5-15 s): nothing fails, the store's
    saturation never passes 0.85, and every held write is written by t=16 s."""
    d = design(
        cache={"hit_ratio": 0.0},
        page_store={"rps": 1_500},
        async_writer={"buffer": 60_000},
    )
    sc = scenario(
        duration_s=16,
        faults=[{"kind": "stall", "at_s": 3, "for_s": 2, "target": "page_store"}],
    )
    r = gym.simulate(d, sc, seed=0)
    m = r.metrics
    assert m.failed == 0
    writer = m.record.components["async_writer"]
    assert writer.extra["held_in"].sum() == 2_000
    assert writer.extra["flushed"].sum() == 2_000
    assert set(writer.extra["flushed"][500:1500].tolist()) == {2}
    assert writer.extra["flushed"][1500:].sum() == 0
    assert np.nanmax(m.components["page_store"].saturation) <= 0.85
    assert m.record.in_flight_end["async_writer"] == 0


def test_async_writer_overflows_by_the_known_amount() -> None:
    """A 500-write buffer meets 2,000 writes during a 2 s stall: 1,500 overflow."""
    d = design(cache={"hit_ratio": 0.0}, async_writer={"buffer": 500})
    sc = scenario(faults=[{"kind": "stall", "at_s": 3, "for_s": 2, "target": "page_store"}])
    r = gym.simulate(d, sc, seed=0)
    assert r.metrics.failed_by_cause["writer_overflow"] == 1_500
    assert r.metrics.failed_by_cause["store_unavailable"] == 0


def test_cache_overload_beyond_lookup_capacity() -> None:
    """A cache stall fails every lookup that reaches it: 10 per tick for 100 ticks."""
    sc = scenario(faults=[{"kind": "stall", "at_s": 5, "for_s": 1, "target": "cache"}])
    r = gym.simulate(design(), sc, seed=0)
    assert r.metrics.failed_by_cause["cache_unavailable"] == 1_000


def test_frontier_stall_queues_then_drains() -> None:
    """A 1 s frontier stall hands out nothing: 1,000 URLs queue (the buffer holds them)
    and drain afterwards; nothing is lost."""
    sc = scenario(faults=[{"kind": "stall", "at_s": 2, "for_s": 1, "target": "frontier"}])
    r = gym.simulate(design(), sc, seed=0)
    frontier = r.metrics.record.components["frontier"]
    assert frontier.processed[200:300].sum() == 0
    assert frontier.backlog[299] == 1_000
    assert r.metrics.failed == 0


@pytest.mark.parametrize("engine", ["flow", "request"])
@pytest.mark.parametrize(("drain", "starts"), [(45, 50), (50, 45), (145, 150), (33, 77)])
def test_a_queue_hands_out_the_slower_of_two_sub_tick_quotas(
    engine: str, drain: int, starts: int
) -> None:
    """A queue draining 45/s in front of a fleet starting 50/s (one slot of fixed 20 ms
    fetches, 1 / the fleet's rate: its slot is free again before the queue's next URL)
    hands out min(45, 50) = 45/s, so 30 s hand out 45 x 30 = 1,350 (+- 1: the request
    engine's buckets start full); the other way round the fleet's one slot of 1/45 s
    starts 45/s. At 10 ms a tick the two quotas
    are 0.45 and 0.5 URLs a tick, each a whole URL in different ticks; a per-tick minimum
    of the two banking neither would hand out 25/s (750). The same with the rates the
    other way round, nearer (145/s against 150/s: 4,350, not 125/s) and far apart."""
    d = gym.GraphDesign.model_validate(
        {
            "graph": {
                "nodes": {
                    "src": {"kind": "source"},
                    "q": {"kind": "queue", "drain_rps": drain, "buffer": 100_000},
                    "f": {
                        "kind": "fleet",
                        "replicas": 1,
                        "rps_per_replica": starts,
                        "service": {"dist": "deterministic", "mean_ms": 1000 / starts},
                    },
                },
                "edges": [{"from": "src", "to": "q"}, {"from": "q", "to": "f"}],
            }
        }
    )
    sc = gym.Scenario.model_validate({"system": "graph", "duration_s": 30, "base_rps": 300})
    r = gym.simulate(d, sc, seed=0, engine=engine)
    handed_out = int(r.metrics.record.components["q"].processed.sum())
    assert abs(handed_out - min(drain, starts) * 30) <= 1
