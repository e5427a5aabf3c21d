"""Both engines against queueing theory and against Ciw (issue 41), shape by shape.

Each cell builds a small graph design, runs it over a few seeds in an engine, and compares
a figure with theory (a closed form: M/M/c/K) or with Ciw running the same network
(``tests/ciw_oracle.py``) over the same seeds. A figure passes within the issue's
tolerance: loss shares within 3% relative or 3 standard errors of the difference, whichever
is larger; mean waits within 10%, 99th percentiles within 15% (the larger of that and 3
standard errors). A cell one engine cannot meet yet is a strict xfail naming what it
measured: it fails the day the engine meets it, so the mark comes off.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gym
from gym.models import Scenario
from gym.system.graph import GraphDesign
from tests import ciw_oracle

pytest.importorskip("ciw")  # a test extra

SEEDS = range(4)
WARMUP_S = 10.0


def graph(nodes: dict[str, Any], edges: list[tuple[Any, ...]]) -> GraphDesign:
    listed = [{"from": e[0], "to": e[1], **(e[2] if len(e) > 2 else {})} for e in edges]
    nodes = {"users": {"kind": "source"}, **nodes}
    return GraphDesign.model_validate({"name": "cell", "graph": {"nodes": nodes, "edges": listed}})


def poisson(rps: float, duration_s: float) -> Scenario:
    return Scenario.model_validate({"system": "graph", "duration_s": duration_s, "base_rps": rps})


def within(got: list[float], want: list[float] | float, rel: float) -> tuple[bool, str]:
    """Whether the mean of ``got`` (over seeds) is within ``rel`` of ``want`` (a figure
    of theory, or Ciw's over seeds) or 3 standard errors of their difference."""
    g = np.asarray(got, dtype=float)
    w = np.asarray(want if isinstance(want, list) else [want], dtype=float)
    se = math.sqrt(g.var(ddof=1) / len(g) + (w.var(ddof=1) / len(w) if len(w) > 1 else 0.0))
    gap = abs(g.mean() - w.mean())
    ok = gap <= max(rel * abs(w.mean()), 3.0 * se)
    return (
        ok,
        f"{g.mean():.4g} against {w.mean():.4g} (ratio {g.mean() / w.mean():.3f}, se {se:.2g})",
    )


def gym_runs(
    design: GraphDesign, scenario: Scenario, engine: str, figure: Callable[[Any], float], **kw: Any
) -> list[float]:
    return [
        figure(gym.simulate(design, scenario, seed=s, engine=engine, warmup_s=WARMUP_S, **kw))
        for s in SEEDS
    ]


def loss_at(*names: str) -> Callable[[Any], float]:
    """The share of what reached the first of ``names`` that any of them lost."""

    def figure(r: Any) -> float:
        c = r.metrics.record.components
        lost = sum(int(v.sum()) for n in names for v in c[n].failed.values())
        return lost / int(c[names[0]].arrived.sum())

    return figure


# -- M/M/c/K: a finite queue before a fleet of exponential servers, against theory ----------

C, MEAN_MS, RHO = 4, 40.0, 0.95


def mmck(places: int) -> tuple[float, float]:
    """Theory's loss share and mean wait (ms) of M/M/c/K, K - c = ``places``, c = 4
    servers of mean 40 ms at load 0.95: p_K = a^c / c! rho^(K-c) p0, and W_q = L_q /
    (lambda (1 - p_K)), L_q = p0 a^c rho / (c! (1 - rho)^2) (1 - rho^(K-c+1) - (1 - rho)
    (K-c+1) rho^(K-c)) (Gross and Harris)."""
    mu = 1000.0 / MEAN_MS
    lam, a = RHO * C * mu, RHO * C
    head = sum(a**n / math.factorial(n) for n in range(C + 1))
    p0 = 1.0 / (head + a**C / math.factorial(C) * sum(RHO**k for k in range(1, places + 1)))
    p_k = a**C / math.factorial(C) * RHO**places * p0
    lq = p0 * a**C * RHO / (math.factorial(C) * (1 - RHO) ** 2)
    lq *= 1 - RHO ** (places + 1) - (1 - RHO) * (places + 1) * RHO**places
    return p_k, lq / (lam * (1 - p_k)) * 1000.0


def mmck_design(places: int, mean_ms: float = MEAN_MS) -> GraphDesign:
    fleet = {"kind": "fleet", "replicas": C, "rps_per_replica": 1000.0 / mean_ms}
    fleet["service"] = {"mean_ms": mean_ms, "dist": "exponential"}
    q = {"kind": "queue", "drain_rps": 100_000, "buffer": places}
    return graph({"q": q, "workers": fleet}, [("users", "q"), ("q", "workers")])


MMCK_SCENARIO = poisson(RHO * C * 1000.0 / MEAN_MS, 300)


def test_the_oracle_agrees_with_theory() -> None:
    """Ciw itself, on M/M/4/10 (6 places), within the tolerance of theory's loss share
    and mean wait: the oracle is built right."""
    loss, wait = mmck(6)
    runs = [ciw_oracle.run(mmck_design(6), MMCK_SCENARIO, seed=s, warmup_s=WARMUP_S) for s in SEEDS]
    ok, said = within([f["q"].loss for f in runs], loss, 0.03)
    assert ok, said
    ok, said = within([f["q"].mean_wait_ms for f in runs], wait, 0.10)
    assert ok, said


@pytest.mark.parametrize("engine", ["flow", "request"])
@pytest.mark.parametrize("places", [1, 2, 6, 20, 60])
def test_mmck_loss_share(places: int, engine: str) -> None:
    """The share a full queue turns away, against theory's p_K."""
    want, _ = mmck(places)
    ok, said = within(
        gym_runs(mmck_design(places), MMCK_SCENARIO, engine, loss_at("q")), want, 0.03
    )
    assert ok, said


@pytest.mark.parametrize("engine", ["flow", "request"])
@pytest.mark.parametrize("places", [1, 6, 60])
def test_mmck_mean_wait(places: int, engine: str) -> None:
    """The mean wait in the queue, against theory's W_q."""
    _, want = mmck(places)
    waits = gym_runs(mmck_design(places), MMCK_SCENARIO, engine, lambda r: r.latency["q"].mean)
    ok, said = within(waits, want, 0.10)
    assert ok, said


def mmck_p99(places: int) -> float:
    """Theory's 99th percentile wait (ms) of M/M/c/K (as :func:`mmck`): a URL let in
    with n >= c in the system waits for n - c + 1 ends at rate c mu, an Erlang time, so
    P(W > t) = sum over n = c .. K - 1 of pi_n / (1 - p_K) P(Poisson(c mu t) <= n - c),
    pi_n = p0 a^c / c! rho^(n - c); solved for 0.01 by bisection."""
    mu = 1000.0 / MEAN_MS
    a = RHO * C
    head = sum(a**n / math.factorial(n) for n in range(C + 1))
    p0 = 1.0 / (head + a**C / math.factorial(C) * sum(RHO**k for k in range(1, places + 1)))
    pi = [p0 * a**C / math.factorial(C) * RHO**j for j in range(places + 1)]  # n = c + j

    def beyond(t: float) -> float:
        x = C * mu * t / 1000.0
        tails = [
            sum(math.exp(-x) * x**i / math.factorial(i) for i in range(j + 1))
            for j in range(places)
        ]
        return sum(p * q for p, q in zip(pi, tails, strict=False)) / (1.0 - pi[-1])

    lo, hi = 0.0, 10_000.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if beyond(mid) > 0.01 else (lo, mid)
    return hi


@pytest.mark.parametrize("engine", ["flow", "request"])
@pytest.mark.parametrize("places", [6, 60])
def test_mmck_p99_wait(places: int, engine: str) -> None:
    """The 99th percentile wait in the queue, against theory's (:func:`mmck_p99`)."""
    waits = gym_runs(mmck_design(places), MMCK_SCENARIO, engine, lambda r: r.latency["q"].p99)
    ok, said = within(waits, mmck_p99(places), 0.15)
    assert ok, said


# -- shapes with no closed form, against Ciw -------------------------------------------------


def _fleet_into_loss(
    replicas: int, service: dict[str, Any], store_rps: float, places: int
) -> GraphDesign:
    """A queue of ``places`` before ``replicas`` slots of ``service`` (one slot a
    replica), then a store of fixed 10 ms writes at ``store_rps``."""
    fleet = {"kind": "fleet", "replicas": replicas, "rps_per_replica": 1000.0 / service["mean_ms"]}
    fleet["service"] = service
    db = {"kind": "store", "rps": store_rps, "service": {"mean_ms": 10, "dist": "deterministic"}}
    q = {"kind": "queue", "drain_rps": 100_000, "buffer": places}
    return graph(
        {"q": q, "workers": fleet, "db": db}, [("users", "q"), ("q", "workers"), ("workers", "db")]
    )


def _fixed_fleet_into_loss() -> GraphDesign:
    """16 fixed 100 ms slots (a capacity of 160/s) behind a roomy queue, then a store of
    2 fixed 10 ms slots: the fleet's departures are smoother than Poisson, and the store
    loses 0.277 of them in Ciw where Poisson arrivals would lose Erlang B(2, 1.5) = 0.310
    (so a model taking them as Poisson fails the cell)."""
    return _fleet_into_loss(16, {"mean_ms": 100, "dist": "deterministic"}, 200, 100_000)


def _random_fleet_into_loss() -> GraphDesign:
    """8 exponential servers of 40 ms (200/s) behind a queue of 10 places, then a store of
    3 fixed 10 ms slots: the fleet's queue overflows and what it sends on is near Poisson
    but thinned by the fleet's full slots."""
    return _fleet_into_loss(8, {"mean_ms": 40, "dist": "exponential"}, 300, 10)


def _lognormal_fleet() -> GraphDesign:
    """A queue of 8 places before 6 servers of lognormal 60 ms times, cv 1.5 (100/s):
    M/G/6/14, whose losses depend on more than the mean (no closed form)."""
    fleet = {"kind": "fleet", "replicas": 6, "rps_per_replica": 1000.0 / 60.0}
    fleet["service"] = {"mean_ms": 60, "dist": "lognormal", "cv": 1.5}
    q = {"kind": "queue", "drain_rps": 100_000, "buffer": 8}
    return graph({"q": q, "workers": fleet}, [("users", "q"), ("q", "workers")])


def _tandem(dist: str) -> GraphDesign:
    """A service of 5 slots (3 Erlangs offered: it turns away about a tenth, so what it
    passes on is smoother than Poisson) then a store of 4, both of 10 ms ``dist`` times."""
    a = {"kind": "service", "rps": 500, "service": {"mean_ms": 10, "dist": dist}}
    b = {"kind": "store", "rps": 400, "service": {"mean_ms": 10, "dist": dist}}
    return graph({"a": a, "b": b}, [("users", "a"), ("a", "b")])


def _feedback() -> GraphDesign:
    """A queue of 50 places before 4 exponential servers of 40 ms; a fifth of what they
    serve comes back to the queue half a second later, the rest goes to a roomy store."""
    fleet = {"kind": "fleet", "replicas": 4, "rps_per_replica": 25}
    fleet["service"] = {"mean_ms": 40, "dist": "exponential"}
    db = {"kind": "store", "rps": 1000, "service": {"mean_ms": 5, "dist": "exponential"}}
    q = {"kind": "queue", "drain_rps": 100_000, "buffer": 50}
    edges = [
        ("users", "q"),
        ("q", "workers"),
        ("workers", "db", {"share": 0.8}),
        ("workers", "q", {"share": 0.2, "delay_s": 0.5}),
    ]
    return graph({"q": q, "workers": fleet, "db": db}, edges)


#: Ciw cells: (design, load per second, the station, the figure, its tolerance, the
#: engines that cannot meet it yet with what they measured).
CELLS: dict[str, tuple[Callable[[], GraphDesign], float, str, str, float, dict[str, str]]] = {
    "fixed fleet into a loss station": (
        _fixed_fleet_into_loss,
        150,
        "db",
        "loss",
        0.03,
        {"flow": "1.03x Ciw's loss share (0.285 against 0.277)"},
    ),
    "exponential fleet into a loss station": (_random_fleet_into_loss, 190, "db", "loss", 0.03, {}),
    "exponential fleet's queue, loss": (_random_fleet_into_loss, 190, "q", "loss", 0.03, {}),
    "lognormal fleet's queue, loss": (_lognormal_fleet, 95, "q", "loss", 0.03, {}),
    "lognormal fleet's queue, mean wait": (_lognormal_fleet, 95, "q", "mean_wait_ms", 0.10, {}),
    "lognormal fleet's queue, p99 wait": (_lognormal_fleet, 95, "q", "p99_wait_ms", 0.15, {}),
    "loss station behind a fixed-service one": (
        lambda: _tandem("deterministic"),
        300,
        "b",
        "loss",
        0.03,
        {"flow": "1.30x Ciw's loss share (0.139 against 0.107)"},
    ),
    "loss station behind an exponential one": (
        lambda: _tandem("exponential"),
        300,
        "b",
        "loss",
        0.03,
        {"flow": "1.11x Ciw's loss share (0.169 against 0.152)"},
    ),
    "feedback loop, mean wait": (_feedback, 70, "q", "mean_wait_ms", 0.10, {}),
    "feedback loop, p99 wait": (
        _feedback,
        70,
        "q",
        "p99_wait_ms",
        0.15,
        {},
    ),
}


@pytest.fixture(scope="module")
def ciw_figures() -> dict[str, list[Any]]:
    """Ciw's runs of each cell's design, over the seeds (run once per module)."""
    out = {}
    for name, (build, rps, _, _, _, _) in CELLS.items():
        sc = poisson(rps, 120)
        out[name] = [ciw_oracle.run(build(), sc, seed=s, warmup_s=WARMUP_S) for s in SEEDS]
    return out


def _gym_figure(station: str, figure: str) -> Callable[[Any], float]:
    if figure == "loss":
        return loss_at(station)
    if figure == "mean_wait_ms":
        return lambda r: float(r.latency[station].mean)
    return lambda r: float(r.latency[station].p99)


@pytest.mark.parametrize("engine", ["flow", "request"])
@pytest.mark.parametrize("cell", list(CELLS))
def test_against_ciw(
    cell: str, engine: str, ciw_figures: dict[str, list[Any]], request: pytest.FixtureRequest
) -> None:
    """The engine's figure at the cell's station against Ciw's, over the same seeds."""
    build, rps, station, figure, rel, cannot = CELLS[cell]
    if engine in cannot:
        request.applymarker(pytest.mark.xfail(strict=True, reason=cannot[engine]))
    want = [getattr(f[station], figure) for f in ciw_figures[cell]]
    got = gym_runs(build(), poisson(rps, 120), engine, _gym_figure(station, figure))
    ok, said = within(got, want, rel)
    assert ok, said


# -- a write buffer before a store: the same at every tick -----------------------------------


def _buffered() -> GraphDesign:
    buf = {"kind": "write_buffer", "buffer": 200}
    db = {"kind": "store", "rps": 1000, "service": {"mean_ms": 10, "dist": "exponential"}}
    return graph({"buf": buf, "db": db}, [("users", "buf"), ("buf", "db")])


#: What the flow engine's write buffer lost, by tick, where it is not within the tolerance
#: of the request engine's 5.1% (which does not move with the tick): it flushes once a
#: tick. At 5 ms it loses 4.7%, within 3 standard errors.
FLOW_BUFFER = {1: "0.0%", 10: "4.1%", 50: "1.9%"}


@pytest.mark.parametrize("tick_ms", [1, 5, 10, 50])
def test_a_write_buffer_does_not_depend_on_the_tick(
    tick_ms: int, request: pytest.FixtureRequest
) -> None:
    """The share a write buffer before a store of 10 exponential slots loses at load
    0.95, in the flow engine at each tick, against the request engine at 10 ms."""
    if tick_ms in FLOW_BUFFER:
        request.applymarker(
            pytest.mark.xfail(
                strict=True,
                reason=f"the flow engine's write buffer loses {FLOW_BUFFER[tick_ms]} at a "
                f"{tick_ms} ms tick against the request engine's 5.1%",
            )
        )
    sc = poisson(950, 120)
    want = gym_runs(_buffered(), sc, "request", loss_at("buf", "db"))
    got = gym_runs(_buffered(), sc, "flow", loss_at("buf", "db"), tick_ms=tick_ms)
    ok, said = within(got, want, 0.03)
    assert ok, said


def _drained() -> GraphDesign:
    """M/M/4/24 (40 ms) whose queue hands out at most 80/s, below the fleet's 100/s."""
    design = mmck_design(20).model_dump(mode="json", by_alias=True)
    design["graph"]["nodes"]["q"]["drain_rps"] = 80
    return GraphDesign.model_validate(design)


# -- the flow engine says where it is off ------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "rps", "node", "words"),
    [
        # Services of 0.8 ticks (served at a quota a tick) and 2 (drawn): M/M/4/K as above
        # at a 10 ms tick, each at load 0.95.
        (lambda: mmck_design(60, 8.0), RHO * C * 125.0, "q", "too rarely (checked on M/M/4/K"),
        (lambda: mmck_design(6, 20.0), RHO * C * 50.0, "q", "too often (checked on M/M/4/K"),
        (_drained, 95, "q", "drain_rps is near the fleet's capacity"),
        (lambda: _tandem("deterministic"), 300, "b", "a loss station behind a"),
        (lambda: _tandem("exponential"), 300, "b", "a loss station behind a"),
        (_buffered, 950, "buf", "a write buffer held writes near"),
        (_feedback, 70, None, "latency around a feedback loop is estimated"),
    ],
)
def test_the_flow_engine_warns_where_it_was_measured_off(
    build: Callable[[], GraphDesign], rps: float, node: str | None, words: str
) -> None:
    """Each shape the flow engine misses above, run in the regime it was checked in,
    carries a warning naming the node and what was measured; at a fifth of the load (far
    from its capacity) the same node is not warned about: the rules read the run."""
    flow = gym.simulate(build(), poisson(rps, 60), seed=0)
    said = [w for w in flow.warnings if words in w]
    assert said and (node is None or said[0].startswith(f"{node}: ")), flow.warnings
    assert "--engine request" in said[0]
    if node is not None:  # a loop's latency is an estimate at any load
        calm = gym.simulate(build(), poisson(rps / 5, 60), seed=0)
        assert not [w for w in calm.warnings if words in w], calm.warnings


def test_no_shipped_design_is_warned_about() -> None:
    """The shipped designs use fixed service times and lose behind a loss station only in
    overloads, which the flow engine counts right: none of them is warned about, every
    crawler design under the chaos scenario and each system under its own (the
    url-shortener's undersized cache loses at 0.98 of the store's capacity behind it, where
    both engines agree within 0.3%)."""
    from tests.conftest import ROOT

    crawlers = sorted((ROOT / "designs").glob("*.yaml"))
    crawlers += sorted((ROOT / "designs" / "levers").glob("*.yaml"))
    pairs = [(str(d), "scenarios/crawler-chaos.yaml") for d in crawlers]
    for system in ("url-shortener", "ingestion"):
        for design in sorted((ROOT / "designs" / "systems").glob(f"{system}*.yaml")):
            pairs.append((str(design), f"scenarios/systems/{system}.yaml"))
    for design, scenario in pairs:
        r = gym.simulate(ROOT / design, ROOT / scenario, seed=0)
        assert not [w for w in r.warnings if "--engine request" in w], (design, r.warnings)


def test_many_runs_and_sweeps_carry_the_warning(tmp_path: Any) -> None:
    """What a flow run is warned about reaches --runs and a sweep's rows too: they keep
    each run's, once each (M/M/4/10 of 8 ms services, under the 10 ms tick, at load 0.95:
    16 runs; a sweep of its buffer)."""
    from gym.explore.montecarlo import run_many, unchecked

    design, sc = mmck_design(6, 8.0), poisson(RHO * C * 125.0, 60)
    mc = run_many(design, sc, runs=16)
    said = unchecked(mc.runs)
    assert len(said) == 1 and said[0].startswith("q: a finite queue before workers")
    assert unchecked([{"unchecked": said}, {"unchecked": said}, {}]) == said

    path = tmp_path / "mmck.yaml"
    path.write_text(json.dumps(design.model_dump(mode="json", by_alias=True)))
    scenario = tmp_path / "load.yaml"
    scenario.write_text(json.dumps(sc.model_dump(mode="json", by_alias=True)))
    rows = gym.sweep(path, ["graph.nodes.q.buffer=6,7"], scenario)
    assert all("q: a finite queue before workers" in str(w) for w in rows["warnings"])


@pytest.mark.parametrize("tick_ms", [1, 50])
def test_the_request_engines_write_buffer_is_the_same_at_every_tick(tick_ms: int) -> None:
    """The reference the flow engine's write buffer is held to: the request engine's
    losses at a 1 and a 50 ms tick within the tolerance of its own at 10 ms (it flushes
    as slots free, not once a tick)."""
    sc = poisson(950, 60)
    want = gym_runs(_buffered(), sc, "request", loss_at("buf", "db"))
    got = gym_runs(_buffered(), sc, "request", loss_at("buf", "db"), tick_ms=tick_ms)
    ok, said = within(got, want, 0.03)
    assert ok, said


def test_a_crash_takes_a_random_share_of_a_drawn_fleets_services() -> None:
    """20 servers of 10 s exponential services (2/s) under 19/s, the queue always full: a
    crash of 10 of them leaves 10 busy, each ending at 0.1/s whichever services the crash
    took (a random share, as the request engine's crashed replicas hold), and each
    taking the next URL at once: 1 end a second, 10 in the 10 s after the crash, over 12
    seeds within 15% or 3 standard errors. Taking the services due soonest instead (the
    ones left then end late) gave 2.5."""
    fleet = {"kind": "fleet", "replicas": 20, "rps_per_replica": 0.1}
    fleet["service"] = {"mean_ms": 10_000, "dist": "exponential"}
    q = {"kind": "queue", "drain_rps": 100_000, "buffer": 100}
    design = graph({"q": q, "workers": fleet}, [("users", "q"), ("q", "workers")])
    crash = {"kind": "crash", "target": "workers", "at_s": 30, "replicas": 10}
    sc = Scenario.model_validate(
        {"system": "graph", "duration_s": 60, "base_rps": 19, "faults": [crash]}
    )
    ended = []
    for seed in range(12):
        c = gym.simulate(design, sc, seed=seed).metrics.record.components["workers"]
        ended.append(float((c.out + c.served)[3000:4000].sum()))  # 10 ms ticks: 30-40 s
    ok, said = within(ended, 10.0, 0.15)
    assert ok, said


def test_a_drawn_fleets_service_is_not_rounded_to_ticks() -> None:
    """The rounding warning (a fleet's service held for whole ticks) is for the fleets the
    flow engine does not draw: 15 ms fixed services on 10 ms ticks run as 20 ms and are
    warned about; 15 ms exponential ones are drawn, run as 15 ms on average and are not."""
    for dist, warned in (("deterministic", True), ("exponential", False)):
        design = mmck_design(6, 15.0).model_dump(mode="json", by_alias=True)
        design["graph"]["nodes"]["workers"]["service"]["dist"] = dist
        r = gym.simulate(GraphDesign.model_validate(design), poisson(100, 20), seed=0)
        assert any("15 ms runs as 20 ms" in w for w in r.warnings) is warned, r.warnings
        if not warned:
            assert r.latency["workers"].mean == pytest.approx(15.0, rel=0.05)


def test_the_warning_names_a_tick_that_would_do() -> None:
    """8 ms exponential services on 10 ms ticks are served at a quota (0.8 ticks): the
    warning names the coarsest tick at which they are 4 ticks or more (2 ms, of the ticks
    that divide a second); before a queue whose drain also binds, no tick would do, and
    it names none."""
    r = gym.simulate(mmck_design(60, 8.0), poisson(RHO * C * 125.0, 60), seed=0)
    said = [w for w in r.warnings if w.startswith("q: a finite queue")]
    assert said and said[0].endswith("--engine request simulates it (as does --tick-ms 2)")
    drained = _drained()
    r = gym.simulate(drained, poisson(95, 60), seed=0, tick_ms=50)
    said = [w for w in r.warnings if w.startswith("q: a finite queue")]
    assert said and said[0].endswith("--engine request simulates it"), said
