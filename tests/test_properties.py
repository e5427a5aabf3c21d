"""Properties that hold for every valid design and scenario (hypothesis), both engines.

The monotonic properties the model guarantees, and why:

- A larger frontier buffer never overflows more (same seed, crash loss counted apart):
  arrivals and the frontier's hand-out limits do not depend on the buffer, and with the
  same arrivals and limits a queue that may hold more never drops more.
- More fetcher replicas never make the frontier overflow more: the fetchers only limit
  how much the frontier hands out per tick, and a queue served faster in every tick
  never drops more.
- A faster page store (no async writer) never fails more writes: what reaches the store
  does not depend on it (nothing pushes back upstream), and in every tick a store that
  takes more refuses fewer.

They need capacities that are whole URLs per tick (rates in hundreds per second with
10 ms ticks): with a fraction carried from tick to tick, a higher rate can give one URL
less in some tick (1.7/tick gives 1, 2, 2, 1, ... where 1.6/tick gives 1, 2, 1, 2, 2),
so per-tick comparisons can flip by one URL. What is not monotone, on purpose: a faster
stage can lower availability in an outage (a slow stage keeps work queued that a fast one
sends on to fail), and with on_crash: requeue more in-flight fetches go back to a full
frontier.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gym
from gym.models import Design, Scenario, ServiceTime
from gym.sim.erlang import holding_kernel, offered_load
from gym.sim.grid import start_depth, station_slots
from gym.system.crawler import cache_capacity_rps

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
hundreds = st.integers(1, 400).map(lambda n: n * 100)  # whole URLs per 10 ms tick


@st.composite
def designs(draw: Any, whole_ticks: bool = False) -> Design:
    rate = hundreds if whole_ticks else st.integers(1, 40_000)
    data: dict[str, Any] = {
        "frontier": {
            "drain_rps": draw(rate),
            "buffer": draw(st.integers(1, 200_000)),
            "back_queues": draw(st.integers(1, 60_000)) if not whole_ticks else 1_000_000,
        },
        "fetchers": {
            "replicas": draw(st.integers(1, 8)),
            "rps_per_replica": draw(
                st.sampled_from([100, 500, 1000, 4000]) if whole_ticks else st.integers(1, 4000)
            ),
            "service": {"mean_ms": draw(st.sampled_from([10, 50, 250]))},
            "on_crash": draw(st.sampled_from(["fail", "requeue"])),
        },
        "cache": {"hit_ratio": draw(st.sampled_from([0.0, 0.3, 0.6, 0.92, 0.96]))},
        "page_store": {"rps": draw(rate)},
    }
    if draw(st.booleans()):
        data["async_writer"] = {"buffer": draw(st.integers(1, 50_000))}
    return Design.model_validate(data)


@st.composite
def scenarios(draw: Any, max_urls: int = 150_000, faults: bool = True) -> Scenario:
    duration = draw(st.integers(1, 6))
    base = draw(st.integers(1, 20_000))
    times = sorted(draw(st.sets(st.integers(1, duration * 10 - 1), max_size=3)))
    load = [{"at_s": 0, "multiplier": draw(st.sampled_from([0.5, 1.0, 2.0]))}]
    load += [
        {"at_s": t / 10, "multiplier": draw(st.sampled_from([0.0, 0.5, 1.5, 3.0]))} for t in times
    ]
    fault_list: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 3)) if faults else 0):
        at = draw(st.integers(0, duration * 10 - 1)) / 10
        kind = draw(st.sampled_from(["crash", "stall", "slowdown"]))
        f: dict[str, Any] = {"kind": kind, "at_s": at}
        if kind == "crash":
            f["replicas"] = draw(st.integers(1, 3))
            if draw(st.booleans()):
                f["for_s"] = draw(st.integers(1, 30)) / 10
        else:
            f["target"] = draw(st.sampled_from(["frontier", "cache", "resolver", "page_store"]))
            f["for_s"] = draw(st.integers(1, 30)) / 10
            if kind == "slowdown":
                f["factor"] = draw(st.sampled_from([1.5, 3.0]))
        fault_list.append(f)
    sc = Scenario.model_validate(
        {
            "duration_s": duration,
            "base_rps": base,
            "arrivals": draw(st.sampled_from(["poisson", "deterministic"])),
            "load": load,
            "faults": fault_list,
            "slos": {"availability": {"min": 0.9}, "peak_saturation": {"max": 0.9}},
        }
    )
    expected = sum(base * s["multiplier"] for s in load) * duration
    assume(expected <= max_urls)
    return sc


def _sane(r: gym.Result) -> None:
    m = r.metrics
    assert m.offered == m.served + m.failed + m.skipped + m.in_flight_end
    if m.finished:
        assert m.availability is not None and 0.0 <= m.availability <= 1.0
    else:
        assert m.availability is None  # undefined: nothing finished
    assert 0.0 <= m.throughput_rps <= m.offered / m.duration_s + 1e-9
    peak, _, _ = m.peak
    assert peak >= 0.0
    for cw in m.components.values():
        assert (cw.failed_total >= 0).all() and (cw.backlog >= 0).all()


def _within_capacity(r: gym.Result) -> None:
    """Flow engine: no queue or fleet takes more than its capacity (and its bank) in any
    tick, no queue holds more than its buffer. A loss station (Erlang loss on slots) may
    take more than rate x tick in a tick, as a station with free slots does, but never more
    than arrived, nothing while stalled, and it never holds more than its slots at the end
    of a tick; behind the async writer the store takes no more than the writer may send."""
    c = r.metrics.record.components
    tick_ms = r.metrics.record.timeline.tick_ms
    front, fleet = c["frontier"], c["fetchers"]
    # The frontier hands out no more than either quota has allowed so far, and in a tick
    # no more than a quota and its bank: the frontier's bucket, max(1, drain x tick), the
    # fetchers' start bucket (whole URLs; docs/model.md, frontier).
    for quota in (front.capacity, fleet.capacity):
        assert (np.cumsum(front.out) <= np.cumsum(quota)).all()
    own_bank = np.floor(max(1.0, float(front.rate.max(initial=0.0)) * tick_ms / 1000) + 1e-9)
    fleet_bank = np.floor(start_depth(fleet.rate, tick_ms) + 1e-9)
    assert (front.out <= front.capacity + own_bank).all()
    assert (front.out <= fleet.capacity + fleet_bank).all()
    assert (front.backlog <= front.limit).all()
    assert (fleet.processed <= fleet.capacity + fleet_bank).all()
    for name, what in (("cache", "cache"), ("resolver", "resolver"), ("page_store", "store")):
        assert (c[name].processed <= c[name].arrived).all(), name
        assert (c[name].processed[c[name].failed[f"{what}_unavailable"] > 0] == 0).all(), name
    if "async_writer" in c:
        assert (c["page_store"].processed <= c["page_store"].capacity).all()
        assert (c["async_writer"].backlog <= c["async_writer"].limit).all()
        assert (c["async_writer"].out <= c["page_store"].capacity).all()
    for name, rate, service in _loss_stations(r):
        held = _slots_held(c[name], rate, service, r.metrics.record.timeline.tick_ms)
        slots = station_slots(rate, service.mean_ms)
        assert held.max(initial=0.0) <= slots + 1e-6, (name, float(held.max()), slots)


def _loss_stations(r: gym.Result) -> list[tuple[str, float, ServiceTime]]:
    """The flow engine's Erlang loss stations: name, design rate, service time."""
    d, sc = r.design, r.scenario
    stations = [
        ("cache", cache_capacity_rps(d, sc.catalog), d.cache.service),
        ("resolver", sc.resolver.rps, sc.resolver.service),
    ]
    if d.async_writer is None:  # behind the writer the store takes what it is sent
        stations.append(("page_store", d.page_store.rps, d.page_store.service))
    return stations


def _slots_held(tally: Any, rate: float, service: ServiceTime, tick_ms: int) -> np.ndarray:
    """The slots a station's takes hold at the end of each tick: each tick's takes times
    the chance a request begun in it still holds its slot d ticks later
    (gym.sim.erlang.holding_kernel), its service stretched by the slowdown in force then."""
    factors = np.round(np.where(tally.rate > 0, rate / np.maximum(tally.rate, 1e-300), 1.0), 9)
    n = len(factors)
    kernels = {float(f): holding_kernel(service, float(f), tick_ms, n + 1) for f in set(factors)}
    held: np.ndarray = offered_load(tally.processed.astype(float), factors, kernels)
    return held


@FAST
@given(designs(), scenarios(), st.integers(0, 2**32 - 1))
def test_flow_conserves_and_stays_in_range(d: Design, sc: Scenario, seed: int) -> None:
    """Flow engine: conservation exact, metrics in range, capacities respected, same seed
    same result."""
    r = gym.simulate(d, sc, seed=seed)
    _sane(r)
    _within_capacity(r)
    assert gym.simulate(d, sc, seed=seed).to_dict() == r.to_dict()


def test_request_engine_is_deterministic_through_a_requeueing_crash() -> None:
    """Regression: crashed fetches are requeued in a fixed order (they were once taken from
    a set, whose order changed from run to run)."""
    from tests.conftest import CHAOS, STARTER

    d = gym.load_design(STARTER, ["fetchers.on_crash=requeue"])
    a = gym.simulate(d, CHAOS, seed=4, engine="request").to_dict()
    b = gym.simulate(d, CHAOS, seed=4, engine="request").to_dict()
    assert a == b


@SLOW
@given(designs(), scenarios(max_urls=15_000), st.integers(0, 2**32 - 1))
def test_request_engine_conserves_and_stays_in_range(d: Design, sc: Scenario, seed: int) -> None:
    """Request engine: the same properties."""
    r = gym.simulate(d, sc, seed=seed, engine="request")
    _sane(r)
    assert gym.simulate(d, sc, seed=seed, engine="request").to_dict() == r.to_dict()


@FAST
@given(
    st.integers(1, 50).map(lambda n: n * 100),
    st.lists(st.integers(0, 300).map(lambda n: n * 100), min_size=4, max_size=4),
    st.integers(1, 8),
    st.sampled_from([0.0, 0.6, 0.92]),
    st.integers(0, 2**32 - 1),
)
def test_no_fault_and_room_everywhere_means_no_failure(
    rate: int, extra: list[int], replicas: int, hit: float, seed: int
) -> None:
    """No fault, deterministic arrivals, every capacity at least the offered rate in whole
    URLs per tick (the resolver takes 5,000/s, so rate <= 5,000): nothing fails. The
    stations lose nothing although Erlang's formula would: evenly spaced arrivals never
    bring more than rate x 20 ms in any 20 ms, which the slots hold."""
    per_replica = -(-rate // (replicas * 100)) * 100 + extra[0]
    d = Design.model_validate(
        {
            "frontier": {"drain_rps": rate + extra[1], "buffer": 1, "back_queues": rate + extra[2]},
            "fetchers": {"replicas": replicas, "rps_per_replica": min(per_replica, 4000)},
            "cache": {"hit_ratio": hit},
            "page_store": {"rps": rate + extra[3]},
        }
    )
    assume(d.fetchers.replicas * d.fetchers.rps_per_replica >= rate)
    sc = Scenario.model_validate({"duration_s": 3, "base_rps": rate, "arrivals": "deterministic"})
    assert gym.simulate(d, sc, seed=seed).metrics.failed == 0


@FAST
@given(designs(whole_ticks=True), scenarios(), st.integers(1, 200_000), st.integers(0, 99))
def test_a_bigger_frontier_buffer_never_overflows_more(
    d: Design, sc: Scenario, more: int, seed: int
) -> None:
    """Frontier overflow is non-increasing in the buffer (same seed; on_crash: fail)."""
    d = d.model_copy(update={"fetchers": d.fetchers.model_copy(update={"on_crash": "fail"})})
    bigger = d.model_copy(
        update={"frontier": d.frontier.model_copy(update={"buffer": d.frontier.buffer + more})}
    )
    small = gym.simulate(d, sc, seed=seed).metrics.failed_by_cause["frontier_overflow"]
    large = gym.simulate(bigger, sc, seed=seed).metrics.failed_by_cause["frontier_overflow"]
    assert large <= small


@FAST
@given(designs(whole_ticks=True), scenarios(), st.integers(1, 4), st.integers(0, 99))
def test_more_replicas_never_overflow_the_frontier_more(
    d: Design, sc: Scenario, more: int, seed: int
) -> None:
    """Frontier overflow is non-increasing in fetcher replicas (same seed; on_crash: fail)."""
    f = d.fetchers.model_copy(update={"on_crash": "fail"})
    d = d.model_copy(update={"fetchers": f})
    bigger = d.model_copy(update={"fetchers": f.model_copy(update={"replicas": f.replicas + more})})
    few = gym.simulate(d, sc, seed=seed).metrics.failed_by_cause["frontier_overflow"]
    many = gym.simulate(bigger, sc, seed=seed).metrics.failed_by_cause["frontier_overflow"]
    assert many <= few


@FAST
@given(designs(whole_ticks=True), scenarios(), hundreds, st.integers(0, 99))
def test_a_faster_store_never_fails_more_writes(
    d: Design, sc: Scenario, more: int, seed: int
) -> None:
    """Store failures are non-increasing in the store's rate (no async writer; same seed)."""
    d = d.model_copy(update={"async_writer": None})
    faster = d.model_copy(
        update={"page_store": d.page_store.model_copy(update={"rps": d.page_store.rps + more})}
    )

    def store_failures(x: Design) -> int:
        by = gym.simulate(x, sc, seed=seed).metrics.failed_by_cause
        return by["store_overload"] + by["store_unavailable"]

    assert store_failures(faster) <= store_failures(d)
