"""The flow engine's latency of graph designs (issue: ``latency_ms`` was empty for them):
against Jackson-network theory (M/M/c in tandem, a feedback loop), against the request
engine on the shipped systems, and the pieces it is built of (Erlang C, quantiles, the
fluid network's rates round a loop).

Jackson's theorem: in an open network of M/M/c stations fed by Poisson arrivals, each
station behaves as an M/M/c queue at its own arrival rate (the external rate times its
visit ratio). A URL's mean time in the network is the sum over stations of the visits
times the station's mean sojourn, Wq + 1/mu, with Wq Erlang C's mean wait,
C(c, a) / (c mu - lambda); a delay on an edge adds itself once per passage.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np
import pytest

import gym
from gym.models import Scenario
from gym.sim import waiting
from gym.sim.flow import engine, fluid
from gym.sim.timeline import Timeline
from gym.system import compiled
from gym.system.graph import GraphDesign
from tests.conftest import ROOT
from tests.test_theory import erlang_c_wq, mdc_wq

TOLERANCE = 0.05  # relative, the acceptance
WARMUP_S = 20.0
SYSTEMS = ROOT / "designs" / "systems"
SYSTEM_SCENARIOS = ROOT / "scenarios" / "systems"


def erlang_c_wq_ms(c: int, lam: float, mu: float) -> float:
    """Mean wait in queue of M/M/c (Erlang C, tests/test_theory.py), in ms."""
    return 1000.0 * erlang_c_wq(c, lam, mu)


def _fleet(slots: int, mean_ms: float, dist: str = "exponential") -> dict[str, Any]:
    """One replica of ``slots`` slots (slots = rps_per_replica x mean service time)."""
    return {
        "kind": "fleet",
        "replicas": 1,
        "rps_per_replica": slots * 1000.0 / mean_ms,
        "service": {"dist": dist, "mean_ms": mean_ms},
    }


QUEUE = {"kind": "queue", "drain_rps": 1e6, "buffer": 10**9}  # a waiting room, no limit


def _design(nodes: dict[str, Any], edges: list[Any]) -> GraphDesign:
    edges = [e if isinstance(e, dict) else {"from": e[0], "to": e[1]} for e in edges]
    return GraphDesign.model_validate({"graph": {"nodes": nodes, "edges": edges}})


def _steady(rate: float, duration_s: float) -> Scenario:
    return Scenario.model_validate(
        {"system": "graph", "duration_s": duration_s, "base_rps": rate, "arrivals": "poisson"}
    )


def _run(design: GraphDesign, sc: Scenario, engine: str, seed: int = 0) -> dict[str, Any]:
    return gym.simulate(design, sc, engine=engine, seed=seed, warmup_s=WARMUP_S).latency


def _has_teeth(measured: float, c: int, lam: float, mu: float) -> None:
    """Theory for one slot more or fewer, or a 10% longer or shorter service, is outside
    the tolerance: a model off by that much would fail."""
    for wrong in (
        erlang_c_wq_ms(c - 1, lam, mu),
        erlang_c_wq_ms(c + 1, lam, mu),
        erlang_c_wq_ms(c, lam, mu * 1.1),
        erlang_c_wq_ms(c, lam, mu / 1.1),
    ):
        assert abs(measured - wrong) > TOLERANCE * measured, (measured, wrong)


# -- M/M/c in tandem ------------------------------------------------------------------------


def _tandem() -> GraphDesign:
    """200 URLs/s into M/M/10 (40 ms) then M/M/5 (20 ms): both at 80% load."""
    nodes = {"src": {"kind": "source"}, "q1": QUEUE, "f1": _fleet(10, 40), "q2": QUEUE}
    nodes["f2"] = _fleet(5, 20)
    return _design(nodes, [("src", "q1"), ("q1", "f1"), ("f1", "q2"), ("q2", "f2")])


SEEDS = range(8)  # of 150 s each: a seed's queue wait is spread by 4-12% (M/M/5, M/M/10)


def _mean_within(values: list[float], want: float, rel: float = TOLERANCE) -> None:
    """The mean of ``values`` (one a seed) within ``rel`` of ``want`` or 3 standard errors
    of it: the flow engine's queue waits are read from the counts of services it drew
    (random, as the request engine's), so a seed's wait is spread as a simulation's is."""
    v = np.asarray(values)
    se = float(v.std(ddof=1)) / math.sqrt(len(v))
    assert abs(float(v.mean()) - want) <= max(rel * want, 3.0 * se), (v.mean(), want, se)


def test_a_tandem_of_mmc_queues_against_jackson() -> None:
    """M/M/10 at 200/s of 25/s a slot waits C(10, 8) / (250 - 200) = 8.18 ms, M/M/5 of
    50/s a slot C(5, 4) / 50 = 11.08 ms; end to end 8.18 + 40 + 11.08 + 20 = 79.27 ms.
    The flow engine's queue waits and its end-to-end mean, over eight seeds, are each within
    5% (or 3 standard errors; the second queue's arrivals are the first fleet's
    departures, Poisson again by Burke's theorem), and so is the request engine's
    end-to-end mean and median of the flow engine's."""
    w1, w2 = erlang_c_wq_ms(10, 200, 25), erlang_c_wq_ms(5, 200, 50)
    jackson = w1 + 40 + w2 + 20
    flows = [_run(_tandem(), _steady(200, 150), "flow", seed) for seed in SEEDS]
    _mean_within([f["q1"].mean for f in flows], w1)
    _mean_within([f["q2"].mean for f in flows], w2)
    _has_teeth(statistics.mean(f["q1"].mean for f in flows), 10, 200, 25)
    _has_teeth(statistics.mean(f["q2"].mean for f in flows), 5, 200, 50)
    flow = flows[0]
    assert flow["f1"].mean == pytest.approx(40) and flow["f2"].mean == pytest.approx(20)
    assert flow["f1"].p50 == pytest.approx(40 * math.log(2), rel=0.01)  # exponential
    _mean_within([f["end_to_end"].mean for f in flows], jackson)
    req = _run(_tandem(), _steady(200, 300), "request")
    assert req["end_to_end"].mean == pytest.approx(jackson, rel=TOLERANCE)
    for stat in ("mean", "p50"):
        f, r = getattr(flow["end_to_end"], stat), getattr(req["end_to_end"], stat)
        assert f == pytest.approx(r, rel=TOLERANCE), stat


# -- a feedback loop --------------------------------------------------------------------------


def _loop(g: float, delay_s: float) -> GraphDesign:
    """A queue and an M/M/10 fleet (40 ms) whose jobs go back to the queue with chance
    ``g``, ``delay_s`` later, and on to a store (1 ms) otherwise."""
    nodes = {"src": {"kind": "source"}, "q": QUEUE, "f": _fleet(10, 40)}
    nodes["db"] = {"kind": "store", "rps": 1e6, "service": {"mean_ms": 1}}
    edges: list[Any] = [("src", "q"), ("q", "f")]
    edges += [
        {"from": "f", "to": "db", "share": 1 - g},
        {"from": "f", "to": "q", "share": g, "delay_s": delay_s},
    ]
    return _design(nodes, edges)


def test_a_feedback_loop_against_jackson() -> None:
    """160 URLs/s, a share 0.2 coming back 0.1 s later: the queue's visit ratio is
    V = 1 / (1 - 0.2) = 1.25, so it takes 200/s (the fluid network says so exactly) and
    waits C(10, 8) / 50 = 8.18 ms a visit; a URL spends V (8.18 + 40) + (V - 1) 100 + 1
    = 86.23 ms on average. The flow engine's wait and end-to-end mean are within 5%, its
    queue counts 1.25 visits a URL, and the request engine's end-to-end mean and median
    are within 5% of it (the flow engine's over eight seeds, or 3 standard errors)."""
    g, d_ms = 0.2, 100.0
    visits = 1 / (1 - g)
    wq = erlang_c_wq_ms(10, 160 * visits, 25)
    jackson = visits * (wq + 40) + (visits - 1) * d_ms + 1
    design, sc = _loop(g, d_ms / 1000), _steady(160, 300)
    flows = [_run(design, _steady(160, 150), "flow", seed) for seed in SEEDS]
    _mean_within([f["q"].mean for f in flows], wq)
    _has_teeth(statistics.mean(f["q"].mean for f in flows), 10, 200, 25)
    _mean_within([f["end_to_end"].mean for f in flows], jackson)
    flow = flows[0]
    assert flow["q"].count / flow["db"].count == pytest.approx(visits, rel=0.02)
    req = _run(design, sc, "request")
    for stat in ("mean", "p50"):
        f, r = getattr(flow["end_to_end"], stat), getattr(req["end_to_end"], stat)
        assert f == pytest.approx(r, rel=TOLERANCE), stat


def test_the_fluid_network_takes_a_loop_at_its_rate() -> None:
    """The rates the waits are worked out at come from the fluid network, not the flow
    engine's own expected counts (which turn a queue's chance backlog into the counts
    handed out, and round a loop read 205/s here): 160/s x 1.25 = 200/s once the loop
    has filled, and SCV 1 (Poisson, M/M/c departures)."""
    design, sc = _loop(0.2, 0.1), _steady(160, 30)
    topology = compiled.system_topology(design, sc)
    built: dict[str, Any] = {}
    record = engine.run_graph(topology, sc, [0], Timeline(sc), built=[built])[0]
    net = fluid.network(topology, record, fluid.captured(topology, built))
    rate = net.rate["q"][500:] / 0.01  # from t = 5 s
    assert rate == pytest.approx(np.full(len(rate), 200.0), rel=1e-6)
    assert net.scv["q"][500:] == pytest.approx(np.ones(len(rate)), abs=1e-9)
    arrived = record.components["q"].arrived[500:]
    assert float(arrived.mean()) / 0.01 == pytest.approx(200.0, rel=0.03)  # the counts agree


def test_a_deterministic_fleet_waits_as_md1() -> None:
    """One slot of fixed 4 ms at 200/s (rho 0.8): Pollaczek-Khinchine's M/D/1 wait
    rho / (2 mu (1 - rho)) = 8 ms, in the flow engine (exactly: Allen-Cunneen's factor
    1/2 is exact there) and within 5% in the request engine."""
    nodes = {"src": {"kind": "source"}, "q": QUEUE, "f": _fleet(1, 4, "deterministic")}
    design = _design(nodes, [("src", "q"), ("q", "f")])
    sc = _steady(200, 300)
    flow, req = _run(design, sc, "flow"), _run(design, sc, "request")
    assert flow["q"].mean == pytest.approx(8.0, rel=1e-6)
    assert req["q"].mean == pytest.approx(8.0, rel=TOLERANCE)
    assert flow["end_to_end"].mean == pytest.approx(req["end_to_end"].mean, rel=TOLERANCE)


# -- c fixed-time slots in parallel ------------------------------------------------------------

MDC_SEEDS = (0, 1, 2, 3)
MDC_URLS = 106_667  # a seed's URLs after the warm-up


@pytest.mark.parametrize("c", [1, 4])
def test_fixed_time_slots_wait_as_mdc(c: int) -> None:
    """c slots of a fixed 75 ms at load 0.8, Poisson arrivals: the queue's mean wait is
    M/D/c's, from Crommelin's exact formula (M/D/1 150 ms, M/D/4 28.96 ms). The request
    engine's, the mean over four seeds of about 106,700 URLs each, within 5%: an event
    simulation of M/D/c (a heap of c fixed-time servers, first come first served, 40 runs
    of 100,000 customers) has the mean wait of a run spread by a relative standard
    deviation of 2.6% (M/D/1) and 3.3% (M/D/4), the mean of four runs by 1.3% and 1.7%,
    so 5% is 3 to 4 standard deviations. Four slots paced as one server at their joint
    rate (the request engine until issue 26) wait as M/D/1 at 4 mu, 37.5 ms (measured
    37.4), far outside; so are M/D/3 and M/D/5. The flow engine's estimate (Allen-Cunneen:
    Erlang C's wait halved, exact for M/D/1 and 3.5% under M/D/4's, 27.96 ms) is within
    the same 5%."""
    mean_ms = 75.0
    mu = 1000.0 / mean_ms
    lam = 0.8 * c * mu
    theory = 1000.0 * mdc_wq(c, lam, mu)
    # Teeth: a 10% longer or shorter service; with c slots, one fewer or more, or all of
    # them paced as one server.
    wrong = [(c, lam, mu * 1.1), (c, lam, mu / 1.1)]
    if c > 1:
        wrong += [(c - 1, lam, mu), (c + 1, lam, mu), (1, lam, c * mu)]
    for args in wrong:
        assert abs(1000.0 * mdc_wq(*args) - theory) > TOLERANCE * theory, args
    nodes = {"src": {"kind": "source"}, "q": QUEUE, "f": _fleet(c, mean_ms, "deterministic")}
    design = _design(nodes, [("src", "q"), ("q", "f")])
    sc = _steady(lam, WARMUP_S + MDC_URLS / lam)
    waits = [
        gym.simulate(design, sc, engine="request", seed=s, warmup_s=WARMUP_S, tick_ms=100)
        .latency["q"]
        .mean
        for s in MDC_SEEDS
    ]
    assert statistics.mean(waits) == pytest.approx(theory, rel=TOLERANCE), waits
    flow = gym.simulate(design, sc, engine="flow", warmup_s=WARMUP_S, tick_ms=100).latency["q"]
    assert flow.mean == pytest.approx(theory, rel=TOLERANCE)


# -- the shipped systems, both engines ----------------------------------------------------------


@pytest.mark.parametrize(
    ("design", "scenario"),
    [
        ("url-shortener", "url-shortener"),
        ("url-shortener-undersized", "url-shortener"),
        ("ingestion", "ingestion"),
        ("ingestion-no-headroom", "ingestion"),
    ],
)
def test_the_engines_latencies_agree_on_the_shipped_systems(design: str, scenario: str) -> None:
    """Every node's and the end-to-end mean and median within 5% of the request engine's
    (within a microsecond where both are about 0: the ingestion log's waits), and the
    end-to-end 95th and 99th percentiles within 5% too. Measured (seed 0), flow against
    request, end to end mean / p50 / p95 / p99 in ms: url-shortener 1.534 / 1 / 2 / 7
    both; undersized 1.518 / 1 / 6 / 7 both; ingestion 398.5 / 60 / 3,820 / 4,010 against
    397.2 / 60 / 3,799 / 3,987; no headroom 580.6 / 60 / 2,210 / 2,280 against 582.0 / 60
    / 2,213 / 2,282."""
    paths = (SYSTEMS / f"{design}.yaml", SYSTEM_SCENARIOS / f"{scenario}.yaml")
    flow = gym.simulate(*paths, engine="flow").latency
    req = gym.simulate(*paths, engine="request").latency
    assert flow.keys() == req.keys()
    for name in req:
        for stat in ("mean", "p50"):
            f, r = getattr(flow[name], stat), getattr(req[name], stat)
            assert f == pytest.approx(r, rel=TOLERANCE, abs=1e-3), (name, stat)
        assert flow[name].count == pytest.approx(req[name].count, rel=0.01), name
    for stat in ("p95", "p99"):
        f, r = getattr(flow["end_to_end"], stat), getattr(req["end_to_end"], stat)
        assert f == pytest.approx(r, rel=TOLERANCE), stat


# -- the pieces -----------------------------------------------------------------------------


def test_erlang_c_and_the_quantiles() -> None:
    """Erlang C from Erlang B matches the textbook sums; the normal quantile matches the
    standard library's; the rows' grid keeps a service time's mean and lands on its p50,
    p95 and p99 (within the 0.2-1% the grid is rescaled by to keep the mean); an
    exponential wait's quantile is the inverse of its tail."""
    for c, lam, mu in ((1, 2.4, 4.0), (10, 28.0, 4.0), (5, 200.0, 50.0), (60, 54.0, 1.0)):
        p, mean = waiting.slot_wait(
            np.array([lam]), np.array([c]), _service("exponential", 1000 / mu), np.ones(1)
        )
        assert mean[0] == pytest.approx(erlang_c_wq_ms(c, lam, mu), rel=1e-9)
        a = lam / mu
        assert p[0] == pytest.approx(erlang_c_wq_ms(c, lam, mu) / 1000 * (c * mu - lam))
        assert 0 < p[0] < 1 and a < c
    u = np.array([1e-6, 0.01, 0.3, 0.5, 0.9, 0.999, 1 - 1e-9])
    exact = [statistics.NormalDist().inv_cdf(x) for x in u]
    assert waiting._normal_quantile(u) == pytest.approx(exact, rel=1e-8, abs=1e-9)
    for dist, cv in (("exponential", None), ("lognormal", 0.7), ("lognormal", 2.0)):
        service = _service(dist, 10.0, cv)
        values, weights = waiting.service_grid(service)
        assert float((values * weights).sum()) == pytest.approx(10.0)
        cw = np.cumsum(weights)
        for q in (0.5, 0.95, 0.99):
            at = values[np.searchsorted(cw, q)]
            exact_q = float(waiting.service_ms(service, np.array([q]))[0])
            assert at == pytest.approx(exact_q, rel=0.01)  # the mean's rescaling: < 1%
    tail = waiting.wait_ms(np.array([0.4]), np.array([10.0]), np.array([0.9]))
    assert tail[0] == pytest.approx(10.0 * math.log(0.4 / 0.1))


def _service(dist: str, mean_ms: float, cv: float | None = None) -> Any:
    from gym.models import ServiceTime

    return ServiceTime(dist=dist, mean_ms=mean_ms, cv=cv)  # type: ignore[arg-type]


@pytest.mark.xfail(
    strict=True,
    reason="a queue before a paced fleet reads its counts at every tick, which read waits "
    "under a tick as 0: p95 0 against the request engine's 1.10 ms, p99 10 against 1.93",
)
def test_a_paced_fleets_queue_waits_under_a_tick() -> None:
    """A graph fleet that declares ``paced`` (4 replicas x 4,000/s of fixed 250 ms, its
    starts metered by the request engine's bucket), fed Poisson 15,000/s for 20 s: its
    queue waits a fifth of a millisecond on average (p95 about 1 ms), under a tick, which
    the per-tick counts read as 0.
    The estimate should take the start bucket's stationary wait there, within 25% of the
    request engine's mean and p95 (the bucket's wait is an M/D/1-type approximation of
    it; seed 0). It reads the counts at every tick, as the crawler's frontier must (its
    waits behind a stalled store come from its counts, 49.3 ms against the request
    engine's 49.2, where the stationary wait read 23.7), so it misses."""
    fleet = {"kind": "fleet", "replicas": 4, "rps_per_replica": 4000, "paced": True}
    fleet["service"] = {"mean_ms": 250}
    nodes = {
        "src": {"kind": "source"},
        "q": {"kind": "queue", "drain_rps": 30_000, "buffer": 100_000},
        "f": fleet,
        "db": {"kind": "store", "rps": 40_000, "service": {"mean_ms": 10}},
    }
    design = _design(nodes, [("src", "q"), ("q", "f"), ("f", "db")])
    sc = _steady(15_000, 20)
    flow, req = (
        gym.simulate(design, sc, engine=e, seed=0).latency["q"] for e in ("flow", "request")
    )
    assert 0.05 < req.mean < 1.0 and req.p95 > 0.5  # waits under a tick (10 ms), not 0
    assert flow.mean == pytest.approx(req.mean, rel=0.25)
    assert flow.p95 == pytest.approx(req.p95, rel=0.25)
