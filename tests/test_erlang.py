"""Erlang loss in the flow engine's stations without a queue (gym.sim.erlang), against the
textbook recursion and against arithmetic done by hand.

Erlang B: B(0, a) = 1 and B(k, a) = a B(k-1, a) / (k + a B(k-1, a)), the fraction of
Poisson arrivals offering ``a`` Erlangs that find all ``k`` slots busy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gym
from gym.models import ServiceTime
from gym.sim.erlang import (
    erlang_b,
    erlang_b_peaked,
    occupancy_kernel,
    offered_load,
    peakedness_factor,
)
from tests.conftest import design, scenario


def textbook(c: int, a: float) -> float:
    """The recursion as every queueing text writes it, c steps from B(0) = 1."""
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b


def test_small_cases_by_hand() -> None:
    """B(1, a) = a / (1 + a); B(2, 1) = (1/2) / (1 + 1 + 1/2) = 1/5; no load, no loss."""
    a = np.array([1.0, 3.0, 0.0])
    assert erlang_b(1, a).tolist() == pytest.approx([0.5, 0.75, 0.0])
    assert erlang_b(2, np.array([1.0]))[0] == pytest.approx(0.2)
    assert erlang_b(0, np.array([5.0]))[0] == 1.0


@pytest.mark.parametrize("c", [1, 7, 60, 100, 500, 3_000, 20_000])
def test_matches_the_textbook_recursion(c: int) -> None:
    """From deep overload to far below capacity, every station size: the fast recursion
    (started near min(c, a)) equals the full one to 1e-9 relative, or both are below 1e-12."""
    loads = np.array([0.01, 0.5, c * 0.5, c * 0.9, c - 1.0, float(c), c * 1.1, c * 2.0, c * 30.0])
    loads = loads[loads > 0]
    got = erlang_b(c, loads)
    for a, b in zip(loads.tolist(), got.tolist(), strict=True):
        want = textbook(c, a)
        if want < 1e-12:
            assert b < 1e-12, (c, a, b)
        else:
            assert b == pytest.approx(want, rel=1e-9), (c, a)


def test_large_stations_are_exact_too() -> None:
    """No approximation for large stations: at 25,001 Erlangs on 23,000 slots (deep in
    overload, where a normal approximation to the Poisson tail gave 0.0087) B is the
    recursion's 0.0804..., and at c = a = 30,000 it is the recursion's figure to 1e-9."""
    for c, a in ((23_000, 25_001.0), (24_000, 25_001.0), (30_000, 30_000.0)):
        assert erlang_b(c, np.array([a]))[0] == pytest.approx(textbook(c, a), rel=1e-9)
    assert textbook(23_000, 25_001.0) == pytest.approx(0.0805, abs=1e-4)


def test_slots_per_load() -> None:
    """One call may ask about a different number of slots for each load."""
    got = erlang_b(np.array([1.0, 2.0, 100.0]), np.array([1.0, 1.0, 120.0]))
    assert got.tolist() == pytest.approx([0.5, 0.2, textbook(100, 120.0)], rel=1e-9)


def test_hayward_between_poisson_and_fluid() -> None:
    """Peakedness 1 is Erlang B itself; a paced stream (z -> 0) loses the fluid excess,
    1 - c/a, over capacity and nothing under it; z = 1/2 is B(2c, 2a)."""
    a = np.array([80.0, 40.0, 30.0])
    assert erlang_b_peaked(40, a, np.ones(3)).tolist() == pytest.approx(
        [textbook(40, x) for x in a.tolist()], rel=1e-9
    )
    assert erlang_b_peaked(40, a, np.full(3, 0.5)).tolist() == pytest.approx(
        [textbook(80, 2 * x) for x in a.tolist()], rel=1e-9
    )
    paced = erlang_b_peaked(40, a, np.zeros(3))
    assert paced[0] == pytest.approx(0.5, abs=0.005)  # fluid: 1 - 40/80
    assert paced[2] < 1e-9  # 30 Erlangs on 40 slots, evenly spaced: nothing lost
    assert paced[1] < textbook(40, 40.0) / 5  # at capacity, far below Poisson's 0.116


def test_peakedness_factor() -> None:
    """kappa = integral of P(S > t)^2 dt / E[S]: 1 for a fixed time, 1/2 for exponential
    (integral of exp(-2t/m) is m/2); a lognormal with cv -> 0 tends to 1."""
    assert peakedness_factor(ServiceTime(mean_ms=20)) == 1.0
    assert peakedness_factor(ServiceTime(dist="exponential", mean_ms=20)) == 0.5
    assert peakedness_factor(ServiceTime(dist="lognormal", mean_ms=20, cv=0.01)) == (
        pytest.approx(1.0, abs=0.01)
    )


def test_occupancy_kernel_by_hand() -> None:
    """A 20 ms lookup on 10 ms ticks, arrivals spread evenly in their tick: half of a tick's
    arrivals are in service at a random instant of their own tick, all of them in the next
    tick, half in the one after: [0.5, 1, 0.5], adding up to 20 ms / 10 ms = 2."""
    kernel = occupancy_kernel(ServiceTime(mean_ms=20), 1.0, 10)
    assert kernel[:3].tolist() == pytest.approx([0.5, 1.0, 0.5])
    assert kernel[3:].sum() == pytest.approx(0.0, abs=1e-12)
    # A 1 ms lookup (s = T/10): seen in its own tick when the observer comes 0-1 ms after
    # it, chance s/T - s^2/(2T^2) = 0.095; in the next tick when it arrived in the last
    # millisecond and the observer in the first, s^2/(2T^2) = 0.005; 0.1 in all.
    assert occupancy_kernel(ServiceTime(mean_ms=1), 1.0, 10)[:3].tolist() == pytest.approx(
        [0.095, 0.005, 0.0]
    )


@pytest.mark.parametrize(
    "service",
    [
        ServiceTime(dist="exponential", mean_ms=20),
        ServiceTime(dist="lognormal", mean_ms=35, cv=1.5),
        ServiceTime(mean_ms=7),
    ],
)
def test_steady_load_is_rate_times_service(service: ServiceTime) -> None:
    """Little's law for an unlimited station: a steady rate r per tick offers r x mean /
    tick Erlangs, whatever the distribution; a slowdown by f offers f times as much."""
    for factor in (1.0, 3.0):
        kernel = occupancy_kernel(service, factor, 10)
        steady = offered_load(np.full(5_000, 20.0), np.full(5_000, factor), {factor: kernel})
        assert steady[-1] == pytest.approx(20.0 * service.mean_ms * factor / 10, rel=1e-9)


def test_flow_loss_follows_erlang_b_for_poisson_arrivals() -> None:
    """Hit ratio 0: every URL meets the resolver (5,000/s x 20 ms = 100 slots). Slowed x3
    for 3 s, 2,000 Poisson URLs/s offer 2,000 x 0.06 = 120 Erlangs: B(100, 120) = 0.196, so
    about 6,000 x 0.196 = 1,178 lookups fail, where a rate x tick quota loses 1,000. The
    request engine, one SimPy process per URL, loses 1,190 and 1,216 on seeds 0 and 1."""
    d = design(cache={"hit_ratio": 0.0})
    sc = scenario(
        base_rps=2_000,
        arrivals="poisson",
        faults=[{"kind": "slowdown", "at_s": 4, "for_s": 3, "target": "resolver", "factor": 3}],
    )
    expected = 6_000 * textbook(100, 120.0)
    assert expected == pytest.approx(1_178, abs=1)
    for seed in range(3):
        lost = gym.simulate(d, sc, seed=seed).metrics.failed_by_cause["resolver_overload"]
        assert lost == pytest.approx(expected, rel=0.04), seed  # ~ +-2 sd of the arrivals


def test_flow_loss_is_fluid_for_evenly_spaced_arrivals() -> None:
    """Deterministic arrivals are evenly spaced and lookups take exactly 60 ms in the
    slowdown: the stream never bunches, so 1 - 100/120 of it fails (1,000 of 6,000; the
    request engine loses exactly that, 20 at a time every 60 ms, once the slots fill in
    the slowdown's sixth tick). The flow engine spreads the same loss over the ticks and
    loses a few more as the slowdown ends: within 1%."""
    d = design(cache={"hit_ratio": 0.0})
    sc = scenario(
        base_rps=2_000,
        faults=[{"kind": "slowdown", "at_s": 4, "for_s": 3, "target": "resolver", "factor": 3}],
    )
    lost = gym.simulate(d, sc, seed=0).metrics.failed_by_cause["resolver_overload"]
    assert lost == pytest.approx(1_000, rel=0.01)


def test_more_slots_never_lose_more() -> None:
    """Erlang B falls as slots are added at a fixed load (and as load falls at fixed slots)."""
    a = np.linspace(1.0, 400.0, 200)
    by_slots = np.array([erlang_b(c, a) for c in range(1, 300, 7)])
    assert np.all(np.diff(by_slots, axis=0) <= 1e-15)
    assert np.all(np.diff(by_slots, axis=1) >= -1e-15)


def test_a_huge_station_costs_no_recursion() -> None:
    """A billion writes per second (20 million slots) at ordinary load loses nothing, and
    the run does not walk 20 million recursion steps (it would take minutes); the same
    station asked about directly at 30 million Erlangs answers at once."""
    d = design(cache={"hit_ratio": 0.0}, page_store={"rps": 1e9})
    r = gym.simulate(d, scenario(duration_s=2), seed=0)
    assert r.metrics.failed == 0
    assert math.isfinite(r.metrics.throughput_rps)
    b = erlang_b(20_000_000, np.array([19_000_000.0, 20_000_000.0, 30_000_000.0]))
    assert b[0] < 1e-30 and 0 < b[1] < 1e-3 and b[2] == pytest.approx(1 / 3, abs=1e-3)


@pytest.mark.parametrize("hit", [0.0, 0.6])
def test_a_paced_stream_never_fills_slots_it_cannot_reach(hit: float) -> None:
    """One fetcher starts at most 100 fetches/s, one per 10 ms (its token bucket holds one
    token), and fixed times keep that spacing: in any 20 ms at most two writes begin, and
    the store's 100/s x 20 ms = 2 slots hold them. Erlang's formula, which knows only the
    load, says B(2, 2 x (1 - hit)) = 40% or 15% of the writes fail; the request engine
    loses none, and neither does the flow engine, with Poisson arrivals and a full
    one-place frontier in front."""
    d = design(
        frontier={"drain_rps": 100, "buffer": 1, "back_queues": 100},
        fetchers={"replicas": 1, "rps_per_replica": 100},
        cache={"hit_ratio": hit},
        page_store={"rps": 100},
    )
    sc = scenario(duration_s=20, base_rps=100, arrivals="poisson")
    assert textbook(2, 2.0 * (1 - hit)) > 0.1
    for engine in ("flow", "request"):
        r = gym.simulate(d, sc, seed=0, engine=engine)
        assert r.metrics.failed_by_cause["store_overload"] == 0, engine
        assert r.metrics.record.components["page_store"].processed.sum() > 500
    # Random write times break the spacing: writes then bunch and fail, in both engines.
    slow = d.model_copy(
        update={
            "page_store": d.page_store.model_copy(
                update={"service": ServiceTime(dist="exponential", mean_ms=20)}
            )
        }
    )
    for engine in ("flow", "request"):
        lost = gym.simulate(slow, sc, seed=0, engine=engine).metrics.failed_by_cause
        assert lost["store_overload"] > 0, engine


@pytest.mark.parametrize("seed", range(5))
def test_a_station_never_holds_more_than_its_slots(seed: int) -> None:
    """100 slots (1/6 write/s x 10 minutes) and 50 Poisson writes/s: nothing ends within
    the 20 s run, so exactly 100 writes are taken, on every seed, as in the request engine.
    Erlang's formula on the offered load alone let about 335 in; a cap on the expected
    counts alone let 94-125 in, as the random counts ran ahead of or behind them."""
    d = design(
        cache={"hit_ratio": 0.0},
        frontier={"drain_rps": 100_000, "buffer": 10**7},
        page_store={"rps": 1 / 6, "service": {"dist": "deterministic", "mean_ms": 600_000}},
    )
    sc = scenario(duration_s=20, base_rps=50, arrivals="poisson")
    store = gym.simulate(d, sc, seed=seed).metrics.record.components["page_store"]
    assert store.processed.sum() == 100
    assert store.processed.sum() + store.failed["store_overload"].sum() == store.arrived.sum()


@pytest.mark.parametrize(("per_s", "store", "lost_share"), [(70, 50, 0.5), (1_025, 1_000, 1 / 21)])
def test_a_periodic_stream_loses_as_d_d_c(per_s: int, store: int, lost_share: float) -> None:
    """One fetcher always backed up starts exactly every 1/rate s, and fixed times keep the
    period: a store of c slots offered a Erlangs takes c of every ceil(a) writes (a slot
    frees at the end of its write and takes the next arrival). 70/s on one 20 ms slot
    (a = 1.4): half are lost, where the fluid excess is 29%; 1,025/s on 20 slots
    (a = 20.5): 1/21. The request engine loses 690 and 962 of 1,400 and 20,500."""
    d = design(
        frontier={"drain_rps": 100_000, "buffer": 10**7},
        fetchers={"replicas": 1, "rps_per_replica": per_s},
        cache={"hit_ratio": 0.0},
        page_store={"rps": store},
    )
    sc = scenario(duration_s=20, base_rps=2 * per_s, arrivals="poisson")
    store_tally = gym.simulate(d, sc, seed=0).metrics.record.components["page_store"]
    lost = store_tally.failed["store_overload"].sum()
    assert lost == pytest.approx(lost_share * store_tally.arrived.sum(), rel=0.03)


def test_long_heavy_tailed_service_kernel_keeps_its_digits() -> None:
    """A 60 s lognormal write (cv 5) on 10 ms ticks: a request is all but surely still in
    service in the tick after its own (P(S > 20 ms) > 0.999), and at most a run's length
    of weights is built (the whole tail would be 6 million ticks)."""
    kernel = occupancy_kernel(ServiceTime(dist="lognormal", mean_ms=60_000, cv=5), 1.0, 10, 4_001)
    assert len(kernel) == 4_001
    assert kernel[0] == pytest.approx(0.5, abs=1e-3) and kernel[1] > 0.999
    assert (kernel >= 0).all() and (np.diff(kernel[1:]) <= 1e-12).all()


def test_normal_cdf_to_seven_digits() -> None:
    """The vectorized Phi agrees with math.erfc to a relative 2e-7 from -8 to 8 sd."""
    from gym.sim.erlang import _std_normal_cdf

    z = np.linspace(-8.0, 8.0, 801)
    exact = np.array([0.5 * math.erfc(-x / math.sqrt(2.0)) for x in z.tolist()])
    assert np.max(np.abs(_std_normal_cdf(z) / exact - 1.0)) < 2e-7
