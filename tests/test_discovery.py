"""The link-discovery loop (issue 13): fetched pages yield links, a sharded seen-URL set
looks every URL up, and the new ones go back to the frontier; a deep crawl is a change in
links per page. Every figure here is the model's own arithmetic (docs/model.md, "The
link-discovery loop"), checked in both engines."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import gym
from gym.analysis.rounding import warnings
from gym.api import url_budget
from gym.cli import app
from gym.explore import unit_space
from gym.models import Design, Scenario
from gym.system import costing, crawler
from tests.conftest import ROOT

LEVERS = ROOT / "designs" / "levers"
DEEP_CRAWL = ROOT / "scenarios" / "levers" / "deep-crawl.yaml"
ENGINES = ("flow", "request")


def _design(shards: int = 4, **discovery: Any) -> Design:
    return Design.model_validate(
        {
            "frontier": {"drain_rps": 30_000, "buffer": 80_000},
            "fetchers": {"replicas": 4, "rps_per_replica": 4_000},
            "cache": {"hit_ratio": 0.92},
            "page_store": {"rps": 25_000},
            "discovery": {"shards": shards, **discovery},
        }
    )


def _scenario(**parts: Any) -> Scenario:
    web = {"links_per_page": 2, "links_seen_fraction": 0.75, **parts.pop("web", {})}
    return Scenario.model_validate(
        {
            "duration_s": 20,
            "base_rps": 1_000,
            "arrivals": "deterministic",
            "web": web,
            "dedup": {"seen_url_fraction": 0.5},
            **parts,
        }
    )


def _windows(a: np.ndarray, ticks_per_s: int = 100) -> np.ndarray:
    return np.add.reduceat(a, np.arange(0, len(a), ticks_per_s))


@pytest.mark.parametrize("engine", ENGINES)
def test_the_loop_sustains_what_the_geometric_series_says(engine: str) -> None:
    """1,000 seeds/s, half of them new: 500 new URLs/s. Each fetched page yields 2 links,
    a quarter of them new: half a new URL per page, so generation g brings 500 x 0.5^g
    URLs/s, one fetch (250 ms) and the links' way to the seen set (0.05 s on average)
    after the one before: by T = 20 s the frontier took sum_g 500 x 0.5^g x (T - 0.3 g) =
    500 x (2 x 20 - 0.3 x 2) = 19,700 URLs. Seed to seed the count varies by about 1.3%
    (Poisson links, Binomial skips, amplified by the loop); three seeds' mean is held to
    2% (about 2.7 standard errors)."""
    counts = [
        int(
            gym.simulate(_design(), _scenario(), engine=engine, seed=seed)
            .metrics.record.components["frontier"]
            .arrived.sum()
        )
        for seed in range(3)
    ]
    assert np.mean(counts) == pytest.approx(19_700, rel=0.02)


@pytest.mark.parametrize("engine", ENGINES)
def test_links_are_offered_urls_and_each_page_yields_poisson_links(engine: str) -> None:
    """What the run offers is the seeds plus the links pages yielded (conservation holds
    over both); the links are Poisson(2) per fetched page, so their total is within four
    standard deviations (sqrt(2 x pages)) of 2 x the pages fetched."""
    result = gym.simulate(_design(), _scenario(), engine=engine)
    record = result.metrics.record
    links = int(record.created["links"].sum())
    assert int(record.offered.sum()) == 20_000 + links  # deterministic seeds: 1,000/s
    pages = int(record.components["fetchers"].out.sum())
    assert abs(links - 2 * pages) <= 4 * np.sqrt(2 * pages)
    assert "links" not in record.components  # it makes URLs; it serves and fails none
    assert result.metrics.units["seen_set"] == 4  # a unit per shard


@pytest.mark.parametrize("engine", ENGINES)
def test_a_hot_key_caps_what_shards_buy(engine: str) -> None:
    """Shards of 10,000 lookups/s, a hot key with 20% of the lookups. With 4 shards the
    busiest takes 0.2 + 0.8 / 4 = 40% of them, so the set holds 10,000 / 0.4 = 25,000/s,
    and 20,000 evenly spaced seeds/s saturate it at 0.8 exactly; 16 shards hold
    10,000 / (0.2 + 0.8 / 16) = 40,000/s, 1.6 times as much for 4 times the shards (no
    number of shards gets past 10,000 / 0.2 = 50,000/s)."""
    sc = Scenario.model_validate(
        {
            "duration_s": 5,
            "base_rps": 20_000,
            "arrivals": "deterministic",
            "web": {"hot_key_share": 0.2},
            "catalog": {"seen_set": {"shard_rps": 10_000}},
        }
    )
    four, sixteen = _design(4), _design(16)
    assert crawler.seen_set_capacity_rps(four, sc) == pytest.approx(25_000)
    assert crawler.seen_set_capacity_rps(sixteen, sc) == pytest.approx(40_000)
    result = gym.simulate(four, sc, engine=engine)
    peak, _window = result.metrics.components["seen_set"].peak
    assert peak == pytest.approx(0.8, abs=1e-9)
    assert result.metrics.units["seen_set"] == 4
    one = gym.simulate(_design(1), sc, engine=engine)  # 10,000/s against 20,000 asked
    assert one.metrics.components["seen_set"].peak.value == pytest.approx(2.0, abs=1e-9)
    assert one.metrics.failed_by_cause["seen_set_overload"] > 40_000  # about half of 100,000


@pytest.mark.parametrize("engine", ENGINES)
def test_a_lost_lookup_of_a_seen_link_loses_nothing(engine: str) -> None:
    """Every link points to a page already seen (links_seen_fraction 1): a link whose
    lookup an overloaded set loses is skipped as seen, not failed; only seeds fail. The
    set loses far more lookups than there are seeds, yet no more URLs fail than half the
    seeds (the half not seen before: a lost seed already seen is skipped too), and every
    lookup is accounted for as processed, failed or skipped."""
    sc = _scenario(
        web={"links_per_page": 20, "links_seen_fraction": 1.0},
        catalog={"seen_set": {"shard_rps": 5_000}},
        duration_s=10,
        # Poisson seeds: evenly spaced ones 1 ms apart would each take the slot the one
        # before frees as it arrives (1 ms lookups), and never be lost
        arrivals="poisson",
    )
    m = gym.simulate(_design(1), sc, engine=engine).metrics
    c = m.record.components["seen_set"]
    lost = int(c.arrived.sum() - c.processed.sum())
    seeds = int(m.record.offered.sum() - m.record.created["links"].sum())  # about 10,000
    # the set is overloaded: 1,000 seeds/s and 20 links from each of up to 500 pages/s
    # against 5,000 lookups/s
    assert lost > 2 * seeds
    failed = m.failed_by_cause["seen_set_overload"]
    assert 0 < failed <= seeds / 2 * 1.05  # Binomial: within 5% of half
    assert m.failed == failed
    skipped = sum(int(a.sum()) for a in c.skipped.values())
    assert lost == failed + (skipped - int(c.processed.sum() - c.out.sum()))


def test_the_deep_crawl_lesson_in_the_flow_engine() -> None:
    """scenarios/levers/deep-crawl.yaml: 63,000 lookups/s, 183,000/s in the deep crawl. One
    shard (50,000/s) saturates at once; four lose new URLs in the deep crawl (their busiest
    shard, with the hot key, takes 0.05 + 0.95 / 4 = 28.75% of the lookups: the set holds
    174,000/s); eight (296,000/s) pass at 15 units; twelve pass too, but at 19 units the
    cost SLO (16) fails."""
    one = gym.simulate(LEVERS / "seen-set-1.yaml", DEEP_CRAWL)
    assert one.verdict == "fail"
    sat = one.metrics.components["seen_set"].peak.value
    assert sat is not None and sat > 1.0  # 63,000 / 50,000 before anything backs off
    four = gym.simulate(LEVERS / "seen-set-4.yaml", DEEP_CRAWL)
    assert four.verdict == "fail"
    causes = four.metrics.failed_by_cause
    assert max(causes, key=lambda c: causes[c]) == "seen_set_overload"
    eight = gym.simulate(LEVERS / "seen-set-8.yaml", DEEP_CRAWL)
    assert eight.verdict == "pass"
    assert eight.metrics.units["seen_set"] == 8
    from gym.inputs.loading import load_design

    twelve = gym.simulate(
        load_design(LEVERS / "seen-set-8.yaml", ["discovery.shards=12"]), DEEP_CRAWL
    )
    assert [c.name for c in twelve.checks if not c.passed] == ["cost_units"]


def test_a_deep_crawl_is_a_change_in_links_per_page() -> None:
    """The seeds stay at 3,000/s; at t=10 s pages go from 10 links (5% new: half a new URL
    a page) to 15 (0.75 a page). The crawl runs at 3,000 / (1 - 0.5) = 6,000 pages/s, then
    3,000 / (1 - 0.75) = 12,000: twice as fast, with no change in the load. Means over
    seconds 4-9 and 20-29 (the loop settles within a few tenths of a second per
    generation), within 2% (Poisson seeds: about 0.5% per mean)."""
    m = gym.simulate(LEVERS / "seen-set-8.yaml", DEEP_CRAWL).metrics
    per_s = _windows(m.record.components["fetchers"].arrived)
    assert per_s[4:10].mean() == pytest.approx(6_000, rel=0.02)
    assert per_s[20:30].mean() == pytest.approx(12_000, rel=0.02)


def test_the_deep_crawl_in_the_request_engine_scaled_down() -> None:
    """The same loop, scaled down for the request engine: 300 seeds/s, shards of 5,000
    lookups/s (20 ms lookups: as many slots as the full-size set's). The crawl doubles
    from 600 to 1,200 pages/s when pages go from 10 to 15 links; two shards lose over ten
    times as many new URLs in the deep crawl as eight, which lose under one in a hundred.
    The flow engine agrees on the pages fetched within 5%."""
    sc = Scenario.model_validate(
        {
            "duration_s": 20,
            "base_rps": 300,
            "load": [
                {"at_s": 0, "multiplier": 1.0},
                {"at_s": 8, "multiplier": 1.0, "links_per_page": 15},
            ],
            "web": {"links_per_page": 10, "links_seen_fraction": 0.95, "hot_key_share": 0.05},
            "catalog": {"seen_set": {"shard_rps": 5_000}},
        }
    )
    slow = {"service": {"mean_ms": 20}}
    eight = gym.simulate(_design(8, **slow), sc, engine="request").metrics
    per_s = _windows(eight.record.components["fetchers"].arrived)
    assert per_s[3:8].mean() == pytest.approx(600, rel=0.05)
    assert per_s[13:20].mean() == pytest.approx(1_200, rel=0.05)
    new_lost = eight.failed_by_cause["seen_set_overload"]
    assert new_lost < 0.01 * int(eight.record.components["frontier"].arrived.sum())
    two = gym.simulate(_design(2, **slow), sc, engine="request").metrics
    assert two.failed_by_cause["seen_set_overload"] > 10 * max(new_lost, 1)
    flow = gym.simulate(_design(8, **slow), sc).metrics
    pages = int(flow.record.components["fetchers"].arrived.sum())
    assert pages == pytest.approx(int(eight.record.components["fetchers"].arrived.sum()), rel=0.05)


def test_links_without_discovery_are_named_not_silently_dropped() -> None:
    reference = gym.load_design(ROOT / "designs" / "reference.yaml")
    sc = gym.load_scenario(DEEP_CRAWL)
    lines = warnings(reference, sc, engine="flow", tick_ms=10)
    assert any("no discovery section" in line and "15 links" in line for line in lines)
    assert not any(
        "discovery" in line for line in warnings(_design(), sc, engine="flow", tick_ms=10)
    )


def test_the_request_engines_url_limit_counts_the_links() -> None:
    """The deep crawl offers 90,000 seeds but its loop adds links: 10 s at 6,000 pages x 10
    links and 20 s at 12,000 x 15, 4.29 million URLs in all; a limit between the two is
    refused for the design that follows links, not for one that does not."""
    sc = gym.load_scenario(DEEP_CRAWL)
    twelve = gym.load_design(LEVERS / "seen-set-8.yaml")
    reference = gym.load_design(ROOT / "designs" / "reference.yaml")
    assert url_budget(sc, 1, 1_000_000, designs=[reference]) is None
    over = url_budget(sc, 1, 1_000_000, designs=[twelve])
    assert over is not None and "4,290,000" in over.message


def test_the_optimizer_buys_seen_set_shards_for_a_discovery_base() -> None:
    """A base with the loop: the search's parts include the seen set, and a unit set
    becomes that many shards (the base's lookup time kept)."""
    base = _design(1, service={"mean_ms": 2})
    space = unit_space.space_for(gym.load_scenario(DEEP_CRAWL), base)
    assert space.parts[-1] == "seen_set" and space.mins[-1] == 1
    units = {"frontier": 1, "fetchers": 4, "cache": 1, "page_store": 1, "seen_set": 6}
    built = unit_space.unit_design(units, gym.load_scenario(DEEP_CRAWL), base, "x")
    assert built.discovery is not None and built.discovery.shards == 6
    assert built.discovery.service.mean_ms == 2
    assert (
        costing.units(built, Scenario.model_validate({"duration_s": 1, "base_rps": 1}).catalog)[
            "seen_set"
        ]
        == 6
    )


def test_a_graph_design_cannot_name_the_crawlers_own_kinds(tmp_path: Any) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(
        "graph:\n  nodes:\n    in: {kind: source}\n    s: {kind: lookup, rps: 10}\n"
        "  edges:\n    - {from: in, to: s}\n"
    )
    out = CliRunner().invoke(app, ["validate", str(path)])
    assert out.exit_code == 2
    assert "'lookup' is not a node kind" in out.output
    assert "lookup" not in out.output.split("expected", 1)[1]


def _erlang_b(slots: int, load: float) -> float:
    """Erlang's loss formula by its recursion: B(0) = 1, B(c) = a B / (c + a B)."""
    b = 1.0
    for c in range(1, slots + 1):
        b = load * b / (c + load * b)
    return b


@pytest.mark.parametrize("engine", ENGINES)
def test_shards_are_independent_stations_not_one_pool(engine: str) -> None:
    """Twelve shards of 1,000 lookups/s with 50 ms lookups: 50 slots each. 9,600 Poisson
    lookups/s spread evenly (no hot key) offer each 800/s x 0.05 s = 40 Erlangs, so each
    loses B(50, 40) = 1.87% of its lookups; one pool of 600 slots at 480 Erlangs would
    lose about 1e-8. 20 s: about 3,600 lost, held to 10% (Poisson counts of that size
    vary by a few percent, more for loss, which comes in bursts)."""
    sc = Scenario.model_validate(
        {
            "duration_s": 20,
            "base_rps": 9_600,
            "catalog": {"seen_set": {"shard_rps": 1_000}},
        }
    )
    m = gym.simulate(_design(12, service={"mean_ms": 50}), sc, engine=engine).metrics
    c = m.record.components["seen_set"]
    arrived = int(c.arrived.sum())
    lost = int(c.arrived.sum() - c.processed.sum())
    assert _erlang_b(50, 40.0) == pytest.approx(0.0187, abs=5e-4)
    assert lost == pytest.approx(_erlang_b(50, 40.0) * arrived, rel=0.1)


def test_the_outputs_name_the_loop() -> None:
    """--json splits the offered URLs into seeds and links; the explanations name the deep
    crawl (a stage that changes only the links per page is not base load); `gym estimate`
    says its figures are the seeds' alone."""
    import json

    runner = CliRunner()
    args = [str(LEVERS / "seen-set-4.yaml"), "--scenario", str(DEEP_CRAWL)]
    out = runner.invoke(app, ["run", *args, "--json"])
    assert out.exit_code == 1, out.output
    data = json.loads(out.stdout)
    links = data["metrics"]["links_found"]
    assert 0 < links < data["metrics"]["offered"]
    assert data["metrics"]["offered"] - links == pytest.approx(90_000, rel=0.02)  # 3,000/s x 30 s
    words = " ".join(e["text"] + " ".join(e.get("details", [])) for e in data["explanations"])
    assert "deep crawl (load x1, 15 links a page)" in words
    est = runner.invoke(app, ["estimate", *args])
    assert est.exit_code == 0 and "for the seeds alone" in est.output


@pytest.mark.parametrize("engine", ENGINES)
def test_with_its_own_seen_set_the_cache_is_the_dns_cache_alone(engine: str) -> None:
    """Without discovery a cache hit is finished at the cache (the specification's rule):
    the resolver and the store take the misses alone, 8% of the pages at hit ratio 0.92
    (content hashing, at the resolver, then skips 30% of those writes). With discovery the
    seen test is the seen set's and the cache only saves DNS lookups: every page is
    written, less the 30% duplicates that content hashing (at the cache, on every page)
    finishes there, and the resolver sees 8% of the rest. Within four binomial standard
    deviations."""
    sc = _scenario(dedup={"seen_url_fraction": 0.5, "duplicate_body_fraction": 0.3})
    plain = _design().model_copy(update={"discovery": None})
    for design in (plain, _design()):
        for hashing in (False, True):
            d = design.model_copy(
                update={"dedup": design.dedup.model_copy(update={"content_hash": hashing})}
            )
            c = gym.simulate(d, sc, engine=engine).metrics.record.components
            pages = int(c["cache"].processed.sum())
            kept = 0.7 if hashing else 1.0
            if design.discovery is None:
                resolver_share, store_share = 0.08, 0.08 * kept
            else:
                resolver_share, store_share = 0.08 * kept, kept
            for name, share in (("resolver", resolver_share), ("page_store", store_share)):
                got = int(c[name].arrived.sum())
                sd = np.sqrt(pages * share * (1 - share))
                # + the pages still being looked up or resolved when the run ends (1,000
                # pages/s x 21 ms: about 21)
                assert abs(got - share * pages) <= 4 * sd + 25, (name, hashing, design.discovery)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_stalled_seen_set_loses_the_new_urls_it_meets(engine: str) -> None:
    """At steady state 1,000 pages/s (500 new seeds and 500 new links a second: each page's
    2 links, a quarter new). A 1 s stall of the seen set loses every lookup in it; the
    ones already seen are skipped. The 500 new seeds fail; links keep coming only from
    the pages whose URLs passed before the stall, fetched until 0.25 s into it and their
    links 0.05 s later: 0.3 s of 500 new links a second, 150. About 650 new URLs fail, as
    seen_set_unavailable (within 10%: Binomial and Poisson counts of that size). A design
    without discovery cannot be given the fault."""
    sc = _scenario(faults=[{"kind": "stall", "at_s": 5, "for_s": 1, "target": "seen_set"}])
    m = gym.simulate(_design(), sc, engine=engine).metrics
    assert m.failed_by_cause["seen_set_unavailable"] == pytest.approx(650, rel=0.1)
    assert m.failed_by_cause["seen_set_overload"] < 20
    with pytest.raises(gym.GymError, match="no discovery section"):
        gym.simulate(_design().model_copy(update={"discovery": None}), sc, engine=engine)
