"""Where the engines' grid changes an input by more than 1%, the result says so
(``Result.warnings``, ``warnings`` in JSON), with the figure as written and as run."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import gym
from gym.analysis.rounding import warnings
from gym.models import AsyncWriterConfig
from tests.conftest import REFERENCE, ROOT, design, scenario, variant


@pytest.mark.parametrize(
    ("tick_ms", "expected"),
    [
        (10, None),  # 250 ms = 25 ticks exactly
        (100, "250 ms runs as 300 ms on 100 ms ticks (+20%)"),  # round(2.5) -> 3 ticks
        (1000, "250 ms runs as 1000 ms on 1000 ms ticks (+300%)"),  # at least one tick
    ],
)
def test_flow_fetch_time_rounded_to_ticks(tick_ms: int, expected: str | None) -> None:
    result = gym.simulate(REFERENCE, tick_ms=tick_ms)
    fetch = [w for w in result.warnings if w.startswith("fetchers.service.mean_ms")]
    if expected is None:
        assert fetch == []
    else:
        assert len(fetch) == 1 and expected in fetch[0]
        # Ticks that keep 250 ms within 1%: 250 (1 tick), 125 (2), 50 (5).
        assert "--tick-ms 250, 125 or 50" in fetch[0]
        assert result.to_dict()["warnings"] == list(result.warnings)


def test_request_engine_slots_rounded() -> None:
    """A store of 30 writes/s at 20 ms is 0.6 slots; one slot serves 1 / 20 ms = 50/s."""
    d = design(page_store={"rps": 30})
    out = warnings(d, scenario(), engine="request", tick_ms=10)
    store = [w for w in out if w.startswith("page_store.rps")]
    assert len(store) == 1
    assert store[0].startswith(
        "page_store.rps: 0.6 slots rounded to 1 (+67%): capacity 50/s, not 30/s"
    )
    assert "round(30/s x 20 ms) concurrent slots" in store[0]
    # The flow engine's loss stations use the same slots (Erlang loss), so it warns too;
    # behind the async writer its store takes what the writer meters per tick: no warning.
    flow = [w for w in warnings(d, scenario(), engine="flow", tick_ms=10) if "slot" in w]
    assert flow == [w.replace("the request engine gives", "both engines give") for w in store]
    metered = d.model_copy(update={"async_writer": AsyncWriterConfig(buffer=1_000)})
    assert not [w for w in warnings(metered, scenario(), engine="flow", tick_ms=10) if "slot" in w]


def test_fault_length_on_the_tick_grid() -> None:
    """A 0.25 s stall from 2.345 s on 100 ms ticks runs 2.4-2.6 s: 0.2 s, -20%. On 10 ms
    ticks it runs 2.35-2.6 s: 0.25 s, unchanged."""
    sc = scenario(faults=[{"at_s": 2.345, "kind": "stall", "target": "page_store", "for_s": 0.25}])
    d = design()
    coarse = [w for w in warnings(d, sc, engine="flow", tick_ms=100) if "faults[0]" in w]
    assert len(coarse) == 1 and "runs 2.4-2.6 s, 0.2 s (-20%)" in coarse[0]
    assert not [w for w in warnings(d, sc, engine="flow", tick_ms=10) if "faults[0]" in w]


def test_shipped_inputs_have_no_warnings_at_the_default_tick() -> None:
    for engine in ("flow", "request"):
        d = variant(REFERENCE)
        assert gym.simulate(d, engine=engine).warnings == ()


def test_cli_prints_the_warning_on_stderr_and_in_json() -> None:
    import json

    from typer.testing import CliRunner

    from gym.cli import app

    res = CliRunner().invoke(app, ["run", str(REFERENCE), "--tick-ms", "1000", "--json"])
    assert "warning: fetchers.service.mean_ms" in res.stderr
    assert "+300%" in json.loads(res.stdout)["warnings"][0]
    quiet = CliRunner().invoke(app, ["run", str(REFERENCE)])
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr


def test_request_engine_writer_flushes_within_a_tick() -> None:
    """writer-lossless: a store of 25,000/s at 20 ms is 500 slots, the 0.85 ceiling 425.
    The request engine fills a slot below the ceiling as soon as one frees, so held writes
    drain at 425 / 0.02 s = 21,250/s = 0.85 x 25,000 on any tick: no warning, even on
    100 ms and 1,000 ms ticks (flushed once a tick, it drained 425 / 0.1 s = 4,250/s on
    100 ms ticks, -80%, and said so)."""
    d = gym.load_design(ROOT / "designs" / "writer-lossless.yaml")
    sc = scenario()
    for tick in (1, 10, 20, 100, 1000):
        assert not [w for w in warnings(d, sc, engine="request", tick_ms=tick) if "async" in w]
    assert not [w for w in warnings(d, sc, engine="flow", tick_ms=100) if "async" in w]


def test_flow_fetch_latency_is_the_designs_time() -> None:
    """14 ms on 10 ms ticks is round(1.4) = 1 tick: the flow engine holds each fetch 10 ms
    (and warns), but its latency estimate reports the design's 14 ms, as the request
    engine measures it, a crawler's fetchers as a graph's fleet (until issue 40 the
    crawler's own estimate reported the 10 ms held); 1,000 ms ticks hold a 250 ms fetch
    1,000 ms and report 250."""
    d = variant(REFERENCE, **{"fetchers.service": {"dist": "deterministic", "mean_ms": 14}})
    r = gym.simulate(d, scenario())
    assert r.latency["fetchers"].mean == 14.0
    said = [w for w in r.warnings if "14 ms runs as 10 ms" in w]
    assert said and "its fetch latency is the design's" in said[0]
    coarse = gym.simulate(REFERENCE, scenario(), tick_ms=1000)
    assert coarse.latency["fetchers"].mean == 250.0


def test_duration_off_the_grid_is_counted_as_run() -> None:
    """A 10.5 s run on 1,000 ms ticks runs 11 ticks: offered, throughput and the JSON's
    duration are over 11 s, and the result says so. With deterministic arrivals of
    1,000/s: 11,000 offered."""
    sc = scenario(duration_s=10.5)
    r = gym.simulate(design(), sc, tick_ms=1000)
    assert r.metrics.offered == 11_000 and r.metrics.duration_s == 11.0
    assert r.metrics.throughput_rps == r.metrics.served / 11.0
    assert any(w.startswith("duration_s: 10.5 s") for w in r.warnings)
    assert gym.simulate(design(), sc, tick_ms=10).warnings == ()


def test_sweep_passes_max_urls_to_every_run(monkeypatch: Any) -> None:
    """`sweep --engine request --max-urls N` allows each run N URLs too (it used the default
    2,000,000 per run, so a long scenario was refused after the sweep's own check
    passed)."""
    from gym.explore import sweep

    seen: list[int] = []
    real = sweep.tasks_for

    def spy(*a: Any, **k: Any) -> Any:
        seen.append(k["max_urls"])
        return real(*a, **k)

    monkeypatch.setattr(sweep, "tasks_for", spy)
    sc = scenario(duration_s=1)
    points = sweep.grid(REFERENCE, ["fetchers.replicas=4"])
    sweep.run(points, sc, runs=1, engine="request", max_urls=10_000_000)
    assert seen == [10_000_000]


def test_sweep_rows_carry_their_warnings() -> None:
    """A point whose fetch time the tick grid changes (14 ms runs as 10 ms) says so in its
    row (``warnings``) and once on stderr; a point it does not change has no such key."""
    from typer.testing import CliRunner

    from gym.cli import app
    from gym.explore import sweep

    sc = scenario(duration_s=2)
    points = sweep.grid(REFERENCE, ["fetchers.service.mean_ms=14,250"])
    rows = sweep.run(points, sc)
    assert "14 ms runs as 10 ms" in rows[0]["warnings"] and "warnings" not in rows[1]
    res = CliRunner().invoke(
        app, ["sweep", str(REFERENCE), "--vary", "fetchers.service.mean_ms=14,250", "--json"]
    )
    assert res.stderr.count("warning: fetchers.service.mean_ms") == 1


def test_writer_flush_with_random_write_times() -> None:
    """Exponential 20 ms writes: each of the 425 slots below the ceiling takes a held write
    as soon as its last ends, so it writes back to back, 1 / 0.02 s = 50 a second: 425 x
    50 = 21,250/s = 0.85 x 25,000 whatever the tick, and no warning. (Flushed once a tick,
    the slots freed within a 10 ms tick, 1 - exp(-1/2) = 39.3% of them, waited for the
    next: 425 x 0.393 / 0.01 s = 16,722/s, -21%, and no tick came within 1%.)"""
    d = variant(
        REFERENCE,
        **{
            "page_store.service": {"dist": "exponential", "mean_ms": 20},
            "async_writer": {"buffer": 60_000},
        },
    )
    for tick in (1, 10, 100):
        assert not [
            w for w in warnings(d, scenario(), engine="request", tick_ms=tick) if "flush" in w
        ]


def test_twelve_and_a_half_slots_a_replica_rounded_to_twelve() -> None:
    """Two replicas of 250 fetches/s at a fixed 50 ms: 250 x 0.05 = 12.5 slots a replica,
    round(12.5) = 12 (half to even), so the request engine serves 2 x 12 / 0.05 s = 480/s,
    not 2 x 250 = 500/s: -4.0%, under the old 5% threshold and over 1%. The flow engine
    does not give a fleet slots (its fetches last 5 whole 10 ms ticks): it runs 500/s and
    says nothing. 1,000 URLs/s offered keep the fleet busy."""
    d = design(
        fetchers={
            "replicas": 2,
            "rps_per_replica": 250,
            "service": {"dist": "deterministic", "mean_ms": 50},
        }
    )
    sc = scenario()
    request = gym.simulate(d, sc, engine="request")
    (line,) = [w for w in request.warnings if w.startswith("fetchers")]
    assert line.startswith(
        "fetchers.rps_per_replica: 12.5 slots a replica rounded to 12 (-4.0%): "
        "capacity 480/s, not 500/s"
    )
    assert "each of the 2 fetchers replicas round(250/s x 50 ms) concurrent slots" in line
    served = request.metrics.record.components["fetchers"].out
    assert served[100:1000].sum() / 9.0 == 480.0  # seconds 1-10, as the warning says
    flow = gym.simulate(d, sc, engine="flow")
    assert flow.warnings == ()
    assert flow.metrics.record.components["fetchers"].out[100:1000].sum() / 9.0 == 500.0


def test_the_undersized_url_shortener_store_warns() -> None:
    """designs/systems/url-shortener-undersized.yaml: a store of 2,500 writes/s at 5 ms is
    12.5 slots, rounded to 12: 12 / 0.005 s = 2,400/s, not 2,500/s (-4.0%), in both
    engines (a store without a write buffer is an Erlang loss station in both)."""
    d = gym.load_design(ROOT / "designs" / "systems" / "url-shortener-undersized.yaml")
    sc = gym.load_scenario(ROOT / "scenarios" / "systems" / "url-shortener.yaml")
    for engine, who in (("flow", "both engines give"), ("request", "the request engine gives")):
        assert warnings(d, sc, engine=engine, tick_ms=10) == [
            "graph.nodes.kv.rps: 12.5 slots rounded to 12 (-4.0%): capacity 2,400/s, not "
            f"2,500/s ({who} kv round(2,500/s x 5 ms) concurrent slots)"
        ]


def _graph(edge_delay_s: float = 0.0, db_rps: float = 1_000, buffer: bool = False) -> Any:
    """users -> q -> f (one replica of 2,000/s at 50 ms) -> [buffer ->] db (10 ms writes)."""
    from gym.system.graph import GraphDesign

    nodes: dict[str, Any] = {
        "users": {"kind": "source"},
        "q": {"kind": "queue", "drain_rps": 2_000, "buffer": 10_000},
        "f": {"kind": "fleet", "replicas": 1, "rps_per_replica": 2_000, "service": {"mean_ms": 50}},
        "db": {"kind": "store", "rps": db_rps, "service": {"mean_ms": 10}},
    }
    path = ["users", "q", "f", "db"]
    if buffer:
        nodes["buf"] = {"kind": "write_buffer", "buffer": 10_000}
        path = ["users", "q", "f", "buf", "db"]
    edges: list[dict[str, Any]] = [{"from": a, "to": b} for a, b in itertools.pairwise(path)]
    if edge_delay_s:
        edges[0]["delay_s"] = edge_delay_s
    return GraphDesign.model_validate({"graph": {"nodes": nodes, "edges": edges}})


def _retrying(backoff_s: float, jitter: float = 0.0, attempts: int = 2) -> Any:
    return design(retries={"attempts": attempts, "backoff_s": backoff_s, "jitter": jitter})


# Each rounding, by 1.5% (20.3 -> 20) and by 0.5% (20.1 -> 20):
# (what, design, scenario, engine, the warning's start, the figures it names).
GRAPH_SC = {"system": "graph"}
MOVES = [
    # round(406/s x 50 ms) = round(20.3) = 20 slots: 2 x 20 / 0.05 = 800/s, not 812 (-1.5%)
    (
        "fleet slots",
        lambda x: design(
            fetchers={"replicas": 2, "rps_per_replica": 20 * x, "service": {"mean_ms": 50}}
        ),
        {},
        "request",
        "fetchers.rps_per_replica: 20.3 slots a replica rounded to 20 (-1.5%)",
        "capacity 800/s, not 812/s",
    ),
    # round(1,015/s x 20 ms) = round(20.3) = 20 slots: 20 / 0.02 = 1,000/s, not 1,015 (-1.5%)
    (
        "store slots",
        lambda x: design(page_store={"rps": 50 * x}),
        {},
        "flow",
        "page_store.rps: 20.3 slots rounded to 20 (-1.5%)",
        "capacity 1,000/s, not 1,015/s",
    ),
    # A 203 ms fetch is round(20.3) = 20 ticks of 10 ms: 200 ms (-1.5%)
    (
        "fetch ticks",
        lambda x: design(
            fetchers={"replicas": 4, "rps_per_replica": 4_000, "service": {"mean_ms": 10 * x}}
        ),
        {},
        "flow",
        "fetchers.service.mean_ms: 203 ms runs as 200 ms on 10 ms ticks (-1.5%)",
        "the flow engine holds each fetch for whole ticks",
    ),
    # A retry 0.203 s later (no jitter) waits round(20.3) = 20 ticks: 200 ms (-1.5%)
    (
        "retry wait",
        lambda x: _retrying(x / 100),
        {},
        "flow",
        "retries.backoff_s: the flow engine waits whole ticks",
        "retry 1 waits 200 ms on average, not 203 ms (-1.5%",
    ),
    # A 0.203 s edge is round(20.3) = 20 ticks: 0.2 s (-1.5%), in both engines
    (
        "edge delay",
        lambda x: _graph(edge_delay_s=x / 100),
        GRAPH_SC,
        "request",
        "graph.edges[0].delay_s: 0.203 s runs as 20 ticks of 10 ms = 0.2 s (-1.5%)",
        "in both engines",
    ),
    # A graph store of 2,030/s at 10 ms: round(20.3) = 20 slots, 2,000/s (-1.5%)
    (
        "graph store slots",
        lambda x: _graph(db_rps=100 * x),
        GRAPH_SC,
        "request",
        "graph.nodes.db.rps: 20.3 slots rounded to 20 (-1.5%)",
        "capacity 2,000/s, not 2,030/s",
    ),
]


@pytest.mark.parametrize(("what", "make", "sc", "engine", "start", "figures"), MOVES)
def test_a_rounding_of_one_and_a_half_percent_warns(
    what: str, make: Any, sc: dict[str, Any], engine: str, start: str, figures: str
) -> None:
    """Every rounding that moves a figure by 1.5% says so (the old threshold was 5%)."""
    lines = warnings(make(20.3), scenario(**sc), engine=engine, tick_ms=10)
    assert len([w for w in lines if w.startswith(start)]) == 1, (what, lines)
    (line,) = [w for w in lines if w.startswith(start)]
    assert figures in line, (what, line)


@pytest.mark.parametrize(("what", "make", "sc", "engine", "start", "figures"), MOVES)
def test_a_rounding_of_half_a_percent_does_not(
    what: str, make: Any, sc: dict[str, Any], engine: str, start: str, figures: str
) -> None:
    """The same roundings by 0.5% (20.1 -> 20: 800/s for 804, 1,000/s for 1,005, a fetch
    and a retry wait of 200 ms for 201, 0.2 s for 0.201, 2,000/s for 2,010) pass without
    a word (the old code did not warn at 1.5% either: its threshold was 5%)."""
    assert warnings(make(20.1), scenario(**sc), engine=engine, tick_ms=10) == [], what


def test_a_fault_length_off_by_one_and_a_half_percent() -> None:
    """A stall from 1 s for 0.335 s ends at 1.335 s, which the grid moves to the next
    10 ms tick, 1.34 s: 0.34 s (+1.5%). For 0.995 s it ends at 2 s: 1 s (+0.5%), silent."""

    def stall(for_s: float) -> Any:
        return scenario(
            faults=[{"at_s": 1, "kind": "stall", "target": "page_store", "for_s": for_s}]
        )

    (line,) = warnings(design(), stall(0.335), engine="request", tick_ms=10)
    assert line == (
        "faults[0].for_s: 1-1.335 s lasts 0.335 s, but both engines act on 10 ms tick "
        "boundaries, so it runs 1-1.34 s, 0.34 s (+1.5%)"
    )
    assert warnings(design(), stall(0.995), engine="request", tick_ms=10) == []


def test_jittered_retry_waits_on_the_tick_grid() -> None:
    """A first retry 12 ms later within +-50% draws its wait evenly from 6-18 ms, 0.6-1.8
    ticks of 10 ms; the flow engine waits the nearest whole tick: 1 tick from 0.6 to 1.5
    (a share 0.9 / 1.2 = 0.75), 2 from 1.5 to 1.8 (0.25): 1.25 ticks, 12.5 ms on average,
    not 12 (+4.2%). At 15 ms (0.75-2.25 ticks) half round to 1 and half to 2: 15 ms,
    unchanged. The request engine waits the time drawn."""
    (line,) = [
        w
        for w in warnings(_retrying(0.012, 0.5), scenario(), engine="flow", tick_ms=10)
        if w.startswith("retries")
    ]
    assert "retry 1 waits 12.5 ms on average, not 12 ms (+4.2%" in line
    assert "use --tick-ms" in line and line.endswith("or the request engine)")
    assert warnings(_retrying(0.015, 0.5), scenario(), engine="flow", tick_ms=10) == []
    assert warnings(_retrying(0.012, 0.5), scenario(), engine="request", tick_ms=10) == []


def test_write_buffer_flushes_whole_writes_in_both_engines() -> None:
    """A store of 1,500 writes/s at 10 ms behind a write buffer (flush ceiling 0.85): the
    request engine has round(15) = 15 slots and flushes into floor(0.85 x 15) = 12 of them,
    12 / 0.01 s = 1,200/s; the flow engine's store takes 15 writes a 10 ms tick, the buffer
    floor(0.85 x 15) = 12 of them: 1,200/s too, not 0.85 x 1,500 = 1,275/s (-5.9%). Both
    for the crawler's async writer and a graph's write buffer; the old code named neither
    engine's floor, nor any graph write buffer. A store of 2,000/s: floor(0.85 x 20) = 17,
    exactly 0.85 x 2,000 = 1,700/s."""
    crawler = design(
        page_store={"rps": 1_500, "service": {"mean_ms": 10}}, async_writer={"buffer": 10_000}
    )
    graph = _graph(db_rps=1_500, buffer=True)
    for d, sc, field, store in (
        (crawler, scenario(), "async_writer", "page_store"),
        (graph, scenario(system="graph"), "graph.nodes.buf", "graph.nodes.db"),
    ):
        for engine in ("flow", "request"):
            (line,) = [w for w in warnings(d, sc, engine=engine, tick_ms=10) if "flush" in w]
            assert line.startswith(f"{field}: the {engine} engine"), line
            assert (
                f"drains at most 1,200/s, not flush_ceiling x {store}.rps = 1,275/s (-5.9%" in line
            )
    assert not [
        w
        for engine in ("flow", "request")
        for w in warnings(
            design(
                page_store={"rps": 2_000, "service": {"mean_ms": 10}},
                async_writer={"buffer": 10_000},
            ),
            scenario(),
            engine=engine,
            tick_ms=10,
        )
        if "flush" in w
    ]


def test_a_graph_fleet_is_on_the_tick_grid_in_the_flow_engine_only() -> None:
    """A 50 ms service on 1,000 ms ticks lasts 1,000 ms in the flow engine (+1,900%); the
    request engine draws each service time (no tick), so it does not warn about it (the
    old code did)."""
    d, sc = _graph(), scenario(system="graph")
    assert [w for w in warnings(d, sc, engine="flow", tick_ms=1000) if ".service.mean_ms" in w]
    assert not [
        w for w in warnings(d, sc, engine="request", tick_ms=1000) if ".service.mean_ms" in w
    ]


def test_every_shipped_design_under_its_scenarios_warns_only_where_it_rounds() -> None:
    """At the default tick the shipped designs, each under the shipped scenarios of its
    system, give no rounding warning but one: url-shortener-undersized's store (above).
    (The crawler designs without discovery under deep-crawl get the note that they follow
    no links: not a rounding.)"""
    crawler = sorted((ROOT / "designs").glob("*.yaml")) + sorted(
        (ROOT / "designs" / "levers").glob("*.yaml")
    )
    crawler_sc = sorted((ROOT / "scenarios").glob("*.yaml")) + sorted(
        (ROOT / "scenarios" / "levers").glob("*.yaml")
    )
    systems = sorted((ROOT / "designs" / "systems").glob("*.yaml"))
    systems_sc = sorted((ROOT / "scenarios" / "systems").glob("*.yaml"))
    pairs = [(d, s) for d in crawler for s in crawler_sc]
    pairs += [(d, s) for d in systems for s in systems_sc if d.stem.startswith(s.stem)]
    warned = {
        (d.stem, s.stem, engine, w.split(":")[0])
        for d, s in pairs
        for engine in ("flow", "request")
        for w in warnings(gym.load_design(d), gym.load_scenario(s), engine=engine, tick_ms=10)
        if not w.startswith("web.links_per_page")
    }
    assert warned == {
        ("url-shortener-undersized", "url-shortener", engine, "graph.nodes.kv.rps")
        for engine in ("flow", "request")
    }


def test_a_crawlers_roundings_name_its_own_fields() -> None:
    """A crawler's roundings are those of the graph it compiles to, each node's figures
    named as the crawler's sections name them: never a graph path, in either engine, on
    any shipped crawler design at a fine and a coarse tick (each design below warns at
    one of them, so the check reads sentences). A figure the compile step does not name
    is an error, not a graph path."""
    from gym.inputs.loading import load_design, load_scenario
    from gym.sim.rounded import where
    from gym.system.crawler import topology

    sc = load_scenario(ROOT / "scenarios/levers/deep-crawl.yaml")
    said = []
    for path in sorted((ROOT / "designs").glob("**/*.yaml")):
        d = load_design(path)
        if getattr(d, "graph", None) is not None:
            continue
        for engine, tick in itertools.product(("flow", "request"), (1, 1000)):
            said += warnings(d, sc, engine=engine, tick_ms=tick)
    assert said and not [w for w in said if "graph.nodes" in w]
    fetchers = topology(load_design(REFERENCE), sc).node("fetchers")
    assert where(fetchers, "service.mean_ms") == "fetchers.service.mean_ms"
    with pytest.raises(KeyError):
        where(fetchers, "replicas")
    hash(fetchers)  # its names are words, not part of the node
