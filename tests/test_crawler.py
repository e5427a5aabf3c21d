"""What makes it a crawler gym: estimates, politeness, dedup and the teaching designs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

import gym
from gym.analysis.estimate import Inputs, estimate
from gym.cli import app
from gym.system.costing import frontier_units
from gym.system.crawler import politeness
from tests.conftest import CHAOS, REFERENCE, ROOT, design, scenario

runner = CliRunner()
DESIGNS = ROOT / "designs"
RECRAWL = ROOT / "scenarios" / "recrawl.yaml"


def test_estimate_defaults_match_design_md() -> None:
    """docs/specification.md section 1: 518.4 million pages/day, 4.8 Gbps, 51.84 TB/day raw (10.37
    compressed at 5:1), 9.6 bits and 1.2 GB of Bloom filter per billion URLs at 1%,
    480 fresh resolutions/s at hit ratio 0.92, 6,000 hosts in flight at 1 s per host."""
    f = {x.key: x.value for x in estimate(Inputs())}
    assert f["pages_per_day"] == 518_400_000
    assert f["bandwidth_base_Gbps"] == pytest.approx(4.8)
    assert f["bandwidth_peak_Gbps"] == pytest.approx(9.6)
    assert f["storage_raw_TB_per_day"] == pytest.approx(51.84)
    assert f["storage_compressed_TB_per_day"] == pytest.approx(10.368)
    assert f["bloom_bits_per_url"] == pytest.approx(-math.log(0.01) / math.log(2) ** 2)
    assert f["bloom_bits_per_url"] == pytest.approx(9.585, abs=1e-3)
    assert f["bloom_hashes"] == 7
    assert f["bloom_memory_GB"] == pytest.approx(1.198, abs=1e-3)
    assert f["exact_set_memory_GB"] == 8.0
    assert f["fresh_dns_per_s"] == pytest.approx(480)
    assert f["hosts_in_flight"] == 6_000 and f["hosts_in_flight_peak"] == 12_000


def test_estimate_cli_json_has_formulas() -> None:
    """gym estimate --json: every figure with its formula; a design sets the hit ratio."""
    res = runner.invoke(app, ["estimate", str(DESIGNS / "starter.yaml"), "--json"])
    assert res.exit_code == 0, res.output
    figs = {f["key"]: f for f in json.loads(res.stdout)["figures"]}
    assert figs["fresh_dns_per_s"]["value"] == pytest.approx(2_400)  # hit ratio 0.6
    assert all(f["formula"] for f in figs.values())


def test_politeness_limits_the_frontier() -> None:
    """The frontier hands out min(drain, min(back queues, hosts) / crawl delay)."""
    sc = scenario(web={"hosts": 1_000_000, "crawl_delay_s": 2.0})
    d = design(frontier={"drain_rps": 30_000, "buffer": 100_000, "back_queues": 8_000})
    p = politeness(d, sc)
    assert (p.active_hosts, p.rate, p.limit_rps, p.bound) == (8_000, 4_000, 4_000, True)
    m = gym.simulate(d, sc, seed=0).metrics
    assert m.components["frontier"].capacity[0] == 4_000
    few_hosts = scenario(web={"hosts": 5_000, "crawl_delay_s": 1.0})
    assert politeness(design(), few_hosts).rate == 5_000  # capped by the hosts there are


def test_back_queues_cost_frontier_units() -> None:
    """Units = max(ceil(drain/30k), ceil(buffer/100k), ceil(back queues/20k)); the default
    back queues are 20,000 per unit the design already pays for."""
    cat = gym.load_scenario(CHAOS).catalog
    assert (
        frontier_units(
            design(frontier={"drain_rps": 30_000, "buffer": 80_000, "back_queues": 50_000}), cat
        )
        == 3
    )
    sc = gym.load_scenario(CHAOS)
    assert politeness(gym.load_design(REFERENCE), sc).back_queues == 20_000


def test_politeness_bound_design_fails_for_that_reason() -> None:
    """10,000 back queues at 1 s: 10,000/s < the 12,000/s surge; the reference still passes."""
    sc = gym.load_scenario(CHAOS)
    r = gym.simulate(DESIGNS / "politeness-bound.yaml", sc, seed=0)
    assert r.verdict == "fail"
    assert r.metrics.peak.component == "frontier"
    sat = next(e for e in r.explanations if e.slo == "peak_saturation")
    assert any("politeness-bound" in line for line in sat.details)
    assert gym.simulate(REFERENCE, sc, seed=0).verdict == "pass"


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_bloom_filter_skips_a_fraction_of_new_urls(engine: str) -> None:
    """A Bloom filter at p = 0.1 skips about 10% of new URLs (coverage lost); they are
    neither served nor failed, and conservation counts them as skipped."""
    d = design(dedup={"seen_set": "bloom", "fp_rate": 0.1})
    sc = scenario(arrivals="poisson", duration_s=5)
    r = gym.simulate(d, sc, seed=1, engine=engine)
    m = r.metrics
    lost = m.skipped_by_cause["bloom_false_positive"]
    assert abs(lost - 0.1 * m.offered) < 5 * math.sqrt(m.offered * 0.1 * 0.9)
    assert m.offered == m.served + m.failed + m.skipped + m.in_flight_end
    assert r.to_dict()["dedup"]["coverage_lost"] == lost


def test_seen_urls_are_skipped_before_the_frontier() -> None:
    """With 30% of URLs seen before, the frontier's demand is the other 70%."""
    sc = scenario(arrivals="poisson", duration_s=5, dedup={"seen_url_fraction": 0.3})
    m = gym.simulate(design(), sc, seed=2).metrics
    seen = m.skipped_by_cause["seen_url"]
    assert abs(seen - 0.3 * m.offered) < 5 * math.sqrt(m.offered * 0.3 * 0.7)
    f = m.components["frontier"]
    assert (
        f.demand
        == m.offered_w
        - np.add.reduceat(
            m.record.components["frontier"].skipped["seen_url"], np.arange(0, 500, 100)
        )
    ).all()


def test_content_hashing_saves_store_writes() -> None:
    """40% duplicate bodies and content hashing on: about 40% of the writes are saved;
    with it off, none."""
    on = gym.simulate(DESIGNS / "content-dedup.yaml", RECRAWL, seed=0)
    saved = on.dedup()["writes_saved"]
    misses = int(on.metrics.record.components["resolver"].processed.sum())
    assert abs(saved - 0.4 * misses) < 5 * math.sqrt(misses * 0.4 * 0.6)
    assert on.dedup()["bytes_saved_GB"] == pytest.approx(saved * 100e3 / 1e9)
    off = gym.simulate(
        gym.load_design(DESIGNS / "content-dedup.yaml", ["dedup.content_hash=false"]),
        RECRAWL,
        seed=0,
    )
    assert off.dedup()["writes_saved"] == 0


def test_content_dedup_design_teaches_its_lesson() -> None:
    """On the re-crawl, content hashing lets one store unit do (PASS at 11 units); without
    it the store saturates (FAIL), and a second store unit busts the cost SLO."""
    on = gym.simulate(DESIGNS / "content-dedup.yaml", RECRAWL, seed=0)
    assert on.verdict == "pass" and on.metrics.cost_units == 11
    off = gym.simulate(
        gym.load_design(DESIGNS / "content-dedup.yaml", ["dedup.content_hash=false"]),
        RECRAWL,
        seed=0,
    )
    assert off.verdict == "fail" and off.metrics.peak.component == "page_store"
    bigger = gym.simulate(
        gym.load_design(
            DESIGNS / "content-dedup.yaml", ["dedup.content_hash=false", "page_store.rps=50000"]
        ),
        RECRAWL,
        seed=0,
    )
    failed = {c.name for c in bigger.checks if not c.passed}
    assert failed == {"cost_units"}


def test_writer_lossless_design_survives_the_stall() -> None:
    """The async writer holds the stall's writes: nothing fails at the store, the flush
    stays below the 85% ceiling, and the design passes within the cost SLO."""
    r = gym.simulate(DESIGNS / "writer-lossless.yaml", CHAOS, seed=0)
    assert r.verdict == "pass"
    assert r.metrics.failed_by_cause["store_unavailable"] == 0
    assert r.metrics.failed_by_cause["writer_overflow"] == 0
    store = r.metrics.components["page_store"]
    assert np.nanmax(store.saturation) <= 0.85
    writer = r.metrics.record.components["async_writer"]
    assert writer.extra["held_in"].sum() > 4_000  # the stall's writes, held
    assert r.metrics.record.in_flight_end["async_writer"] == 0  # all flushed by the end


@pytest.mark.parametrize(
    ("name", "scenario_path"),
    [("writer-lossless", CHAOS), ("politeness-bound", CHAOS), ("content-dedup", RECRAWL)],
)
def test_teaching_designs_agree_across_engines(name: str, scenario_path: object) -> None:
    """The request engine tells the same story (availability within 0.5 points)."""
    path = DESIGNS / f"{name}.yaml"
    flow = gym.simulate(path, scenario_path, seed=0)
    req = gym.simulate(path, scenario_path, seed=0, engine="request")
    assert abs(flow.metrics.availability - req.metrics.availability) <= 0.005
    assert flow.verdict == req.verdict
