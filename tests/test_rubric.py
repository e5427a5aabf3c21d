"""The crawler's trade-offs as levers and the rubric that grades them (issue 13, first
part): the frontier's structure, and `gym grade`."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import gym
from gym.analysis import rubric
from gym.cli import app
from gym.models import Design, Scenario
from tests.conftest import CHAOS, ROOT

DESIGNS = ROOT / "designs"


def _design(dedup: dict[str, Any] | None = None, **frontier: Any) -> Design:
    return Design.model_validate(
        {
            "frontier": {"drain_rps": 100, "buffer": 10_000, **frontier},
            "fetchers": {"replicas": 1, "rps_per_replica": 4_000},
            "cache": {"hit_ratio": 0.92},
            "page_store": {"rps": 25_000},
            "dedup": dedup or {},
        }
    )


def _scenario(**web: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "duration_s": 10,
            "base_rps": 100,
            "arrivals": "deterministic",
            "web": {"crawl_delay_s": 1, **web},
        }
    )


def test_a_fifo_fetching_one_host_violates_its_crawl_delay_by_hand() -> None:
    """One host, a crawl delay of 1 s, a global FIFO handing out 100 URLs a second for
    10 s: every fetch after the very first comes 10 ms after the one before, 999 too
    soon. The two-stage frontier makes none: with one host it hands out one URL per crawl
    delay (10 in 10 s)."""
    sc = _scenario(hosts=1)
    fifo = gym.simulate(_design(structure="global_fifo"), sc)
    assert fifo.metrics.record.components["frontier"].processed.sum() == 1_000
    assert rubric.politeness_violations(fifo.metrics.record, fifo.design, sc) == 999
    polite = gym.simulate(_design(), sc)
    assert polite.metrics.record.components["frontier"].processed.sum() == 10
    assert rubric.politeness_violations(polite.metrics.record, polite.design, sc) == 0


def _monte_carlo(hosts: int, zipf: float, rate: int, delay: float, reps: int) -> float:
    """Fetches too soon, counted one by one: ``rate`` evenly spaced fetches a second for
    10 s, each of a host drawn from the Zipf law; a fetch is too soon if its host was
    fetched less than ``delay`` before it."""
    rng = np.random.default_rng(7)
    p = np.arange(1, hosts + 1, dtype=np.float64) ** -zipf
    p /= p.sum()
    times = (np.arange(10 * rate) + 0.5) / rate
    total = 0
    for _ in range(reps):
        last = np.full(hosts, -1e9)
        drawn = rng.choice(hosts, size=times.size, p=p).tolist()
        for t, h in zip(times.tolist(), drawn, strict=True):
            total += t - last[h] < delay
            last[h] = t
    return total / reps


@pytest.mark.parametrize(
    ("hosts", "zipf", "delay"), [(50, 1.0, 1.0), (1_000, 0.0, 1.0), (200, 1.0, 0.25)]
)
def test_violations_against_counting_them_one_by_one(hosts: int, zipf: float, delay: float) -> None:
    """The measure (a sliding crawl-delay window at each tick) against a Monte Carlo of
    the same FIFO hand-outs counted fetch by fetch, over 200 repetitions: within 3%."""
    sc = _scenario(hosts=hosts, host_zipf=zipf, crawl_delay_s=delay)
    d = _design(structure="global_fifo", drain_rps=10_000)
    r = gym.simulate(d, sc)
    got = rubric.politeness_violations(r.metrics.record, d, sc)
    assert got == pytest.approx(_monte_carlo(hosts, zipf, 100, delay, 200), rel=0.03)


def test_hosts_beyond_the_busiest_are_grouped_closely() -> None:
    """A million Zipf hosts: the grouped shares give sum_h p_h (1 - p_h)^x (the chance a
    fetch's host is not among x earlier ones) within 0.1% of the exact sum, from x = 10
    to 10^7, and the shares add up to 1."""
    hosts = 10**6
    exact = np.arange(1, hosts + 1, dtype=np.float64) ** -1.0
    exact /= exact.sum()
    shares, counts = rubric.host_groups(hosts, 1.0)
    assert float((shares * counts).sum()) == pytest.approx(1.0)
    for x in (10.0, 1e3, 1e5, 1e7):
        want = float((exact * np.power(1 - exact, x)).sum())
        got = float((shares * counts * np.power(1 - shares, x)).sum())
        assert got == pytest.approx(want, rel=1e-3), x


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_the_fifo_frontier_is_faster_and_impolite_the_two_stage_polite(engine: str) -> None:
    """The politeness-bound design (10,000 back queues, 1 s crawl delay: 10,000 URLs/s)
    offered 15,000 URLs/s: as a global FIFO the frontier drains up to 30,000/s, so it
    hands out 1.5 times as much and keeps no backlog, but fetches popular hosts sooner than
    their crawl delay; the two-stage frontier never does, and under its overload it hands
    out every high-priority URL (10% of them, 1,500/s) while the FIFO hands them out no
    more than the rest. In both engines (the lever is the frontier's hand-out limit)."""
    sc = Scenario.model_validate({"duration_s": 4, "base_rps": 15_000})
    base = gym.load_design(DESIGNS / "politeness-bound.yaml")
    fifo_design = base.model_copy(
        update={"frontier": base.frontier.model_copy(update={"structure": "global_fifo"})}
    )
    two = gym.simulate(base, sc, engine=engine).metrics
    fifo = gym.simulate(fifo_design, sc, engine=engine).metrics
    handed = [m.record.components["frontier"].processed.sum() for m in (two, fifo)]
    assert handed[1] > 1.4 * handed[0]
    # The two-stage frontier keeps the 5,000/s it cannot hand out: about 20,000 by the end.
    backlog = [m.record.components["frontier"].backlog[-1] for m in (two, fifo)]
    assert backlog[0] == pytest.approx(20_000, rel=0.03) and backlog[1] < 100
    assert rubric.politeness_violations(two.record, base, sc) == 0
    assert rubric.politeness_violations(fifo.record, fifo_design, sc) > 1_000
    high_two = rubric.high_priority_served(two.record, base, sc)
    high_fifo = rubric.high_priority_served(fifo.record, fifo_design, sc)
    assert high_two == pytest.approx(1.0)
    every = handed[1] / fifo.record.components["frontier"].arrived.sum()
    assert high_fifo == pytest.approx(every)


def test_defaults_keep_the_frontier_two_stage() -> None:
    """Today's files say nothing of the structure: a two-stage frontier, as before."""
    d = gym.load_design(DESIGNS / "reference.yaml")
    assert d.frontier.structure == "two_stage"
    sc = gym.load_scenario(CHAOS)
    assert (sc.web.host_zipf, sc.web.high_priority_share) == (1.0, 0.1)


def test_the_rubric_credits_the_reference_and_names_the_starters_gaps() -> None:
    """The reference gets full credit on every item it has (its frontier, its spare
    fetcher, its DNS cache, its storage split); it has no async writer and no content
    hashing, and the rubric says what that cost. The starter's gaps are named with their
    measurements: its third replica cannot carry the crash (frontier overflow), its DNS
    cache lets the resolver overload. Items the scenario cannot test are listed as
    untested, not credited."""
    ref = {g.item: g for g in rubric.grade(gym.simulate(DESIGNS / "reference.yaml", CHAOS))}
    for item in ("frontier structure", "N+1 fetchers", "DNS caching"):
        assert ref[item].credit == "full", ref[item]
    assert ref["decoupled writes"].credit == "none"
    assert "page writes lost while the page store was stalled" in ref["decoupled writes"].measured
    assert ref["dedup layers"].credit == "untested"  # no seen URLs, variants or duplicates
    assert ref["storage split"].credit == "full"  # object storage and a key-value store
    assert ref["recrawl policy"].credit == "untested"  # the chaos scenario has no seen URLs
    writer = {
        g.item: g for g in rubric.grade(gym.simulate(DESIGNS / "writer-lossless.yaml", CHAOS))
    }
    assert writer["decoupled writes"].credit == "full"
    assert writer["decoupled writes"].measured.endswith(", 0 lost")
    starter = {g.item: g for g in rubric.grade(gym.simulate(DESIGNS / "starter.yaml", CHAOS))}
    assert starter["N+1 fetchers"].credit == "none"
    assert "overflowed the frontier" in starter["N+1 fetchers"].measured
    assert starter["DNS caching"].credit == "partial"
    assert starter["decoupled writes"].credit == "none"


def test_the_fifo_trap_is_named_and_grade_keeps_the_verdicts_exit_code(tmp_path: Any) -> None:
    """A global FIFO gets partial credit with the trap named; `gym grade --json` carries
    the SLO verdict and the rubric, and exits as `gym run` would (1: the SLOs fail)."""
    d = tmp_path / "fifo.yaml"
    d.write_text(
        (DESIGNS / "starter.yaml")
        .read_text()
        .replace("buffer: 20000}", "buffer: 20000, structure: global_fifo}")
    )
    result = CliRunner().invoke(app, ["grade", str(d), "--json"])
    assert result.exit_code == 1, result.output
    out = json.loads(result.output)
    assert out["verdict"] == "fail"
    frontier = next(g for g in out["rubric"] if g["item"] == "frontier structure")
    assert frontier["credit"] == "partial" and frontier["trap"].startswith("global FIFO")
    assert "sooner than its 1 s crawl delay" in frontier["measured"]
    ok = CliRunner().invoke(app, ["grade", str(DESIGNS / "reference.yaml")])
    assert ok.exit_code == 0 and "frontier structure" in ok.output
    graph = CliRunner().invoke(app, ["grade", str(ROOT / "designs/systems/ingestion.yaml")])
    assert graph.exit_code == 2 and "grades crawler designs" in graph.output


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_canonicalization_skips_the_variants_that_would_be_crawled_again(engine: str) -> None:
    """1,000 URLs/s for 10 s, 30% of them variants of known URLs: a canonicalizing crawler
    skips them at the door (about 3,000, within 4 binomial sd: sqrt(10,000 x 0.21) = 46)
    and fetches the other 7,000; without canonicalization all 10,000 are fetched, and the
    rubric counts about 0.3 x 10,000 = 3,000 fetched again. In both engines."""
    sc = Scenario.model_validate(
        {
            "duration_s": 10,
            "base_rps": 1_000,
            "arrivals": "deterministic",
            "dedup": {"variant_fraction": 0.3},
        }
    )
    on = _design({"canonicalize": True}, drain_rps=30_000)
    off = _design(drain_rps=30_000)
    a = gym.simulate(on, sc, engine=engine)
    b = gym.simulate(off, sc, engine=engine)
    skipped = a.metrics.skipped_by_cause["url_variant"]
    assert abs(skipped - 3_000) < 4 * 46
    fetched_on = a.metrics.record.components["fetchers"].arrived.sum()
    fetched_off = b.metrics.record.components["fetchers"].arrived.sum()
    assert abs(fetched_on - (10_000 - skipped)) <= 20  # in flight at the frontier's edge
    assert fetched_off == pytest.approx(10_000, abs=20)
    assert b.metrics.skipped_by_cause["url_variant"] == 0
    grades_on = {g.item: g for g in rubric.grade(a)}
    grades_off = {g.item: g for g in rubric.grade(b)}
    assert f"{skipped:,} variants of known URLs skipped" in grades_on["dedup layers"].measured
    assert "about 3,000 variants fetched again" in grades_off["dedup layers"].measured
    with_hash = _design({"canonicalize": True, "content_hash": True}, drain_rps=30_000)
    assert {g.item: g for g in rubric.grade(gym.simulate(with_hash, sc))}[
        "dedup layers"
    ].credit == "full"


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_javascript_rendering_costs_fetcher_cpu(engine: str) -> None:
    """A replica of 2,000 plain pages/s when 25% of pages need rendering at 5x the CPU:
    2,000 / (0.75 + 0.25 x 5) = 1,000 pages/s. One replica offered 1,500 pages/s for
    10 s keeps up with plain pages (saturation 0.75) and falls behind with rendering
    (1.5: it hands out 1,000/s and the frontier keeps the rest). In both engines."""
    d = Design.model_validate(
        {
            "frontier": {"drain_rps": 30_000, "buffer": 100_000},
            "fetchers": {"replicas": 1, "rps_per_replica": 2_000},
            "cache": {"hit_ratio": 0.92},
            "page_store": {"rps": 25_000},
        }
    )
    plain = Scenario.model_validate(
        {"duration_s": 10, "base_rps": 1_500, "arrivals": "deterministic"}
    )
    rendered = Scenario.model_validate(
        {
            **plain.model_dump(mode="json", exclude_none=True),
            "web": {"js_render_share": 0.25, "js_render_cost": 5},
        }
    )
    a = gym.simulate(d, plain, engine=engine).metrics
    b = gym.simulate(d, rendered, engine=engine).metrics
    assert np.nanmax(a.components["fetchers"].saturation) == pytest.approx(0.75)
    assert np.nanmax(b.components["fetchers"].saturation) == pytest.approx(1.5)
    started = b.record.components["fetchers"].processed.sum()
    assert started == pytest.approx(10_000, abs=60)  # 1,000/s (the request bucket: +50)
    assert b.record.components["frontier"].backlog[-1] == pytest.approx(5_000, abs=60)
    assert a.record.components["frontier"].backlog[-1] < 10


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_blobs_in_a_relational_table_cost_more_and_hit_its_ceiling(engine: str) -> None:
    """12,000 page writes/s (24,000 URLs/s, half of them cache misses) asked of a page
    store of 25,000 writes/s: in object storage that is 1 unit at saturation 0.48; as rows
    of one relational table it is 10 units (2,500 writes/s each) and the table takes at
    most 10,000/s, so saturation 1.2 and about 2,000 writes/s lost. In both engines; the
    rubric names the trap."""
    d = Design.model_validate(
        {
            "frontier": {"drain_rps": 30_000, "buffer": 100_000},
            "fetchers": {"replicas": 7, "rps_per_replica": 4_000},
            "cache": {"hit_ratio": 0.5},
            "page_store": {"rps": 25_000},
        }
    )
    relational = Design.model_validate(
        {**d.model_dump(mode="json"), "page_store": {"rps": 25_000, "layout": "relational"}}
    )
    sc = Scenario.model_validate(
        {
            "duration_s": 3,
            "base_rps": 24_000,
            "arrivals": "deterministic",
            "resolver": {"rps": 100_000},  # neither the resolver nor politeness binds
            "web": {"crawl_delay_s": 0.5},
        }
    )
    a = gym.simulate(d, sc, engine=engine)
    b = gym.simulate(relational, sc, engine=engine)
    assert (a.metrics.units["page_store"], b.metrics.units["page_store"]) == (1, 10)
    assert a.metrics.failed_by_cause["store_overload"] == 0
    lost = b.metrics.failed_by_cause["store_overload"]
    arrived = int(b.metrics.record.components["page_store"].arrived.sum())
    # From t = 0.25 s (the first fetches end): 12,000 x 2.75 s = 33,000 writes.
    assert arrived == pytest.approx(33_000, rel=0.01)
    assert lost == pytest.approx(arrived - 2.75 * 10_000, rel=0.15)  # beyond its ceiling
    grades = {g.item: g for g in rubric.grade(b)}
    assert grades["storage split"].credit == "none"
    assert grades["storage split"].trap.startswith("blobs in a relational table")
    assert {g.item: g for g in rubric.grade(a)}["storage split"].credit == "full"


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_recrawling_everything_wastes_bandwidth_on_unchanged_pages(engine: str) -> None:
    """1,000 URLs/s for 10 s, 60% of them crawled before and 20% of those changed since: a
    recrawl by change rate skips the 0.6 x 0.8 = 48% unchanged (about 4,800, within 4
    binomial sd of sqrt(10,000 x 0.48 x 0.52) = 50) and fetches 5,200; a full recrawl
    fetches all 10,000, and the rubric counts the 10,000 x 60% x 80% = 4,800 unchanged
    pages it fetched again, 4,800 x 100 KB = 0.48 GB. In both engines."""
    sc = Scenario.model_validate(
        {
            "duration_s": 10,
            "base_rps": 1_000,
            "arrivals": "deterministic",
            "dedup": {"seen_url_fraction": 0.6, "changed_fraction": 0.2, "page_kb": 100},
        }
    )
    by_rate = _design(drain_rps=30_000)
    full = _design({"recrawl": "full"}, drain_rps=30_000)
    a = gym.simulate(by_rate, sc, engine=engine)
    b = gym.simulate(full, sc, engine=engine)
    skipped = a.metrics.skipped_by_cause["seen_url"]
    assert abs(skipped - 4_800) < 4 * 50
    assert b.metrics.skipped_by_cause["seen_url"] == 0
    fetched = [r.metrics.record.components["fetchers"].arrived.sum() for r in (a, b)]
    assert fetched[0] == pytest.approx(10_000 - skipped, abs=20)
    assert fetched[1] == pytest.approx(10_000, abs=20)
    g_rate = {g.item: g for g in rubric.grade(a)}["recrawl policy"]
    g_full = {g.item: g for g in rubric.grade(b)}["recrawl policy"]
    assert g_rate.credit == "full"
    assert f"{skipped:,} unchanged ones skipped as seen x 100 KB" in g_rate.measured
    assert g_full.credit == "none" and g_full.trap.startswith("recrawl everything")
    handed = int(b.metrics.record.components["frontier"].processed.sum())
    assert (
        f"{handed:,} URLs handed out to the fetchers (of 10,000 offered) x 60% seen before x "
        f"80% unchanged = about {handed * 0.48:,.0f} pages x 100 KB" in g_full.measured
    )
    assert rubric.recrawl_counts(b.metrics.record, full, sc).unchanged == pytest.approx(
        4_800, abs=20 * 0.48
    )


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_recrawl_pages_are_counted_from_what_was_handed_out_not_offered(engine: str) -> None:
    """The issue's bug: the rubric counted recrawled pages from the URLs offered. 1,000
    URLs/s for 10 s (60% crawled before, 20% of those changed since, 100 KB a page) into
    a frontier that hands out 400/s and holds 2,000: a full recrawl hands out 400 x 10 =
    4,000 URLs, 2,000 are still queued at the end and 10,000 - 4,000 - 2,000 = 4,000
    overflowed. Its waste is 4,000 x 60% x 80% = 1,920 unchanged pages x 100 KB = 0.19
    GB, and 4,000 x 60% x 20% = 480 changed ones refreshed (offered, 10,000 x 48% =
    4,800 and 0.48 GB, which the old rubric said). By change rate the seen test skips
    48% of the seeds and lets in 52%, of which 60% x 20% = 12% of the seeds were seen
    before (and changed): 12 / 52 = 23.1% of the 4,000 handed out, 4,000 x 12 / 52 =
    923 pages fetched again (not 10,000 x 12% = 1,200). The request engine hands out a
    few more (4,003 with seed 0), so the figures follow each engine's own count."""
    sc = Scenario.model_validate(
        {
            "duration_s": 10,
            "base_rps": 1_000,
            "arrivals": "deterministic",
            "dedup": {"seen_url_fraction": 0.6, "changed_fraction": 0.2, "page_kb": 100},
        }
    )
    full = _design({"recrawl": "full"}, drain_rps=400, buffer=2_000)
    b = gym.simulate(full, sc, engine=engine)
    front = b.metrics.record.components["frontier"]
    handed = int(front.processed.sum())
    assert handed == pytest.approx(4_000, abs=5)
    assert int(front.backlog[-1]) == 2_000
    assert int(front.failed["frontier_overflow"].sum()) == 10_000 - handed - 2_000
    g_full = {g.item: g for g in rubric.grade(b)}["recrawl policy"]
    assert "4,800" not in g_full.measured
    assert g_full.measured.startswith(
        f"every page seen before fetched again: {handed:,} URLs handed out to the fetchers "
        f"(of 10,000 offered) x 60% seen before x 80% unchanged = about "
        f"{handed * 0.48:,.0f} pages x 100 KB = 0.19 GB of bandwidth wasted"
    )
    counts = rubric.recrawl_counts(b.metrics.record, full, sc)
    assert counts is not None
    assert counts.unchanged == pytest.approx(handed * 0.6 * 0.8)  # 1,920 at 4,000
    assert counts.changed == pytest.approx(handed * 0.6 * 0.2)  # 480

    by_rate = _design(drain_rps=400, buffer=2_000)
    a = gym.simulate(by_rate, sc, engine=engine)
    handed = int(a.metrics.record.components["frontier"].processed.sum())
    assert handed == pytest.approx(4_000, abs=5)
    skipped = a.metrics.skipped_by_cause["seen_url"]
    assert abs(skipped - 4_800) < 4 * 50
    g_rate = {g.item: g for g in rubric.grade(a)}["recrawl policy"]
    assert "1,200" not in g_rate.measured
    assert (
        f"{handed:,} URLs handed out to the fetchers (of 10,000 offered) x 23.1% seen "
        "before and changed (60% x 20% = 12% of the seeds, of the 52% the seen test lets "
        f"in) = about {handed * 0.12 / 0.52:,.0f} pages fetched again; {skipped:,} unchanged "
        f"ones skipped as seen x 100 KB = {skipped * 100 / 1e6:.2f} GB not fetched"
    ) in g_rate.measured
    counts = rubric.recrawl_counts(a.metrics.record, by_rate, sc)
    assert counts is not None
    assert counts.changed == pytest.approx(handed * 0.12 / 0.52)  # 923 at 4,000
    assert counts.unchanged == 0 and counts.skipped == skipped


def test_the_freshness_lesson_grades_what_its_fetchers_took() -> None:
    """designs/levers/recrawl-everything.yaml under scenarios/levers/freshness.yaml (the
    issue's figures): four fetchers of 4,000/s, one crashed from 10 s to 20 s, take 16,000
    x 20 + 12,000 x 10 = 440,000 URLs in 30 s; of the 600,304 offered (Poisson, seed 0)
    the 80,000-URL frontier is full at the end and 600,304 - 440,000 - 80,000 = 80,304
    overflowed. 70% were crawled before, 90% of those unchanged: 440,000 x 70% x 90% =
    277,200 pages x 100 KB = 27.7 GB wasted, not the 600,304 x 63% = 378,192 pages and
    37.8 GB counted from the URLs offered. `gym grade --json` prints that arithmetic."""
    result = CliRunner().invoke(
        app,
        [
            "grade",
            str(LEVERS / "recrawl-everything.yaml"),
            "--scenario",
            str(LEVER_SCENARIOS / "freshness.yaml"),
            "--json",
        ],
    )
    assert result.exit_code == 1, result.output  # the SLOs fail
    out = json.loads(result.output)
    g = next(g for g in out["rubric"] if g["item"] == "recrawl policy")
    assert g["credit"] == "none"
    assert g["measured"] == (
        "every page seen before fetched again: 440,000 URLs handed out to the fetchers (of "
        "600,304 offered) x 70% seen before x 90% unchanged = about 277,200 pages x 100 KB "
        "= 27.7 GB of bandwidth wasted (and the 10% changed, about 30,800 pages, refreshed)"
    )


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_by_change_rate_the_links_skipped_as_seen_are_not_recrawl_credit(engine: str) -> None:
    """With the link-discovery loop the seen set tests the links as well as the seeds,
    and skips links to known pages whatever the recrawl policy: only the seeds' skips are
    the change-rate policy's. 1,000 seeds/s for 10 s, 60% crawled before, 20% of those
    changed: the seen set skips 48% of them, about 4,800 (the old rubric credited every
    seen skip, about 9,700 here). It lets 520 seeds/s in; each fetched page yields one
    link, half of them to known pages, so the crawl runs at 520 / (1 - 0.5) = 1,040
    pages/s, half of them seeds, and 12% of the seeds, 1,200 in 10 s, are changed pages
    fetched again. The seeds' skips are the seen set's less the links' expected half: sd
    sqrt(10,000 x 0.48 x 0.52 + 10,000 x 0.25) = 70, held to 4 of them; the loop takes
    its first fetches (250 ms) to start, so the pages counts are held to 5%."""
    sc = Scenario.model_validate(
        {
            "duration_s": 10,
            "base_rps": 1_000,
            "arrivals": "deterministic",
            "web": {"links_per_page": 1, "links_seen_fraction": 0.5},
            "dedup": {"seen_url_fraction": 0.6, "changed_fraction": 0.2, "page_kb": 100},
        }
    )
    d = Design.model_validate(
        {
            "frontier": {"drain_rps": 30_000, "buffer": 80_000},
            "fetchers": {"replicas": 4, "rps_per_replica": 4_000},
            "cache": {"hit_ratio": 0.92},
            "page_store": {"rps": 25_000},
            "discovery": {"shards": 4},
        }
    )
    r = gym.simulate(d, sc, engine=engine)
    record = r.metrics.record
    all_seen = r.metrics.skipped_by_cause["seen_url"]
    assert all_seen == pytest.approx(4_800 + 0.5 * record.links_found(), rel=0.05)
    g = {g.item: g for g in rubric.grade(r)}["recrawl policy"]
    shown = re.search(r"([\d,]+) unchanged ones skipped", g.measured)
    assert shown is not None and abs(int(shown[1].replace(",", "")) - 4_800) < 4 * 70
    assert re.search(r"x 5\d\.\d% seeds \(the rest links found on pages\)", g.measured)
    counts = rubric.recrawl_counts(record, d, sc)
    assert counts is not None
    assert abs(counts.skipped - 4_800) < 4 * 70
    assert counts.seed_share == pytest.approx(0.5, abs=0.03)
    assert counts.changed == pytest.approx(1_200, rel=0.05)


LEVERS = ROOT / "designs" / "levers"
LEVER_SCENARIOS = ROOT / "scenarios" / "levers"


@pytest.mark.parametrize(
    ("design", "scenario", "verdict", "item", "credit"),
    [
        # A FIFO passes the SLOs the politeness-bound design fails, impolitely.
        (LEVERS / "fifo-frontier.yaml", CHAOS, "pass", "frontier structure", "partial"),
        (DESIGNS / "politeness-bound.yaml", CHAOS, "fail", "frontier structure", "full"),
        # Rows of a relational table: ten units for what one object-storage unit writes.
        (LEVERS / "relational-store.yaml", CHAOS, "fail", "storage split", "none"),
        # Recrawling everything overloads the fetchers; by change rate it passes.
        (
            LEVERS / "recrawl-everything.yaml",
            LEVER_SCENARIOS / "freshness.yaml",
            "fail",
            "recrawl policy",
            "none",
        ),
        (
            DESIGNS / "reference.yaml",
            LEVER_SCENARIOS / "freshness.yaml",
            "pass",
            "recrawl policy",
            "full",
        ),
        # URL variants: the canonicalizing design passes, the reference does not.
        (
            LEVERS / "canonicalized.yaml",
            LEVER_SCENARIOS / "url-variants.yaml",
            "pass",
            "dedup layers",
            "partial",
        ),
        (
            DESIGNS / "reference.yaml",
            LEVER_SCENARIOS / "url-variants.yaml",
            "fail",
            "dedup layers",
            "partial",
        ),
    ],
)
def test_the_lever_teaching_designs_teach_their_lesson(
    design: Any, scenario: Any, verdict: str, item: str, credit: str
) -> None:
    """Each teaching design and scenario shipped for a lever gives the verdict its file's
    lesson says, and the rubric credits the lever as the lesson says."""
    r = gym.simulate(design, scenario)
    assert r.verdict == verdict
    assert {g.item: g for g in rubric.grade(r)}[item].credit == credit


def test_the_spare_fetcher_and_the_dns_cache_are_credited_on_what_happened(tmp_path: Any) -> None:
    """A crash of every replica is no spare fetcher, whatever the saturation figures say
    (there is no capacity to divide by); a crash in the run's last tick is graded (and
    one at its very end is untested), not a crash of the grader; a design without a DNS
    cache gets no credit for caching even when its resolver is large enough."""
    sc = tmp_path / "s.yaml"
    sc.write_text(
        "duration_s: 20\nbase_rps: 6000\n"
        "faults: [{kind: crash, at_s: 5, for_s: 1, target: fetchers, replicas: 4}]\n"
    )
    g = {x.item: x for x in rubric.grade(gym.simulate(DESIGNS / "reference.yaml", sc))}
    assert g["N+1 fetchers"].credit == "none"
    assert "no fetcher capacity at all" in g["N+1 fetchers"].measured
    # 19.995 s snaps to the run's end (tick 2,000): no time with a replica down.
    for at, credit in (("19.99", "full"), ("19.995", "untested")):
        sc.write_text(
            "duration_s: 20\nbase_rps: 6000\n"
            f"faults: [{{kind: crash, at_s: {at}, target: fetchers, replicas: 1}}]\n"
        )
        g = {x.item: x for x in rubric.grade(gym.simulate(DESIGNS / "reference.yaml", sc))}
        assert g["N+1 fetchers"].credit == credit, at
    recrawl = ROOT / "scenarios" / "recrawl.yaml"
    g = {x.item: x for x in rubric.grade(gym.simulate(DESIGNS / "content-dedup.yaml", recrawl))}
    assert g["DNS caching"].credit == "none"


def test_a_fifo_pays_for_no_back_queues() -> None:
    """A global FIFO has no back queues: 100,000 of them cost 5 frontier units in a
    two-stage frontier (20,000 each) and nothing extra in a FIFO."""
    from gym.system.costing import frontier_units

    catalog = gym.load_scenario(CHAOS).catalog
    two = _design(back_queues=100_000)
    fifo = _design(back_queues=100_000, structure="global_fifo")
    assert (frontier_units(two, catalog), frontier_units(fifo, catalog)) == (5, 1)


def test_the_optimizer_keeps_a_relational_base_and_prices_it() -> None:
    """A base with a relational page store: each unit the search buys is a relational
    unit (2,500 page writes/s), so candidates are priced right and one is found (before,
    every candidate was skipped as mispriced)."""
    from gym.explore import optimize

    base = gym.load_design(LEVERS / "relational-store.yaml")
    opt = optimize.search(gym.load_scenario(CHAOS), base=base, runs=1)
    assert opt.best is not None and opt.skipped == 0
    store = opt.best.design.page_store
    assert store.layout == "relational"
    assert store.rps == opt.best.units["page_store"] * 2_500


def test_the_javascript_rendering_lesson() -> None:
    """scenarios/levers/js-heavy.yaml: a quarter of the pages at 5x the CPU halve a
    replica, 4,000 / (0.75 + 0.25 x 5) = 2,000 pages/s. The reference's four replicas hold
    8,000/s against the surge's 12,000: saturation 12,000 / 8,000 = 1.5 and more while the
    frontier drains its backlog. designs/levers/js-rendering.yaml's seven hold 14,000/s:
    12,000 / 14,000 = 0.86, under the 0.9 SLO (Poisson arrivals add about 1%)."""
    sc = DESIGNS.parent / "scenarios" / "levers" / "js-heavy.yaml"
    reference = gym.simulate(DESIGNS / "reference.yaml", sc)
    assert reference.verdict == "fail"
    fetchers = reference.metrics.components["fetchers"].peak.value
    assert fetchers is not None and fetchers >= 1.5
    sized = gym.simulate(DESIGNS / "levers" / "js-rendering.yaml", sc)
    assert sized.verdict == "pass"
    peak = sized.metrics.components["fetchers"].peak.value
    assert peak == pytest.approx(12_000 / 14_000, abs=0.02)


TRAPS = [
    # (design, scenario, the trap named, the figure it carries)
    ("levers/fifo-frontier.yaml", "crawler-chaos.yaml", "global FIFO", "155,053 fetches"),
    (
        "levers/relational-store.yaml",
        "crawler-chaos.yaml",
        "blobs in a relational table",
        "10,000/s",
    ),
    ("levers/recrawl-everything.yaml", "levers/freshness.yaml", "recrawl everything", "27.7 GB"),
    ("reference.yaml", "levers/url-variants.yaml", "dedup layers missing", "240,000 variants"),
]


@pytest.mark.parametrize(("design", "scenario", "trap", "figure"), TRAPS)
def test_every_run_names_the_traps_the_design_takes(
    design: str, scenario: str, trap: str, figure: str
) -> None:
    """gym run, not only gym grade, warns of the rubric's traps, PASS or FAIL, with what
    the run measured: in the text, --json and the HTML report."""
    from gym.report import html

    args = ["run", str(DESIGNS / design), "--scenario", str(ROOT / "scenarios" / scenario)]
    res = CliRunner().invoke(app, [*args, "--no-fix"])
    text = res.stdout.split("URLs:")[0]  # after the verdict, before the totals
    assert "the design takes the rubric's traps" in text
    assert trap in text and figure in text, text
    data = json.loads(CliRunner().invoke(app, [*args, "--no-fix", "--json"]).stdout)
    assert any(trap in t["trap"] and figure in t["measured"] for t in data["traps"])
    result = gym.simulate(DESIGNS / design, ROOT / "scenarios" / scenario)
    assert trap in html.render(result)
    # --runs too: the first seed's run (seed 0, the run above) tells them, text and --json
    many = CliRunner().invoke(app, [*args, "--runs", "3", "--confidence", "0.3", "--workers", "1"])
    assert "rubric's traps (gym grade; seed 0's run)" in many.stdout
    assert trap in many.stdout and figure in many.stdout, many.stdout
    data = json.loads(
        CliRunner().invoke(app, [*args, "--runs", "3", "--confidence", "0.3", "--json"]).stdout
    )
    assert data["traps"] == [t.to_dict() for t in result.traps]


def test_no_trap_no_warning_and_untested_layers_are_not_traps() -> None:
    """The reference takes no trap; missing dedup layers the scenario does not test (no
    variants, no duplicate bodies) are not one."""
    assert gym.simulate(DESIGNS / "reference.yaml", CHAOS).traps == []
    freshness = ROOT / "scenarios" / "levers" / "freshness.yaml"
    traps = gym.simulate(DESIGNS / "levers" / "recrawl-everything.yaml", freshness).traps
    assert [t.item for t in traps] == ["recrawl policy"]
