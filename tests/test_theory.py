"""The request engine against closed-form queueing theory.

A single station is studied by giving the fetcher fleet one replica with c slots
(slots = rps_per_replica x mean fetch time), an exponential or deterministic fetch time
of mean 1/mu, a frontier with an unbounded drain as the waiting room, and Poisson
arrivals at lambda. The frontier latency is then the waiting time in queue, Wq.

Each case runs 4 seeds with the first 500 s cut as warm-up and compares the mean of the
per-seed means with theory within a stated tolerance. Each case also checks the test has
teeth: theory for 10% more or fewer slots, or a 10% longer or shorter service mean, lies
outside the tolerance, so a model off by that much would fail.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

import gym
from gym.models import Design, Scenario
from tests.conftest import design, scenario

SEEDS = (0, 1, 2, 3)
WARMUP_S = 500.0


def station(
    c: int, dist: str, lam: float, mu: float, duration_s: float, buffer: int = 10**9
) -> tuple[Design, Scenario]:
    """One fetch replica with c slots of mean service 1/mu, fed at lam per second."""
    d = design(
        frontier={"drain_rps": 1e6, "buffer": buffer},
        fetchers={
            "replicas": 1,
            "rps_per_replica": c * mu,
            "service": {"dist": dist, "mean_ms": 1000 / mu},
        },
    )
    return d, scenario(duration_s=duration_s, base_rps=lam, arrivals="poisson")


def run(d: Design, sc: Scenario, seed: int, tick_ms: int = 1000) -> gym.Result:
    return gym.simulate(
        d, sc, seed=seed, engine="request", tick_ms=tick_ms, warmup_s=WARMUP_S, max_urls=10**8
    )


def erlang_c_wq(c: int, lam: float, mu: float) -> float:
    """Mean wait in queue of M/M/c (Erlang C)."""
    a = lam / mu
    if a >= c:
        return math.inf
    head = sum(a**k / math.factorial(k) for k in range(c))
    tail = a**c / math.factorial(c) * c / (c - a)
    return tail / (head + tail) / (c * mu - lam)


def md1_wq(c: int, lam: float, mu: float) -> float:
    """Mean wait in queue of M/D/1 (Pollaczek-Khinchine with zero service variance)."""
    assert c == 1
    rho = lam / mu
    return math.inf if rho >= 1 else rho / (2 * mu * (1 - rho))


def mdc_wq(c: int, lam: float, mu: float) -> float:
    """Mean wait in queue of M/D/c, exactly: Crommelin's formula (1932; Tijms, *A First
    Course in Stochastic Models*), with D = 1/mu, rho = lam / (c mu) and
    N_n Poisson of mean n c rho:

        Wq = D sum_{n >= 1} [ P(N_n >= nc) - P(N_n >= nc + 1) / rho ].

    For c = 1 it is Pollaczek-Khinchine's rho / (2 mu (1 - rho)). A term falls
    geometrically in n (nc lies above the mean n c rho), so the sum stops when one is
    below 1e-15 of the total."""
    rho = lam / (c * mu)
    if rho >= 1:
        return math.inf

    def tail(m: float, k: int) -> float:  # P(N >= k), N Poisson of mean m, summed upward
        total, j = 0.0, k
        while True:
            term = math.exp(j * math.log(m) - m - math.lgamma(j + 1))
            total += term
            if j > m and term < 1e-18 * total:
                return total
            j += 1

    wq, n = 0.0, 1
    while True:
        m = n * c * rho
        term = tail(m, n * c) - tail(m, n * c + 1) / rho
        wq += term
        if abs(term) < 1e-15 * abs(wq):
            return wq / mu
        n += 1


def mm1k_blocking(k: int, lam: float, mu: float) -> float:
    """Probability an arrival finds an M/M/1/K system full (K = 1 in service + buffer)."""
    rho = lam / mu
    return (1 - rho) * rho**k / (1 - rho ** (k + 1))


Theory = Callable[[int, float, float], float]
CASES: list[tuple[str, int, str, float, float, float, Theory]] = [
    # name, slots c, service, lambda, mu, duration (s), theory Wq(c, lam, mu)
    ("M/M/1", 1, "exponential", 2.4, 4.0, 20_000, erlang_c_wq),
    ("M/M/c", 10, "exponential", 28.0, 4.0, 5_000, erlang_c_wq),
    ("M/D/1", 1, "deterministic", 2.4, 4.0, 20_000, md1_wq),
]
TOLERANCE = 0.05  # relative, on the mean of the per-seed means


@pytest.mark.parametrize(
    ("name", "c", "dist", "lam", "mu", "duration", "theory"), CASES, ids=[case[0] for case in CASES]
)
def test_mean_wait_matches_theory(
    name: str, c: int, dist: str, lam: float, mu: float, duration: float, theory: Theory
) -> None:
    """Mean frontier wait = Wq of the matching queue, within 5%."""
    d, sc = station(c, dist, lam, mu, duration)
    waits = [run(d, sc, seed).latency["frontier"].mean / 1000 for seed in SEEDS]
    measured = float(np.mean(waits))
    expected = theory(c, lam, mu)
    assert measured == pytest.approx(expected, rel=TOLERANCE), (name, waits, expected)
    # Teeth: a model 10% off in slots or in service mean would be caught.
    wrong = [theory(c, lam, mu * 1.1), theory(c, lam, mu / 1.1)]
    if c > 1:
        wrong += [theory(c - 1, lam, mu), theory(c + 1, lam, mu)]
    for w in wrong:
        assert abs(measured - w) > TOLERANCE * measured, (name, w, measured)


def test_finite_buffer_blocking_matches_mm1k() -> None:
    """M/M/1/K with K = 1 + buffer 4 at rho = 0.9: the frontier turns away
    (1 - rho) rho^K / (1 - rho^(K+1)) = 12.6% of arrivals, within 5%."""
    lam, mu, buffer = 3.6, 4.0, 4
    d, sc = station(1, "exponential", lam, mu, 10_000, buffer=buffer)
    fractions = []
    for seed in SEEDS:
        m = run(d, sc, seed).metrics
        fractions.append(m.failed_by_cause["frontier_overflow"] / m.offered)
    measured = float(np.mean(fractions))
    expected = mm1k_blocking(1 + buffer, lam, mu)
    assert measured == pytest.approx(expected, rel=TOLERANCE), (fractions, expected)
    for k in (buffer, buffer + 2):  # one place fewer or more in the system
        assert abs(measured - mm1k_blocking(k, lam, mu)) > TOLERANCE * measured


def test_littles_law_on_the_frontier() -> None:
    """Time-average queue length in the frontier = arrival rate x mean wait (L = lambda W),
    each measured separately from one M/M/1 run; both also match theory, Lq = 0.9."""
    lam, mu = 2.4, 4.0
    d, sc = station(1, "exponential", lam, mu, 20_000)
    r = run(d, sc, seed=5, tick_ms=100)
    start = int(WARMUP_S * 10)
    backlog = r.metrics.record.components["frontier"].backlog[start:]
    offered = r.metrics.record.offered[start:]
    time_avg_queue = float(backlog.mean())
    arrival_rate = float(offered.sum()) / (len(offered) * 0.1)
    wait_s = r.latency["frontier"].mean / 1000
    assert time_avg_queue == pytest.approx(arrival_rate * wait_s, rel=0.03)
    assert time_avg_queue == pytest.approx(lam * erlang_c_wq(1, lam, mu), rel=0.08)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_request_engine_hit_ratio_is_binomial(seed: int) -> None:
    """Hits among n lookups ~ Binomial(n, 0.6): within 5 standard deviations."""
    d = design(cache={"hit_ratio": 0.6})
    sc = scenario(duration_s=20, arrivals="poisson")
    cache = gym.simulate(d, sc, seed=seed, engine="request").metrics.record.components["cache"]
    n, hits = int(cache.processed.sum()), int(cache.served.sum())
    assert abs(hits - 0.6 * n) < 5 * math.sqrt(n * 0.6 * 0.4)


def test_slots_are_capacity_times_mean_service() -> None:
    """A replica at 40/s with 250 ms fetches holds 10 fetches at once, never 11: with a
    deterministic fetch, 10 slots serve exactly 40/s under overload."""
    d, sc = station(10, "deterministic", 60.0, 4.0, 50)
    m = gym.simulate(d, sc, seed=0, engine="request").metrics
    started = m.record.components["fetchers"].processed
    per_second = np.add.reduceat(started, np.arange(0, len(started), 100))
    assert per_second[5:].max() <= 40
    assert per_second[5:].min() >= 40
