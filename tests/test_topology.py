"""Topology as data (issue 12): graphs of typed nodes, what a bad graph is told, the
crawler as a built-in graph, and systems other than the crawler run through graphs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import gym
from gym.cli import app
from gym.core.errors import GymError
from gym.inputs.loading import load_design, parse
from gym.inputs.strict_yaml import dump_yaml
from gym.models import Scenario
from gym.system import compiled, crawler
from gym.system.graph import GraphDesign
from gym.system.topology import Edge, Node, Topology, problems
from tests.conftest import CHAOS, ROOT

SYSTEMS = ROOT / "designs" / "systems"
SYSTEM_SCENARIOS = ROOT / "scenarios" / "systems"


def graph(nodes: dict[str, Any], edges: list[tuple[str, str]], **edge: Any) -> dict[str, Any]:
    return {
        "graph": {
            "nodes": nodes,
            "edges": [{"from": a, "to": b, **edge} for a, b in edges],
        }
    }


CHAIN = {
    "src": {"kind": "source"},
    "q": {"kind": "queue", "drain_rps": 1_000, "buffer": 10_000},
    "f": {"kind": "fleet", "replicas": 2, "rps_per_replica": 1_000},
    "db": {"kind": "store", "rps": 5_000},
}
CHAIN_EDGES = [("src", "q"), ("q", "f"), ("f", "db")]


def refused(data: dict[str, Any]) -> str:
    """The one line a bad graph design gets."""
    with pytest.raises(GymError) as err:
        parse(GraphDesign, data, "bad.yaml", "design")
    assert len(err.value.problems) == 1
    return str(err.value)


# -- what a bad graph is told, naming the node ---------------------------------------------


def test_an_edge_to_a_node_that_does_not_exist() -> None:
    line = refused(graph(CHAIN, [*CHAIN_EDGES[:2], ("f", "dbb")]))
    assert line.startswith("bad.yaml: graph.edges[2].to: 'dbb' is not a node")
    assert "src, q, f, db" in line


def test_split_shares_that_do_not_add_up_to_one() -> None:
    nodes = {**CHAIN, "db2": {"kind": "store", "rps": 5_000}}
    data = graph(nodes, CHAIN_EDGES[:2])
    data["graph"]["edges"] += [
        {"from": "f", "to": "db", "share": 0.5},
        {"from": "f", "to": "db2", "share": 0.4},
    ]
    line = refused(data)
    assert line == (
        "bad.yaml: graph.nodes.f: the shares of its 2 outgoing edges add up to "
        "0.5 + 0.4 = 0.9, not 1"
    )


def test_a_cycle() -> None:
    line = refused(graph(CHAIN, [*CHAIN_EDGES, ("db", "q")]))
    assert line == (
        "bad.yaml: graph.nodes.q: it is in a cycle (q -> f -> db -> q) without a delay; "
        "give one of its edges a delay_s above 0"
    )


def test_an_orphan_node() -> None:
    nodes = {**CHAIN, "lonely": {"kind": "store", "rps": 10}}
    line = refused(graph(nodes, CHAIN_EDGES))
    assert line == (
        "bad.yaml: graph.nodes.lonely: nothing reaches it: no path of edges leads to it "
        "from a source"
    )


def test_a_fleet_without_a_queue_and_a_buffer_without_a_store() -> None:
    line = refused(graph(CHAIN, [("src", "f"), ("f", "db"), ("src", "q")]))
    assert "graph.nodes" in line  # the source's two outputs, or the fleet without a queue
    no_queue = graph({k: v for k, v in CHAIN.items() if k != "q"}, [("src", "f"), ("f", "db")])
    assert refused(no_queue) == (
        "bad.yaml: graph.nodes.f: a fleet takes its work from one queue: put one in front of it"
    )
    nodes = {**CHAIN, "wb": {"kind": "write_buffer", "buffer": 100}}
    wrong = graph(nodes, [("src", "q"), ("q", "f"), ("f", "wb"), ("wb", "db")])
    parse(GraphDesign, wrong, "ok.yaml", "design")  # a buffer in front of a store is fine
    nodes["c"] = {"kind": "cache", "hit_ratio": 0.9, "rps": 1_000}
    wrong = graph(nodes, [("src", "q"), ("q", "f"), ("f", "wb"), ("wb", "c"), ("c", "db")])
    assert refused(wrong) == (
        "bad.yaml: graph.nodes.wb: a write buffer holds writes for one store: connect it to one"
    )


def test_an_unknown_kind_and_a_bad_parameter_name_the_node() -> None:
    nodes = {**CHAIN, "db": {"kind": "database", "rps": 5}}
    assert refused(graph(nodes, CHAIN_EDGES)) == (
        "bad.yaml: graph.nodes.db.kind: 'database' is not a node kind; expected source, "
        "queue, fleet, cache, service, write_buffer, store"
    )
    nodes = {**CHAIN, "db": {"kind": "store", "rps": -5}}
    assert refused(graph(nodes, CHAIN_EDGES)) == (
        "bad.yaml: graph.nodes.db.rps: must be greater than or equal to 0.001 (got -5)"
    )


def test_the_cli_refuses_a_bad_graph_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "graph:\n  nodes:\n    src: {kind: source}\n    db: {kind: store, rps: 5}\n"
        "  edges:\n    - {from: src, to: dbb}\n"
    )
    graph_scenario = str(ROOT / "scenarios" / "systems" / "url-shortener.yaml")
    res = CliRunner().invoke(app, ["validate", str(bad), "-s", graph_scenario])
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "graph.edges[0].to: 'dbb' is not a node" in lines[0]
    # under the default (crawler) scenario, the scenario's system is said in the same round
    res = CliRunner().invoke(app, ["validate", str(bad)])
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 2 and "system: bad is a graph design" in lines[1], lines


def test_topology_order_and_structure_checks_without_pydantic() -> None:
    """The structure module alone: Kahn's order keeps a chain's order; a delayed edge
    may close a cycle."""
    nodes = tuple(Node(n, k) for n, k in [("s", "source"), ("a", "queue"), ("b", "fleet")])
    chain = Topology(nodes, (Edge("s", "a"), Edge("a", "b")))
    assert chain.order() == ("s", "a", "b")
    looped = Topology(nodes, (Edge("s", "a"), Edge("a", "b"), Edge("b", "a", delay_s=0.01)))
    assert looped.order() == ("s", "a", "b")
    assert problems(looped, sources=["source"]) == []
    tight = Topology(nodes, (Edge("s", "a"), Edge("a", "b"), Edge("b", "a")))
    assert "cycle (a -> b -> a) without a delay; give one of its edges a delay_s" in str(
        problems(tight, sources=["source"])
    )
    with pytest.raises(ValueError, match="cycle"):
        tight.order()


# -- the crawler is a graph ---------------------------------------------------------------


def test_the_crawler_as_a_written_out_graph_gives_the_same_counts() -> None:
    """The reference design written as a graph of the same kinds, with the figures the
    crawler adds (the politeness-limited drain, the cache's catalog capacity, the
    scenario's resolver), gives the crawler's per-tick counts exactly: the same engine
    runs both, and each node draws from the stream named after it.

    With fetch times varied enough that neither fleet is paced nor slotted (cv 0.5): in
    both engines the crawler's fetchers with fixed times start at a paced rate, and a
    graph's fleet starts what its slots have free (c parallel servers), so the two differ
    there by design (the test below)."""
    data = load_design(ROOT / "designs" / "reference.yaml").model_dump(mode="json")
    data["fetchers"]["service"] = {"dist": "lognormal", "mean_ms": 250.0, "cv": 0.5}
    d = gym.Design.model_validate(data)
    sc = gym.load_scenario(CHAOS)
    built = crawler.topology(d, sc)
    nodes: dict[str, Any] = {}
    for node in built.nodes:
        params = {} if node.params is None else node.params.model_dump(mode="json")
        if node.kind == "queue":
            params = {k: v for k, v in params.items() if k in ("drain_rps", "buffer")}
        if node.kind == "service":
            params.pop("finish_share")
        nodes[node.name] = {"kind": node.kind, **params}
    as_graph = GraphDesign.model_validate(graph(nodes, [(e.source, e.target) for e in built.edges]))
    faults = [f.model_dump(mode="json", exclude_none=True) for f in sc.faults]
    graph_sc = Scenario.model_validate(
        {
            "system": "graph",
            "duration_s": sc.duration_s,
            "base_rps": sc.base_rps,
            "load": [s.model_dump(mode="json", exclude_none=True) for s in sc.load],
            "faults": faults,
        }
    )
    a = gym.simulate(d, sc, seed=4).metrics.record
    b = gym.simulate(as_graph, graph_sc, seed=4).metrics.record
    assert (a.offered == b.offered).all()
    assert list(a.components) == list(b.components)
    for name, tally in a.components.items():
        other = b.components[name]
        for field in ("capacity", "arrived", "processed", "out", "served", "backlog"):
            assert (getattr(tally, field) == getattr(other, field)).all(), (name, field)
        assert [v.sum() for v in tally.failed.values()] == [
            v.sum() for v in other.failed.values()
        ], name
    assert sum(a.failed_by_cause().values()) == sum(b.failed_by_cause().values()) > 0


def test_a_graph_fleet_starts_what_its_slots_have_free() -> None:
    """A graph's fleet of fixed times is c parallel servers in the flow engine, as in the
    request engine: behind a backlog, what it starts in a tick is what its slots free, so
    its starts repeat themselves one service time later (the pattern the backlog froze),
    where a paced fleet would start its rate's quota every tick. 2 replicas of 10 slots
    of 30 ms (3 ticks): 20 slots, 666.7/s. Fed 1,000/s evenly spaced, 10 a tick: the
    first 2 ticks start 10 each (the slots fill), the third none; from the fourth the
    ends of tick k - 3 free the slots tick k starts (10, 10, 0, 10, 10, 0, ...): 333
    cycles of 20 and the last tick's 10, 6,670 in 10 s, the rest waiting in the queue
    (buffer 100,000); the request engine starts the same, tick by tick. (A rate's quota
    would start 6 or 7 every tick.)"""
    d = GraphDesign.model_validate(
        graph(
            {
                "src": {"kind": "source"},
                "q": {"kind": "queue", "drain_rps": 5_000, "buffer": 100_000},
                "f": {
                    "kind": "fleet",
                    "replicas": 2,
                    "rps_per_replica": 1_000 / 3,
                    "service": {"mean_ms": 30},
                },
            },
            [("src", "q"), ("q", "f")],
        )
    )
    sc = Scenario.model_validate(
        {"system": "graph", "duration_s": 10, "base_rps": 1_000, "arrivals": "deterministic"}
    )
    starts = gym.simulate(d, sc, seed=0).metrics.record.components["f"].processed
    assert starts[:9].tolist() == [10, 10, 0] * 3
    assert (starts[3:] == starts[:-3]).all()
    assert starts.sum() == 333 * 20 + 10
    request = gym.simulate(d, sc, seed=0, engine="request").metrics.record
    assert request.components["f"].processed.tolist() == starts.tolist()


@pytest.mark.parametrize("on_crash", ["fail", "requeue"])
def test_a_slotted_fleet_through_a_crash_starts_as_the_request_engine(on_crash: str) -> None:
    """The same fleet (20 slots of 30 ms) fed 1,000/s evenly spaced, one replica down from
    2 s to 3 s: its 10 fetches in flight fail (or go back to the queue), and back up its
    slots open one by one at rps_per_replica. The flow engine starts what the request
    engine does, tick by tick, and fails as many. With 25 ms services (2.5 ticks: a
    start frees its slot 2 or 3 ticks later, a carried share of each tick's) the totals
    agree within 0.1% (the ticks' counts differ: the request engine's instants are exact)."""

    def fleet(service_ms: float) -> GraphDesign:
        f = {
            "kind": "fleet",
            "replicas": 2,
            "rps_per_replica": 10_000 / service_ms,
            "service": {"mean_ms": service_ms},
            "on_crash": on_crash,
        }
        q = {"kind": "queue", "drain_rps": 5_000, "buffer": 100_000}
        return GraphDesign.model_validate(
            graph({"src": {"kind": "source"}, "q": q, "f": f}, [("src", "q"), ("q", "f")])
        )

    crash = {"kind": "crash", "at_s": 2, "for_s": 1, "target": "f", "replicas": 1}
    sc = Scenario.model_validate(
        {
            "system": "graph",
            "duration_s": 6,
            "base_rps": 1_000,
            "arrivals": "deterministic",
            "faults": [crash],
        }
    )
    flow = gym.simulate(fleet(30), sc, seed=0).metrics.record.components["f"]
    request = gym.simulate(fleet(30), sc, seed=0, engine="request").metrics.record.components
    assert flow.processed.tolist() == request["f"].processed.tolist()
    assert flow.failed["f_crash_loss"].sum() == request["f"].failed["f_crash_loss"].sum()
    assert flow.failed["f_crash_loss"].sum() == (10 if on_crash == "fail" else 0)
    flow = gym.simulate(fleet(25), sc, seed=0).metrics.record.components["f"]
    request = gym.simulate(fleet(25), sc, seed=0, engine="request").metrics.record.components
    assert abs(flow.processed.sum() / request["f"].processed.sum() - 1.0) < 0.001


def _queue_fleet(drain: float, replicas: int, rps: float, service_ms: float) -> GraphDesign:
    q = {"kind": "queue", "drain_rps": drain, "buffer": 10**7}
    f = {"kind": "fleet", "replicas": replicas, "rps_per_replica": rps}
    f["service"] = {"mean_ms": service_ms}
    return GraphDesign.model_validate(
        graph({"src": {"kind": "source"}, "q": q, "f": f}, [("src", "q"), ("q", "f")])
    )


def test_the_queue_in_front_of_a_slotted_fleet_hands_out_through_the_request_engines_bucket() -> (
    None
):
    """30 slots of 30 ms fed 1,500/s evenly spaced (15 a tick) through a queue draining
    1,200/s: its bucket is 12 deep and starts full, so the first tick hands out 12 + 12
    allowed, the 15 that came (the slots hold 30); the second 9 + 12 left, 15 again; the
    third none (the slots are full): 15, 15, 0, as the request engine, every tick of the
    run (a bucket that started empty and kept only what the slots held back started 12,
    12, 6 for ever)."""
    sc = Scenario.model_validate(
        {"system": "graph", "duration_s": 20, "base_rps": 1_500, "arrivals": "deterministic"}
    )
    d = _queue_fleet(1_200, 3, 1_000 / 3, 30)
    flow = gym.simulate(d, sc, seed=0).metrics.record.components["f"].processed
    request = gym.simulate(d, sc, seed=0, engine="request").metrics.record.components
    assert flow[:6].tolist() == [15, 15, 0, 15, 15, 0]
    assert flow.tolist() == request["f"].processed.tolist()


def test_a_replica_crashing_again_while_it_opens_its_slots_takes_them_with_it() -> None:
    """One replica of 1,000 slots of 10 s (100/s), fed 300/s: down at 20-22 s, back opening
    its slots over 10 s, down again at 23-24 s, back and opening them again. The flow
    engine starts what the request engine does over the run, and its open slots never go
    below 0 (the first return's unopened slots were taken off a second time)."""
    crashes = [
        {"kind": "crash", "at_s": 20, "for_s": 2, "target": "f", "replicas": 1},
        {"kind": "crash", "at_s": 23, "for_s": 1, "target": "f", "replicas": 1},
    ]
    sc = Scenario.model_validate(
        {
            "system": "graph",
            "duration_s": 60,
            "base_rps": 300,
            "arrivals": "deterministic",
            "faults": crashes,
        }
    )
    d = _queue_fleet(5_000, 1, 100, 10_000)
    flow = gym.simulate(d, sc, seed=0).metrics.record.components["f"].processed
    request = gym.simulate(d, sc, seed=0, engine="request").metrics.record.components
    assert flow[2_400:2_600].sum() == request["f"].processed[2_400:2_600].sum() > 0
    assert flow.sum() == request["f"].processed.sum()


# -- queueing through graphs --------------------------------------------------------------


def _tandem() -> tuple[GraphDesign, Scenario]:
    """Two queues and fleets in a row, then a store; 1,000 URLs/s evenly spaced, 10 s."""
    nodes = {
        "src": {"kind": "source"},
        "q1": {"kind": "queue", "drain_rps": 800, "buffer": 10**6},
        "f1": {"kind": "fleet", "replicas": 1, "rps_per_replica": 4_000},
        "q2": {"kind": "queue", "drain_rps": 600, "buffer": 10**6},
        "f2": {"kind": "fleet", "replicas": 1, "rps_per_replica": 4_000},
        "out": {"kind": "store", "rps": 100_000},
    }
    edges = [("src", "q1"), ("q1", "f1"), ("f1", "q2"), ("q2", "f2"), ("f2", "out")]
    sc = Scenario.model_validate(
        {"system": "graph", "duration_s": 10, "base_rps": 1_000, "arrivals": "deterministic"}
    )
    return GraphDesign.model_validate(graph(nodes, edges)), sc


def test_a_tandem_of_two_queues_by_hand() -> None:
    """1,000 URLs/s, evenly spaced, for 10 s into a queue draining 800/s, a fleet (250 ms
    fetches, 1,000 slots: never full), a second queue draining 600/s, a second fleet and a
    store. Each queue hands out through a bucket one tick deep that starts full (8 URLs
    at 800/s, 6 at 600/s, 10 ms ticks), as the request engine's. The first queue hands
    out 800 x 10 + 8 = 8,008 and keeps 1,992; the first fleet finishes 7,808 (200 = 800/s
    x 0.25 s in flight). The second queue gets work from t = 0.25 s: it hands out 600 x
    9.75 + 6 = 5,856 and keeps 7,808 - 5,856 = 1,952; the second fleet has 150 in
    flight, and the store serves 5,706. Nothing fails: throughput 570.6/s, availability
    1."""
    d, sc = _tandem()
    m = gym.simulate(d, sc).metrics
    c = m.record.components
    assert (c["q1"].out.sum(), c["q1"].backlog[-1]) == (8_008, 1_992)
    assert (c["f1"].out.sum(), m.record.in_flight_end["f1"]) == (7_808, 200)
    assert (c["q2"].out.sum(), c["q2"].backlog[-1]) == (5_856, 1_952)
    assert (m.record.in_flight_end["f2"], c["out"].served.sum()) == (150, 5_706)
    assert m.failed == 0 and m.throughput_rps == 570.6 and m.availability == 1.0
    # Saturation propagates along the edges: the first queue sees 1,000/800, the second
    # fleet's queue min(1,000, 800)/600 once work reaches it.
    assert m.components["q1"].saturation[5] == 1_000 / 800
    assert m.components["q2"].saturation[5] == 800 / 600


def test_the_tandem_through_the_request_engine() -> None:
    """The same tandem, one SimPy process per URL: each queue's token bucket starts full
    with one tick's hand-outs (8 at 800/s, 6 at 600/s, 10 ms ticks), so each hands out
    its rate's 8,000 and 5,850 and at most that many more (the flow engine: 8,008 and
    5,856); the fleets hold the same 200 and 150 in flight (rate x 250 ms), and nothing
    fails."""
    d, sc = _tandem()
    r = gym.simulate(d, sc, engine="request")
    c, flight = r.metrics.record.components, r.metrics.record.in_flight_end
    assert 8_000 <= c["q1"].out.sum() <= 8_008
    assert c["q1"].out.sum() + c["q1"].backlog[-1] == 10_000
    assert (c["f1"].out.sum(), flight["f1"]) == (c["q1"].out.sum() - 200, 200)
    assert 5_850 <= c["q2"].out.sum() <= 5_856
    assert flight["f2"] == 150
    assert c["out"].served.sum() + flight["out"] == c["q2"].out.sum() - 150
    assert r.metrics.failed == 0
    # Per-URL latencies: each fleet's job takes its 250 ms service time.
    assert r.latency["f1"].p50 == pytest.approx(250.0)
    assert r.latency["f2"].p50 == pytest.approx(250.0)


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_a_cache_in_front_of_a_store_loses_as_erlang_b(engine: str) -> None:
    """A graph's loss stations are the crawler's: 4,000 Poisson reads/s, hit ratio 0.5,
    a store of 2,000/s x 20 ms = 40 slots offered 2,000 x 0.02 = 40 Erlangs: B(40, 40) =
    0.1162 of the 2,000 misses/s fail, about 2,323 in 10 s. In both engines."""
    nodes = {
        "src": {"kind": "source"},
        "cache": {"kind": "cache", "hit_ratio": 0.5, "rps": 1_000_000},
        "kv": {"kind": "store", "rps": 2_000},
    }
    d = GraphDesign.model_validate(graph(nodes, [("src", "cache"), ("cache", "kv")]))
    sc = Scenario.model_validate({"system": "graph", "duration_s": 10, "base_rps": 4_000})
    b = 1.0
    for k in range(1, 41):
        b = 40 * b / (k + 40 * b)
    assert b == pytest.approx(0.1162, abs=1e-4)
    for seed in range(3):
        m = gym.simulate(d, sc, seed=seed, engine=engine).metrics
        lost = m.failed_by_cause["kv_overload"]
        arrived = int(m.record.components["kv"].arrived.sum())
        assert lost == pytest.approx(b * arrived, rel=0.06), seed


# -- the shipped systems -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("design", "scenario", "verdict", "lesson"),
    [
        ("url-shortener", "url-shortener", "pass", None),
        ("url-shortener-undersized", "url-shortener", "fail", "cache_overload"),
        ("ingestion", "ingestion", "pass", None),
        ("ingestion-no-headroom", "ingestion", "fail", "db_unavailable"),
    ],
)
def test_shipped_systems(design: str, scenario: str, verdict: str, lesson: str | None) -> None:
    """Each system ships a passing and a failing design; the failing one fails for the
    reason its file says (the lost cache node; the database stall with no write buffer)."""
    r = gym.simulate(SYSTEMS / f"{design}.yaml", SYSTEM_SCENARIOS / f"{scenario}.yaml")
    assert r.verdict == verdict
    if lesson is not None:
        top = max(r.metrics.failed_by_cause.items(), key=lambda kv: kv[1])
        assert top[0] == lesson
        assert any(e.cause == lesson for e in r.explanations)


def test_the_pass_and_fail_designs_differ_where_the_lesson_is() -> None:
    """With a write buffer the database stall loses nothing: its writes are held and
    flushed after."""
    sc = SYSTEM_SCENARIOS / "ingestion.yaml"
    ok = gym.simulate(SYSTEMS / "ingestion.yaml", sc).metrics
    buffer = ok.record.components["buffer"]
    assert ok.failed_by_cause["db_unavailable"] == 0
    stall = slice(2_500, 2_900)  # t = 25-29 s
    assert buffer.backlog[stall].max() > 10_000
    assert int(np.asarray(buffer.extra["flushed"]).sum()) > 10_000


def test_graph_designs_and_scenarios_must_match(tmp_path: Path) -> None:
    """A graph design needs a graph scenario whose faults name its nodes."""
    d = SYSTEMS / "ingestion.yaml"
    with pytest.raises(GymError, match="its scenario needs system: graph"):
        gym.simulate(d, CHAOS)
    with pytest.raises(GymError, match="is for graph designs"):
        gym.simulate(ROOT / "designs" / "reference.yaml", SYSTEM_SCENARIOS / "ingestion.yaml")
    bad = tmp_path / "s.yaml"
    bad.write_text(
        "system: graph\nduration_s: 5\nbase_rps: 10\nfaults: [{kind: crash, at_s: 1, target: db}]\n"
    )
    with pytest.raises(GymError) as err:
        gym.simulate(d, bad)
    assert str(err.value) == (
        f"{bad}: faults[0].target: 'db' is not a node of ingestion that can crash; choose consumers"
    )


def test_a_graph_run_writes_files_that_load_back_and_runs_many_seeds(tmp_path: Path) -> None:
    """--out writes the resolved design with its edges as `from`/`to` (it validates back
    and gives the same result); --runs sends the graph to other processes and back."""
    d, sc = SYSTEMS / "ingestion.yaml", SYSTEM_SCENARIOS / "ingestion.yaml"
    out = tmp_path / "run"
    runner = CliRunner()
    res = runner.invoke(app, ["run", str(d), "--scenario", str(sc), "--out", str(out)])
    assert res.exit_code == 0, res.output
    resolved = out / "design.resolved.yaml"
    assert "from: events" in resolved.read_text()
    again = gym.simulate(resolved, out / "scenario.resolved.yaml")
    first = gym.simulate(d, sc)
    assert again.to_dict()["metrics"] == first.to_dict()["metrics"]
    for name in ("backlog.png", "outcomes.png", "utilization.png", "windows.csv"):
        assert (out / name).stat().st_size > 0
    res = runner.invoke(
        app, ["run", str(d), "--scenario", str(sc), "--runs", "3", "--confidence", "0.3"]
    )
    assert res.exit_code == 0, res.output  # 3 passing runs show 0.3: 3 / (3 + 1.96^2) = 0.44
    assert "3/3 runs" in res.output


def test_a_node_without_an_outgoing_edge_finishes_its_work() -> None:
    """From the hostile pass: a cache at the end of a chain lost its misses (conservation
    broke, exit 3), and a store in the middle served everything, leaving the store after
    it a phantom saturation. 1,000 URLs/s for 10 s: the last cache finishes all 10,000;
    a 2,000/s store passes its 1,000/s on to a 500/s store, which loses half (saturation
    1,000 / 500 = 2 is real now)."""
    sc = Scenario.model_validate(
        {"system": "graph", "duration_s": 10, "base_rps": 1_000, "arrivals": "deterministic"}
    )
    cache_last = graph(
        {"a": {"kind": "source"}, "c": {"kind": "cache", "hit_ratio": 0.5, "rps": 5_000}},
        [("a", "c")],
    )
    m = gym.simulate(GraphDesign.model_validate(cache_last), sc).metrics
    assert (m.served, m.failed, m.in_flight_end) == (10_000, 0, 0)
    chain = graph(
        {
            "a": {"kind": "source"},
            "s": {"kind": "store", "rps": 2_000},
            "t": {"kind": "store", "rps": 500, "service": {"mean_ms": 2}},
        },
        [("a", "s"), ("s", "t")],
    )
    m = gym.simulate(GraphDesign.model_validate(chain), sc).metrics
    assert m.record.components["s"].served.sum() == 0
    assert m.record.components["t"].arrived.sum() == 10_000
    assert m.components["t"].saturation[3] == 2.0
    assert m.failed_by_cause["t_overload"] == pytest.approx(5_000, rel=0.02)


def test_more_bad_graphs_from_the_hostile_pass(tmp_path: Path) -> None:
    twice = graph(CHAIN, [*CHAIN_EDGES, ("f", "db")])
    assert refused(twice) == "bad.yaml: graph.edges[3]: f -> db is listed twice (also edges[2])"
    nowhere = graph({**CHAIN, "src2": {"kind": "source"}}, CHAIN_EDGES)
    assert refused(nowhere) == (
        "bad.yaml: graph.nodes.src2: its load goes nowhere: give it an edge to the node it feeds"
    )
    named = graph({**CHAIN, "bad name": {"kind": "store", "rps": 5}}, CHAIN_EDGES)
    assert refused(named).startswith("bad.yaml: graph.nodes.bad name: 'bad name' is not a node")
    typo = tmp_path / "typo.yaml"
    typo.write_text("grpah: {nodes: {a: {kind: source}}, edges: []}\n")
    with pytest.raises(GymError, match="did you mean 'graph'"):
        load_design(typo)


def test_graph_runs_refuse_or_warn_what_they_cannot_honour(tmp_path: Path) -> None:
    """A crash without a target names the fleets; --warmup leaves the early URLs out of
    the flow engine's latency of a graph as of the request engine's; a fleet's service
    time rounded to whole ticks is warned about, as the crawler's is."""
    d = SYSTEMS / "ingestion.yaml"
    sc = tmp_path / "s.yaml"
    sc.write_text("system: graph\nduration_s: 5\nbase_rps: 10\nfaults: [{kind: crash, at_s: 1}]\n")
    with pytest.raises(GymError, match=r"faults\[0\].target: is required .* \(consumers\)"):
        gym.simulate(d, sc)
    full = gym.simulate(d, SYSTEM_SCENARIOS / "ingestion.yaml").latency
    late = gym.simulate(d, SYSTEM_SCENARIOS / "ingestion.yaml", warmup_s=30).latency
    for name in ("log", "consumers", "db", "end_to_end"):  # 10 of the 40 s, at base load
        assert 0.15 < late[name].count / full[name].count < 0.3, name
    r = gym.simulate(d, SYSTEM_SCENARIOS / "ingestion.yaml", tick_ms=1000)
    assert any(w.startswith("graph.nodes.consumers.service.mean_ms") for w in r.warnings)


def test_plots_of_two_systems_each_use_their_own_entry(tmp_path: Path) -> None:
    """Two systems whose load enters different nodes (a cache, a queue) on one figure:
    each design's backlog panel is its own entry's (the first design's crashed it)."""
    sc = tmp_path / "plain.yaml"
    sc.write_text("system: graph\nduration_s: 5\nbase_rps: 1000\n")
    out = tmp_path / "both.png"
    res = CliRunner().invoke(
        app,
        [
            "plot",
            str(SYSTEMS / "url-shortener.yaml"),
            str(SYSTEMS / "ingestion.yaml"),
            "--scenario",
            str(sc),
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert out.stat().st_size > 0


# -- splits and merges ---------------------------------------------------------------------


def _split_design(**extra: Any) -> GraphDesign:
    nodes = {
        "src": {"kind": "source"},
        "a": {"kind": "store", "rps": 2_000},
        "b": {"kind": "store", "rps": 2_000},
        **extra,
    }
    data = graph(nodes, [])
    data["graph"]["edges"] = [
        {"from": "src", "to": "a", "share": 0.5},
        {"from": "src", "to": "b", "share": 0.5},
    ]
    return GraphDesign.model_validate(data)


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_a_split_of_poisson_arrivals_is_two_poisson_streams(engine: str) -> None:
    """Splitting a Poisson stream at random gives independent Poisson streams (thinning):
    4,000 reads/s split evenly into two stores of 2,000/s x 20 ms = 40 slots, each offered
    2,000 x 0.02 = 40 Erlangs, each loses B(40, 40) = 0.1162 of what reaches it; the
    shares are 0.5 each to within a binomial spread (sd sqrt(40,000 x 0.25) = 100)."""
    sc = Scenario.model_validate({"system": "graph", "duration_s": 10, "base_rps": 4_000})
    for seed in range(3):
        m = gym.simulate(_split_design(), sc, seed=seed, engine=engine).metrics
        c = m.record.components
        total = int(m.record.offered.sum())
        assert c["a"].arrived.sum() + c["b"].arrived.sum() == total
        assert abs(int(c["a"].arrived.sum()) - total / 2) < 4 * 100
        for name in ("a", "b"):
            lost = m.failed_by_cause[f"{name}_overload"]
            assert lost == pytest.approx(0.1162 * c[name].arrived.sum(), rel=0.08), (seed, name)
        # Demand follows the shares: each store's demand is half the offered load.
        assert m.components["a"].demand[4] == m.offered_w[4] * 0.5


def test_a_merge_adds_the_flows_and_their_demand() -> None:
    """1,000 URLs/s split evenly into two caches (hit ratios 0.5 and 0.8) whose misses
    merge into one store: its demand is 500 x 0.5 + 500 x 0.2 = 350 URLs a second, its
    saturation 350 / 1,000; every URL is served at a cache or at the store."""
    nodes = {
        "src": {"kind": "source"},
        "ca": {"kind": "cache", "hit_ratio": 0.5, "rps": 100_000},
        "cb": {"kind": "cache", "hit_ratio": 0.8, "rps": 100_000},
        "db": {"kind": "store", "rps": 1_000},
    }
    data = graph(nodes, [("ca", "db"), ("cb", "db")])
    data["graph"]["edges"] += [
        {"from": "src", "to": "ca", "share": 0.5},
        {"from": "src", "to": "cb", "share": 0.5},
    ]
    sc = Scenario.model_validate(
        {"system": "graph", "duration_s": 10, "base_rps": 1_000, "arrivals": "deterministic"}
    )
    m = gym.simulate(GraphDesign.model_validate(data), sc).metrics
    assert (m.served, m.failed) == (10_000, 0)
    db = m.components["db"]
    assert db.demand[3] == pytest.approx(350.0)
    assert db.saturation[3] == pytest.approx(0.35)
    c = m.record.components
    assert c["db"].arrived.sum() == c["ca"].out.sum() + c["cb"].out.sum()
    assert c["db"].arrived.sum() == pytest.approx(3_500, rel=0.05)


def test_splits_and_merges_the_kinds_cannot_take_are_refused() -> None:
    """A queue hands out to one fleet; a write buffer meters everything its store takes."""
    nodes = {**CHAIN, "db2": {"kind": "store", "rps": 5}}
    data = graph(nodes, [("src", "q"), ("f", "db")])
    data["graph"]["edges"] += [
        {"from": "q", "to": "f", "share": 0.5},
        {"from": "q", "to": "db2", "share": 0.5},
    ]
    assert refused(data) == (
        "bad.yaml: graph.nodes.f: the queue q in front of it feeds other nodes too; a queue "
        "hands out to one fleet"
    )
    nodes = {**CHAIN, "wb": {"kind": "write_buffer", "buffer": 10}}
    data = graph(nodes, [("src", "q"), ("q", "f"), ("wb", "db")])
    data["graph"]["edges"] += [
        {"from": "f", "to": "wb", "share": 0.5},
        {"from": "f", "to": "db", "share": 0.5},
    ]
    assert refused(data) == (
        "bad.yaml: graph.nodes.wb: the store db behind it has other inputs too; a write "
        "buffer meters everything its store takes"
    )


# -- from the code review -------------------------------------------------------------------


def _poisson(duration: int = 10, rps: int = 1_000) -> Scenario:
    return Scenario.model_validate({"system": "graph", "duration_s": duration, "base_rps": rps})


def test_a_node_between_passes_the_stream_a_loss_station_needs() -> None:
    """A write buffer and the store behind it (with room to spare), or a queue with room,
    put between a source and a loss station change nothing it sees: the expected load,
    its irregularity and its pacing pass through. A store of 1,000/s x 20 ms = 20 slots
    offered 20 Erlangs of Poisson loses B(20, 20) = 0.159 either way (before the fix, it
    lost 1,042 behind the buffer against 1,584 without it, and a queue between a paced
    fleet and a store took 4,339 losses down to 4)."""
    b = 1.0
    for k in range(1, 21):
        b = 20 * b / (k + 20 * b)
    arch = {"kind": "store", "rps": 1_000}
    direct = graph({"src": {"kind": "source"}, "arch": arch}, [("src", "arch")])
    behind = graph(
        {
            "src": {"kind": "source"},
            "wb": {"kind": "write_buffer", "buffer": 1_000},
            "db": {"kind": "store", "rps": 100_000},
            "arch": arch,
        },
        [("src", "wb"), ("wb", "db"), ("db", "arch")],
    )
    for data in (direct, behind):
        m = gym.simulate(GraphDesign.model_validate(data), _poisson(), seed=1).metrics
        arrived = int(m.record.components["arch"].arrived.sum())
        assert m.failed_by_cause["arch_overload"] == pytest.approx(b * arrived, rel=0.06)
    fleet = {"kind": "fleet", "replicas": 10, "rps_per_replica": 2_000, "service": {"mean_ms": 50}}
    nodes = {
        "src": {"kind": "source"},
        "q": {"kind": "queue", "drain_rps": 100_000, "buffer": 10**6},
        "f": fleet,
        "db": {"kind": "store", "rps": 20_000, "service": {"mean_ms": 10}},
    }
    plain = graph(nodes, [("src", "q"), ("q", "f"), ("f", "db")])
    nodes2 = {**nodes, "q2": {"kind": "queue", "drain_rps": 10**6, "buffer": 10**6}}
    nodes2["f2"] = {**fleet, "replicas": 1_000}
    padded = graph(nodes2, [("src", "q"), ("q", "f"), ("f", "q2"), ("q2", "f2"), ("f2", "db")])
    sc = _poisson(10, 19_000)
    lost = [
        gym.simulate(GraphDesign.model_validate(d), sc, seed=2).metrics.failed_by_cause[
            "db_overload"
        ]
        for d in (plain, padded)
    ]
    assert lost[0] > 1_000
    assert lost[1] == pytest.approx(lost[0], rel=0.15)


def test_one_source_per_graph_and_a_crash_must_name_its_fleet(tmp_path: Path) -> None:
    two = graph(
        {
            "s1": {"kind": "source"},
            "s2": {"kind": "source"},
            "a": {"kind": "store", "rps": 2_000},
            "b": {"kind": "store", "rps": 2_000},
        },
        [("s1", "a"), ("s2", "b")],
    )
    assert refused(two) == (
        "bad.yaml: graph.nodes.s2: a graph has one source so far (s1): it offers the "
        "scenario's load"
    )
    fetchers = graph(
        {**{k: v for k, v in CHAIN.items() if k != "f"}, "fetchers": CHAIN["f"]},
        [("src", "q"), ("q", "fetchers"), ("fetchers", "db")],
    )
    sc = tmp_path / "s.yaml"
    sc.write_text("system: graph\nduration_s: 5\nbase_rps: 10\nfaults: [{kind: crash, at_s: 1}]\n")
    with pytest.raises(GymError, match=r"faults\[0\].target: is required"):
        gym.simulate(GraphDesign.model_validate(fetchers), sc)


# -- the request engine runs graphs ---------------------------------------------------------


@pytest.mark.parametrize(
    ("design", "scenario"),
    [
        # One design of each system (the request engine takes seconds each): the failing
        # shortener (cache and store losses) and the passing ingestion (a fleet's crash,
        # a write buffer holding a stall).
        ("url-shortener-undersized", "url-shortener"),
        ("ingestion", "ingestion"),
    ],
)
def test_the_engines_agree_on_the_shipped_systems(design: str, scenario: str) -> None:
    """One SimPy process per URL through the graph gives the flow engine's verdict, and
    each cause's losses to within 2% of what was offered (the engines share the
    offered counts, not the random draws). Both give latency for the same nodes."""
    paths = (SYSTEMS / f"{design}.yaml", SYSTEM_SCENARIOS / f"{scenario}.yaml")
    flow = gym.simulate(*paths, engine="flow")
    req = gym.simulate(*paths, engine="request")
    assert req.verdict == flow.verdict
    a, b = flow.metrics, req.metrics
    assert (a.record.offered == b.record.offered).all()
    offered = int(a.record.offered.sum())
    assert a.failed_by_cause.keys() == b.failed_by_cause.keys()
    for cause, lost in a.failed_by_cause.items():
        assert abs(b.failed_by_cause[cause] - lost) <= 0.02 * offered, cause
    # Latency per node and end to end from both (tests/test_graph_latency.py compares them).
    assert "end_to_end" in req.latency and req.latency.keys() == flow.latency.keys()


def test_the_crawler_as_a_graph_in_the_request_engine() -> None:
    """The reference crawler written out as a graph and run one URL at a time by the graph
    engine agrees with the crawler's own request engine (the same stations, different
    random draws): served and each failure cause within 1% of what was offered."""
    d = load_design(ROOT / "designs" / "starter.yaml")
    sc = gym.load_scenario(CHAOS).model_copy(update={"duration_s": 25.0})
    built = crawler.topology(d, sc)
    nodes: dict[str, Any] = {}
    for node in built.nodes:
        params = {} if node.params is None else node.params.model_dump(mode="json")
        nodes[node.name] = {"kind": node.kind, **params}
    as_graph = GraphDesign.model_validate(graph(nodes, [(e.source, e.target) for e in built.edges]))
    faults = [f.model_dump(mode="json", exclude_none=True) for f in sc.faults if f.at_s < 25]
    graph_sc = Scenario.model_validate(
        {
            "system": "graph",
            "duration_s": sc.duration_s,
            "base_rps": sc.base_rps,
            "load": [s.model_dump(mode="json", exclude_none=True) for s in sc.load],
            "faults": faults,
        }
    )
    a = gym.simulate(d, sc, engine="request").metrics
    b = gym.simulate(as_graph, graph_sc, engine="request").metrics
    offered = int(a.record.offered.sum())
    assert (a.record.offered == b.record.offered).all()
    assert abs(a.served - b.served) <= 0.01 * offered
    renamed = {"crash_loss": "fetchers_crash_loss", "frontier_overflow": "frontier_overflow"}
    for cause, lost in a.failed_by_cause.items():
        if cause.startswith("writer_"):
            continue  # the starter has no writer
        other = b.failed_by_cause[renamed.get(cause, cause.replace("store_", "page_store_"))]
        assert abs(lost - other) <= 0.01 * offered, (cause, lost, other)
    assert a.failed > 0.05 * offered  # the starter fails: the comparison has losses in it


def test_a_crash_requeues_or_loses_the_jobs_in_flight_in_the_request_engine() -> None:
    """150 jobs/s of 1 s each keep 150 in flight (Little), 75 on each of two replicas
    (jobs start on the replicas in turn); a crash of one at t = 5 s loses its 75 jobs in
    flight (on_crash: fail) or puts them back at the head of the queue (requeue), where
    nothing is lost and every URL is still counted once."""
    nodes = {
        "src": {"kind": "source"},
        "q": {"kind": "queue", "drain_rps": 10_000, "buffer": 10**6},
        "f": {
            "kind": "fleet",
            "replicas": 2,
            "rps_per_replica": 100,
            "service": {"mean_ms": 1_000},
        },
        "db": {"kind": "store", "rps": 100_000},
    }
    sc = Scenario.model_validate(
        {
            "system": "graph",
            "duration_s": 10,
            "base_rps": 150,
            "arrivals": "deterministic",
            "faults": [{"kind": "crash", "at_s": 5, "target": "f", "replicas": 1}],
        }
    )
    for on_crash, lost in (("fail", 75), ("requeue", 0)):
        nodes["f"]["on_crash"] = on_crash
        d = GraphDesign.model_validate(graph(nodes, [("src", "q"), ("q", "f"), ("f", "db")]))
        m = gym.simulate(d, sc, engine="request").metrics
        assert m.failed_by_cause["f_crash_loss"] == lost
        requeued = m.record.components["f"].extra["requeued"].sum()
        assert requeued == (75 if on_crash == "requeue" else 0)
        assert m.record.components["q"].extra["requeued"].sum() == requeued


def test_a_write_buffer_holds_a_stall_in_the_request_engine() -> None:
    """A store stalled for 2 s behind a write buffer: the 2 x 500 = 1,000 writes arriving
    meanwhile are held (none fails) and flushed into the store's spare room after it.
    A write arriving just after the stall, while the flushes fill 90% of the store's
    40 slots, is held too, so a few more than 1,000 pass through the buffer."""
    nodes = {
        "src": {"kind": "source"},
        "buf": {"kind": "write_buffer", "buffer": 5_000, "flush_ceiling": 0.9},
        "db": {"kind": "store", "rps": 2_000},
    }
    sc = Scenario.model_validate(
        {
            "system": "graph",
            "duration_s": 10,
            "base_rps": 500,
            "arrivals": "deterministic",
            "faults": [{"kind": "stall", "at_s": 3, "for_s": 2, "target": "db"}],
        }
    )
    d = GraphDesign.model_validate(graph(nodes, [("src", "buf"), ("buf", "db")]))
    m = gym.simulate(d, sc, engine="request").metrics
    buf = m.record.components["buf"]
    assert m.failed == 0
    assert buf.backlog[499] == 1_000  # the stall's writes, all held at its end
    assert 1_000 <= buf.extra["held_in"].sum() <= 1_020
    assert buf.extra["flushed"].sum() == buf.extra["held_in"].sum()
    assert buf.backlog[-1] == 0


# -- feedback edges -------------------------------------------------------------------------


def _retry_loop(delay_s: float = 0.5) -> GraphDesign:
    """A fleet whose jobs go on to a store with chance 0.8 and back to the queue (a retry)
    with chance 0.2, ``delay_s`` later."""
    nodes = {
        "src": {"kind": "source"},
        "q": {"kind": "queue", "drain_rps": 2_000, "buffer": 10**6},
        "f": {
            "kind": "fleet",
            "replicas": 1,
            "rps_per_replica": 2_000,
            "service": {"mean_ms": 50},
        },
        "db": {"kind": "store", "rps": 100_000},
    }
    data = graph(nodes, [("src", "q"), ("q", "f")])
    data["graph"]["edges"] += [
        {"from": "f", "to": "db", "share": 0.8},
        {"from": "f", "to": "q", "share": 0.2, "delay_s": delay_s},
    ]
    return GraphDesign.model_validate(data)


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_a_feedback_loop_by_hand(engine: str) -> None:
    """1,000 URLs/s, evenly spaced, into a queue whose fleet sends a share 0.2 of its jobs
    back 0.5 s later: in steady state the queue takes x = 1,000 + 0.2 x, so x = 1,000 /
    0.8 = 1,250 a second, and the store 0.8 x 1,250 = 1,000. The demand the metrics
    propagate around the loop is exactly that (saturation 1,250 / 2,000 = 0.625); the
    counts are within a binomial spread of it (the loop is taken at random: about 2,500
    returns in 10 s, sd below 60). URLs on the delayed edge at the end are in flight."""
    sc = Scenario.model_validate(
        {"system": "graph", "duration_s": 20, "base_rps": 1_000, "arrivals": "deterministic"}
    )
    m = gym.simulate(_retry_loop(), sc, engine=engine).metrics
    q, db = m.components["q"], m.components["db"]
    assert q.demand[10] == pytest.approx(1_250.0)
    assert q.saturation[10] == pytest.approx(0.625)
    assert db.demand[10] == pytest.approx(1_000.0)
    arrived = int(m.record.components["q"].arrived[500:1_500].sum())  # t = 5-15 s
    assert abs(arrived - 12_500) < 250
    assert m.failed == 0
    assert m.offered == m.served + m.in_flight_end
    # At the end: about 0.5 s x 250/s on the delayed edge, 0.05 s x 1,250/s in the fleet.
    assert 125 - 60 < m.record.in_flight_end["q"] < 125 + 60


def test_a_delay_off_the_tick_grid_and_the_loop_rules() -> None:
    """A delay is a whole number of ticks, at least one (a 1 ms delay on 10 ms ticks is
    one tick; 26 ms is three); the demand shifts by it. A delay on the edge a queue hands
    out over, or on a write buffer's edge to its store, is refused, naming the node."""
    assert Edge("a", "b", delay_s=0.001).delay_ticks(10) == 1
    assert Edge("a", "b", delay_s=0.026).delay_ticks(10) == 3
    assert Edge("a", "b").delay_ticks(10) == 0
    sc = Scenario.model_validate({"system": "graph", "duration_s": 5, "base_rps": 100})
    r = gym.simulate(_retry_loop(0.001), sc)
    m = r.metrics
    assert m.offered == m.served + m.failed + m.in_flight_end
    assert r.warnings[:1] == (
        "graph.edges[3].delay_s: 0.001 s runs as 1 tick of 10 ms = 0.01 s (+900%) in both "
        "engines, which hold an edge's requests whole ticks, at least one (use --tick-ms 1)",
    )
    # and the flow engine's note that a loop's latency is an estimate (gym.sim.flow.checked)
    assert [w for w in r.warnings[1:] if "feedback loop" not in w] == []
    nodes = dict(CHAIN)
    data = graph(nodes, [("src", "q"), ("f", "db")])
    data["graph"]["edges"].append({"from": "q", "to": "f", "delay_s": 1})
    assert "graph.nodes.f: the edge from q has a delay" in refused(data)
    buffered = {
        "src": {"kind": "source"},
        "buf": {"kind": "write_buffer", "buffer": 10},
        "db": {"kind": "store", "rps": 10},
    }
    data = graph(buffered, [("src", "buf")])
    data["graph"]["edges"].append({"from": "buf", "to": "db", "delay_s": 1})
    assert "graph.nodes.buf: its edge to db has a delay" in refused(data)


# -- sweeps and the optimizer over graphs ---------------------------------------------------


def test_the_optimizer_sizes_a_graph_node_by_node(tmp_path: Path) -> None:
    """The URL shortener's buyable nodes are its cache and its store, one unit each at
    least (a cache unit: hit ratio 0.92 and 100,000 lookups/s; a store unit: 25,000
    writes/s). Two units (cache 1, kv 1) lose the surge's misses: 3 x 20,000 x 0.08 =
    4,800 reads/s at a 25,000/s store is fine, but 60,000 lookups/s on one cache unit
    slowed 2x by the lost node is 1.2 x its capacity. Three units (cache 2: 0.96 and
    200,000/s) pass; the file written loads back and passes."""
    from gym.explore import optimize, unit_space

    sc = gym.load_scenario(SYSTEM_SCENARIOS / "url-shortener.yaml")
    base = load_design(SYSTEMS / "url-shortener-undersized.yaml")
    assert unit_space.designs_up_to(6, unit_space.space_for(sc, base)) == sum(
        len(unit_space.unit_sets(c, unit_space.space_for(sc, base))) for c in range(2, 7)
    )
    opt = optimize.search(sc, base=base, runs=16)
    assert opt.best is not None
    assert (opt.best.cost, opt.best.units) == (3, {"cache": 2, "kv": 1})
    assert opt.cheaper[0].units == {"cache": 1, "kv": 1} and not opt.cheaper[0].passed
    assert opt.why_nothing_cheaper()[0] == (
        "fewer than 2 units cannot build a design: cache, kv need one unit each"
    )
    node = opt.best.design.graph.nodes["cache"]
    assert (node.hit_ratio, node.rps) == (0.96, 200_000)
    out = tmp_path / "best.yaml"
    result = CliRunner().invoke(
        app,
        [
            "optimize",
            str(SYSTEMS / "url-shortener-undersized.yaml"),
            "--scenario",
            str(SYSTEM_SCENARIOS / "url-shortener.yaml"),
            "--runs",
            "16",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert gym.simulate(out, SYSTEM_SCENARIOS / "url-shortener.yaml").verdict == "pass"
    # A graph scenario needs the graph to size; a --set the search would replace is refused.
    with pytest.raises(GymError, match="give the graph design to size"):
        optimize.search(sc, runs=16)
    result = CliRunner().invoke(
        app,
        [
            "optimize",
            str(SYSTEMS / "url-shortener.yaml"),
            "--scenario",
            str(SYSTEM_SCENARIOS / "url-shortener.yaml"),
            "--set",
            "graph.nodes.kv.rps=100",
        ],
    )
    assert result.exit_code == 2
    assert "the optimizer chooses graph.nodes.kv.rps" in result.output


def test_a_sweep_over_a_graph_node(tmp_path: Path) -> None:
    """Sweeping the ingestion consumers: each replica is a unit (log 1, buffer 1, db 1
    besides), and the peak saturation of the consumers falls as 1 / replicas, so the
    verdict turns to PASS where the shipped design has 5."""
    from gym.explore import sweep

    sc = gym.load_scenario(SYSTEM_SCENARIOS / "ingestion.yaml")
    points = sweep.grid(SYSTEMS / "ingestion.yaml", ["graph.nodes.consumers.replicas=3..6"])
    rows = sweep.run(points, sc)
    assert [r["cost_units"] for r in rows] == [6, 7, 8, 9]
    assert [r["verdict"] for r in rows] == ["fail", "fail", "pass", "pass"]
    sat = [r["peak_saturation_mean"] for r in rows]
    assert sat[0] > sat[1] > sat[2] >= sat[3]
    with pytest.raises(GymError, match="its scenario needs system: graph"):
        sweep.check_system(points, gym.load_scenario(CHAOS))


def test_a_queue_backs_up_when_its_fleet_crashes() -> None:
    """A queue's overflow is explained by the crash of the fleet it feeds (as the
    crawler's frontier's is by the fetchers' crash), in the explanations and in the error
    budget; a write buffer's by its store's faults. Read off the graph's edges."""
    from gym.system import kinds

    r = gym.simulate(SYSTEMS / "ingestion-no-headroom.yaml", SYSTEM_SCENARIOS / "ingestion.yaml")
    assert kinds.affected_by(gym.system.graph.topology(r.design)) == {"log": {"log", "consumers"}}
    overflow = next(e for e in r.explanations if e.cause == "log_overflow")
    assert "consumers crash" in overflow.event
    crash = next(s for s in r.budget.by_event if s.name.startswith("consumers crash"))
    assert crash.by_cause["log_overflow"] == r.metrics.failed_by_cause["log_overflow"] > 0
    buffered = gym.load_design(SYSTEMS / "ingestion.yaml")
    assert kinds.affected_by(gym.system.graph.topology(buffered))["buffer"] == {"buffer", "db"}


def test_a_kind_written_in_one_module_runs_in_both_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/limiter_kind.py is a whole kind in one module (node model, cost, causes, flow
    rule, request rule); one registry line makes it a node the engines build, connect,
    fault and record. 1,000 URLs/s, evenly spaced, for 10 s through a limiter of 500/s
    stalled for t = 5-6 s: 9 s x 500 = 4,500 let through, 4,500 rejected, 1,000
    turned away while stalled (the request engine's bucket starts one tick full: 5 more
    may pass)."""
    from gym.sim import request
    from gym.sim.flow import engine as flow
    from gym.sim.flow.rules import RULES
    from gym.sim.request import engine
    from gym.sim.timeline import Timeline
    from gym.system import kinds
    from gym.system.kinds.store import StoreNode
    from tests import limiter_kind

    monkeypatch.setitem(kinds.REGISTRY, "limiter", limiter_kind.KIND)
    monkeypatch.setitem(RULES, "limiter", limiter_kind.FLOW)
    monkeypatch.setitem(request.RULES, "limiter", limiter_kind.LimiterRule)
    graph_ = Topology(
        (
            Node("src", "source"),
            Node("lim", "limiter", limiter_kind.LimiterParams(rps=500)),
            Node("db", "store", StoreNode(kind="store", rps=100_000)),
        ),
        (Edge("src", "lim"), Edge("lim", "db")),
    )
    assert problems(graph_, sources=kinds.source_kinds()) == []
    sc = Scenario.model_validate(
        {
            "system": "graph",
            "duration_s": 10,
            "base_rps": 1_000,
            "arrivals": "deterministic",
            "faults": [{"kind": "stall", "at_s": 5, "for_s": 1, "target": "lim"}],
        }
    )
    tl = Timeline(sc, 10)
    a = flow.run_graph(graph_, sc, [0], tl)[0]
    b = engine.run_graph(graph_, sc, seed=0, timeline=tl)
    assert a.failed_by_cause() == {"lim_rejected": 4_500, "lim_unavailable": 1_000, **_none(a)}
    assert b.failed_by_cause()["lim_unavailable"] == 1_000
    assert 4_490 <= b.failed_by_cause()["lim_rejected"] <= 4_500
    assert a.components["lim"].out.sum() == 4_500
    assert a.served_total == 4_500
    # Both records hold their conservation (checked as they are built) and agree.
    assert abs(b.served_total + sum(b.in_flight_end.values()) - 4_500) <= 10
    # Its explanation's hint is its own (Kind.hint), found by its kind as a shipped one's.
    from gym.analysis import explain_graph

    run: Any = SimpleNamespace(record=SimpleNamespace(topology=graph_))  # what hint() reads
    said = explain_graph.hint(run, "lim", "lim_rejected", 0)
    assert said == "A higher rps at lim lets more through; what it turns away is gone."
    # A cause it has no words for gets the general ones.
    assert explain_graph.hint(run, "lim", "lim_unavailable", 0).startswith(
        "Nothing in the graph holds what reaches lim"
    )


def _none(record: Any) -> dict[str, int]:
    """The record's other causes, all 0."""
    return {c: 0 for c in record.causes if not c.startswith("lim_")}


# -- from the hostile review of graphs on both engines --------------------------------------


def test_a_node_reached_only_by_a_delayed_edge_before_its_feeder() -> None:
    """A retry service fed only by a delayed edge and declared before the fleet that feeds
    it: the demand around the loop starts from nothing there (it crashed the metrics).
    Both engines run it and keep every URL: 1,000/s with a share 0.2 retried."""
    nodes = {
        "users": {"kind": "source"},
        "retry": {"kind": "service", "rps": 100_000, "service": {"mean_ms": 1}},
        "q": {"kind": "queue", "drain_rps": 5_000, "buffer": 10_000},
        "workers": {
            "kind": "fleet",
            "replicas": 4,
            "rps_per_replica": 500,
            "service": {"mean_ms": 20},
        },
        "db": {"kind": "store", "rps": 5_000, "service": {"mean_ms": 5}},
    }
    data = graph(nodes, [("users", "q"), ("q", "workers"), ("retry", "q")])
    data["graph"]["edges"] += [
        {"from": "workers", "to": "db", "share": 0.8},
        {"from": "workers", "to": "retry", "share": 0.2, "delay_s": 0.5},
    ]
    d = GraphDesign.model_validate(data)
    sc = Scenario.model_validate({"system": "graph", "duration_s": 10, "base_rps": 1_000})
    for engine in ("flow", "request"):
        m = gym.simulate(d, sc, engine=engine).metrics
        assert m.failed == 0 and m.offered == m.served + m.in_flight_end
        # Steady state: the queue takes 1,000 / 0.8 = 1,250 a second, the retries 250.
        assert m.components["q"].demand[6] == pytest.approx(1_250, rel=0.05)
        assert m.components["retry"].demand[6] == pytest.approx(250, rel=0.05)


def test_a_service_finishing_work_near_the_end_and_a_reserved_name() -> None:
    """A service with finish_share and its default 20 ms service: a request still in
    service at the end is in flight, not counted (it crashed the request engine on four
    seeds of five). A node may not be called end_to_end (the latency row's name)."""
    nodes = {
        "users": {"kind": "source"},
        "svc": {"kind": "service", "rps": 5_000, "finish_share": 0.3},
        "db": {"kind": "store", "rps": 100_000},
    }
    d = GraphDesign.model_validate(graph(nodes, [("users", "svc"), ("svc", "db")]))
    sc = Scenario.model_validate({"system": "graph", "duration_s": 5, "base_rps": 1_000})
    for seed in range(5):
        m = gym.simulate(d, sc, engine="request", seed=seed).metrics
        saved = int(m.record.components["svc"].extra["writes_saved"].sum())
        assert saved == int(m.record.components["svc"].served.sum())
        # Binomial: 0.3 of what it took, to within 4 sd (sqrt(n x 0.3 x 0.7), about 32).
        took = int(m.record.components["svc"].processed.sum())
        assert abs(saved - 0.3 * took) < 4 * (took * 0.21) ** 0.5
    named = graph({**CHAIN, "end_to_end": {"kind": "store", "rps": 5}}, [*CHAIN_EDGES])
    named["graph"]["edges"].append({"from": "db", "to": "end_to_end"})
    assert refused(named) == (
        "bad.yaml: graph.nodes.end_to_end: 'end_to_end' is reserved (results use it for the "
        "end-to-end latency); choose another name"
    )


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_a_write_buffer_in_front_of_a_one_slot_store_flushes(engine: str) -> None:
    """A store taking one write a tick (100/s on 10 ms ticks; one slot of 10 ms): the
    flush ceiling 0.85 x 1 rounded down was 0, so held writes never left. At least one a
    tick now: the 2 s stall's 100 writes are held and all flushed after it."""
    nodes = {
        "users": {"kind": "source"},
        "buf": {"kind": "write_buffer", "buffer": 5_000},
        "db": {"kind": "store", "rps": 100, "service": {"mean_ms": 10}},
    }
    d = GraphDesign.model_validate(graph(nodes, [("users", "buf"), ("buf", "db")]))
    sc = Scenario.model_validate(
        {
            "system": "graph",
            "duration_s": 20,
            "base_rps": 50,
            "arrivals": "deterministic",
            "faults": [{"kind": "stall", "at_s": 5, "for_s": 2, "target": "db"}],
        }
    )
    m = gym.simulate(d, sc, engine=engine).metrics
    buf = m.record.components["buf"]
    assert buf.backlog[699] >= 100  # the stall's writes, held at its end
    assert buf.extra["flushed"].sum() == buf.extra["held_in"].sum() > 0
    assert buf.backlog[-1] == 0 and m.failed == 0


def test_only_a_metering_node_backs_up_and_mismatched_scenarios_are_refused_up_front(
    tmp_path: Path,
) -> None:
    """A queue handing out at its own rate to a store is not backed up by the store's
    stall (only a fleet's crash backs a queue up); sweep and optimize refuse a scenario
    whose faults name nodes the design does not have, in one line, before running; a
    store whose slots round far from rate x time is warned about."""
    from gym.explore import optimize, sweep
    from gym.system import kinds

    nodes = {
        "users": {"kind": "source"},
        "q": {"kind": "queue", "drain_rps": 900, "buffer": 500},
        "db": {"kind": "store", "rps": 50, "service": {"mean_ms": 5}},
    }
    d = GraphDesign.model_validate(graph(nodes, [("users", "q"), ("q", "db")]))
    assert kinds.affected_by(gym.system.graph.topology(d)) == {}
    sc = Scenario.model_validate(
        {
            "system": "graph",
            "duration_s": 10,
            "base_rps": 1_000,
            "faults": [{"kind": "stall", "at_s": 3, "for_s": 2, "target": "db"}],
        }
    )
    r = gym.simulate(d, sc)
    stall = next(s for s in r.budget.by_event if s.name == "db stall")
    assert stall.by_cause["q_overflow"] == 0 < r.metrics.failed_by_cause["q_overflow"]
    assert any(
        w.startswith("graph.nodes.db.rps: 0.25 slots rounded to 1 (+300%): capacity 200/s")
        for w in r.warnings
    )
    ingestion = gym.load_scenario(SYSTEM_SCENARIOS / "ingestion.yaml")
    path = tmp_path / "d.yaml"
    path.write_text(dump_yaml({"name": "small", **graph(nodes, [("users", "q"), ("q", "db")])}))
    points = sweep.grid(path, ["graph.nodes.q.buffer=100,200"])
    with pytest.raises(GymError, match="'consumers' is not a node of small that can crash"):
        sweep.check_system(points, ingestion)
    with pytest.raises(GymError, match="'consumers' is not a node of small that can crash"):
        optimize.search(ingestion, base=load_design(path), runs=16)


@pytest.mark.parametrize(
    ("rps", "mean_ms", "loses"), [(200, 50, False), (180, 50, True), (200, 60, True)]
)
def test_a_fixed_time_station_bounds_what_it_sends_on(
    rps: float, mean_ms: float, loses: bool
) -> None:
    """Two stores in tandem, the first of 200/s x 50 ms = 10 slots, offered 300 Poisson
    URLs/s. Whatever the first takes in any 50 ms would all still hold one of its 10
    slots at the window's end, so no 50 ms holds more than 10 of them: a second store of
    10 slots of 50 ms can lose nothing (the request engine loses none; Erlang's formula on
    the stream as if it were Poisson lost 16%). With 9 slots (180/s x 50 ms), or 10 slots
    of 60 ms (rps 200 x 60 ms = 12 slots, but a window of 60 ms may hold the first's
    takes of more than 50 ms), the bound proves nothing, and the second store is left to
    Erlang's formula, as in the request engine, which loses some."""
    nodes = {
        "src": {"kind": "source"},
        "a": {"kind": "store", "rps": 200, "service": {"mean_ms": 50}},
        "b": {"kind": "store", "rps": rps, "service": {"mean_ms": mean_ms}},
    }
    d = GraphDesign.model_validate(graph(nodes, [("src", "a"), ("a", "b")]))
    sc = Scenario.model_validate(
        {"system": "graph", "duration_s": 30, "base_rps": 300, "arrivals": "poisson"}
    )
    for engine in ("flow", "request"):
        b = gym.simulate(d, sc, seed=0, engine=engine).metrics.record.components["b"]
        lost = int(sum(v.sum() for v in b.failed.values()))
        assert (lost > 0) == loses, (engine, lost)


def test_a_graphs_explanations_say_what_would_keep_its_losses() -> None:
    """ingestion-no-headroom under its scenario: the stalled database's loss suggests a
    write buffer holding at least what the stall lost; the log's overflow names the
    consumers it drains into; the consumers' crash loss the spare replica; the saturated
    consumers the queue feeding them."""
    import gym

    result = gym.simulate(
        ROOT / "designs/systems/ingestion-no-headroom.yaml",
        ROOT / "scenarios/systems/ingestion.yaml",
    )
    by_cause = {e.cause: e.text for e in result.explanations if e.kind == "cause"}
    stalled = result.metrics.failed_by_cause["db_unavailable"]
    assert (
        f"A write_buffer node before db holding at least {stalled:,} writes"
        in by_cause["db_unavailable"]
    )
    assert "It drains into consumers" in by_cause["log_overflow"]
    assert "N+1" in by_cause["consumers_crash_loss"]
    saturation = next(e for e in result.explanations if e.slo == "peak_saturation")
    assert any("fed by queue log" in d for d in saturation.details if d.startswith("consumers"))


def test_a_saturated_node_names_the_node_holding_its_backlog() -> None:
    """The node a saturated one backs up into is the one its kind backs up behind it
    (Kind.backs_up_behind): a fleet's queue, a store's write buffer; a store fed by a
    fleet directly holds no backlog anywhere, and a source holds none."""
    from gym.analysis import explain_graph

    graph = Topology(
        (
            Node("events", "source"),
            Node("log", "queue"),
            Node("consumers", "fleet"),
            Node("buffer", "write_buffer"),
            Node("db", "store"),
            Node("api", "service"),
        ),
        (
            Edge("events", "log"),
            Edge("log", "consumers"),
            Edge("consumers", "buffer", 0.5),
            Edge("consumers", "api", 0.5),
            Edge("buffer", "db"),
        ),
    )
    run: Any = SimpleNamespace(record=SimpleNamespace(topology=graph))
    said = {n: explain_graph.fed_by(run, n) for n in graph.names}
    assert said == {
        "events": "",
        "log": "",
        "consumers": "; fed by queue log (its backlog waits there)",
        "buffer": "",
        "db": "; fed by write_buffer buffer (its backlog waits there)",
        "api": "",
    }


def test_a_failing_graph_names_what_its_loops_amplify() -> None:
    """A drawn graph with loops back, made to fail: a note per delayed edge, its share g
    the returns over what reached the edge's target (the record's own sums), the load
    there 1 / (1 - g) what enters from outside."""
    import gym
    from tests import randgraph

    case = randgraph.draw(39)
    data = case.scenario.model_dump()
    data["slos"]["throughput_rps"] = {"min": 1e9}  # beyond any design: it fails
    strict = type(case.scenario).model_validate(data)
    result = gym.simulate(case.design, strict)
    assert not result.passed
    notes = [e.text for e in result.explanations if e.kind == "note"]
    record = result.metrics.record
    delayed = [e for e in record.topology.edges if e.delay_s > 0]  # type: ignore[union-attr]
    assert len(notes) == len(delayed) > 0
    for edge, note in zip(delayed, notes, strict=True):
        back = float(record.components[edge.source].out.sum()) * edge.share
        g = min(back / float(record.components[edge.target].arrived.sum()), 0.999)
        assert f"{g:.0%} of what reached {edge.target} came back" in note
        assert f"{1 / (1 - g):.2f}x what enters from outside" in note


def _fleet_of_fixed_times(paced: bool) -> GraphDesign:
    q = {"kind": "queue", "drain_rps": 10_000, "buffer": 10**6}
    f = {"kind": "fleet", "replicas": 2, "rps_per_replica": 100, "paced": paced}
    f["service"] = {"mean_ms": 100, "dist": "deterministic"}
    return GraphDesign.model_validate(
        graph({"src": {"kind": "source"}, "q": q, "f": f}, [("src", "q"), ("q", "f")])
    )


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_pacing_is_a_parameter_of_the_fleet(engine: str) -> None:
    """One fleet (issue 40): pacing is declared on the node, not told from the design's
    type. 2 replicas x 100/s of fixed 100 ms are 20 slots starting at most 200/s = 2 a
    10 ms tick; fed 300/s, a backlog forms at once and the fleet starts 200/s x 5 s =
    1,000 either way. Unpaced (c parallel servers), its slots free in step and start in
    step: some tick starts more than 3. Declared paced, a bucket at 200/s, 5% of a tick's
    starts deep (at least one token), meters them: no tick starts more than 2 x 1.05 + 1,
    i.e. 3. The crawler's compile step declares its fetchers paced."""
    sc = _poisson(duration=5, rps=300)
    starts = {}
    for paced in (False, True):
        r = gym.simulate(_fleet_of_fixed_times(paced), sc, seed=1, engine=engine)
        starts[paced] = r.metrics.record.components["f"].processed
        assert int(starts[paced].sum()) == 1_000
    assert int(starts[True].max()) <= 3 < int(starts[False].max())
    reference = gym.load_design(ROOT / "designs" / "reference.yaml")
    fetchers = compiled.system_topology(reference, gym.load_scenario(CHAOS)).node("fetchers")
    assert fetchers.params.paced


def test_one_registry_names_every_shipped_kind() -> None:
    """A shipped kind is its name in gym.system.kinds.SHIPPED: its declaration and both
    engines' rules are found from it, by module name; a kind nobody registered is refused
    by each engine with the function that registers one."""
    from gym.sim import request
    from gym.sim.flow.rules import rule_for
    from gym.system import kinds

    assert set(kinds.REGISTRY) >= set(kinds.SHIPPED)
    for name in kinds.SHIPPED:
        assert kinds.kind(name).name == name
        assert callable(rule_for(name).build)
        assert callable(request.rule_for(name))
    for find in (rule_for, request.rule_for):
        with pytest.raises(KeyError, match="register"):
            find("nosuchkind")
