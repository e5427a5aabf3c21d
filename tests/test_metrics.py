"""Saturation, throughput and availability as docs/specification.md section 3 defines them."""

from __future__ import annotations

import numpy as np
import pytest

import gym
from tests.conftest import design, scenario


def test_saturation_follows_the_demand_chain() -> None:
    """2,000/s offered; frontier drain 1,500/s; fetchers 1 x 1,000/s; hit ratio 0.5.
    frontier 2,000/1,500; fetchers min(2,000, 1,500)/1,000; cache min(1,500, 1,000)/100,000;
    resolver 1,000 x 0.5 / 5,000; store min(500, 5,000) / 25,000."""
    d = design(
        frontier={"drain_rps": 1_500, "buffer": 1_000_000},
        fetchers={"replicas": 1, "rps_per_replica": 1_000},
        cache={"hit_ratio": 0.5},
    )
    m = gym.simulate(d, scenario(base_rps=2_000), seed=0).metrics
    sat = {name: cw.saturation[3] for name, cw in m.components.items()}
    assert sat["frontier"] == 2_000 / 1_500
    assert sat["fetchers"] == 1_500 / 1_000
    assert sat["cache"] == 1_000 / 100_000
    assert sat["resolver"] == 1_000 * 0.5 / 5_000
    assert sat["page_store"] == 500 / 25_000
    peak, component, at = m.peak
    assert (peak, component, at) == (1.5, "fetchers", 0.0)


def test_stalled_store_is_an_outage_not_a_saturation() -> None:
    """Windows with capacity 0 report an outage and are left out of peak saturation."""
    sc = scenario(faults=[{"kind": "stall", "at_s": 2, "for_s": 3, "target": "page_store"}])
    m = gym.simulate(design(), sc, seed=0).metrics
    store = m.components["page_store"]
    assert store.outage.tolist() == [False] * 2 + [True] * 3 + [False] * 5
    assert np.isnan(store.saturation[2:5]).all()
    assert m.outages == [("page_store", 2.0, 5.0)]


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_a_store_slower_than_a_url_a_window_is_not_down(engine: str) -> None:
    """A page store of 0.25 writes/s takes one whole URL every 4 s, so three windows in four
    have no whole URL of capacity; it is not stalled in them. Saturation is demand over
    rate x time: 1,000 URLs/s x (1 - hit 0.9) over 0.25 = 400 in every window, no outage."""
    d = design(
        cache={"hit_ratio": 0.9},
        page_store={"rps": 0.25, "service": {"mean_ms": 4_000}},
        frontier={"drain_rps": 100_000, "buffer": 1_000_000},
    )
    sc = scenario(arrivals="deterministic")
    m = gym.simulate(d, sc, seed=0, engine=engine).metrics
    store = m.components["page_store"]
    assert (store.capacity == 0).sum() >= 6  # whole URLs: 1 in every fourth window
    assert not store.outage.any() and m.outages == []
    assert store.rated.tolist() == [0.25] * 10
    assert store.saturation[1:] == pytest.approx(100 / 0.25)


def test_small_rates_print_with_three_figures() -> None:
    """A throughput of 1/6 per second prints as 0.167, not 0; whole numbers from 100 up."""
    from gym.analysis.scoring import format_measured

    assert format_measured("throughput_rps", 1 / 6) == "0.167"
    assert format_measured("throughput_rps", 12_345.6) == "12,346"
    assert format_measured("throughput_rps", 0.0) == "0"


def test_throughput_and_availability_by_hand() -> None:
    """10 s of 1,000/s, hit ratio 0 and a 2 s store stall: 2,000 of the 10,000 fail,
    250 are in flight at the end, 7,750 are served: 775/s and 7,750/9,750."""
    d = design(cache={"hit_ratio": 0.0})
    sc = scenario(faults=[{"kind": "stall", "at_s": 3, "for_s": 2, "target": "page_store"}])
    m = gym.simulate(d, sc, seed=0).metrics
    assert (m.offered, m.served, m.failed, m.in_flight_end) == (10_000, 7_750, 2_000, 250)
    assert m.throughput_rps == 775.0
    assert m.availability == 7_750 / 9_750


def test_partial_last_window() -> None:
    """A 2.5 s run has three windows, the last half a second long. The frontier's capacity is
    min(drain 30,000/s, politeness 20,000 back queues / 1 s crawl delay) = 20,000/s."""
    m = gym.simulate(design(), scenario(duration_s=2.5), seed=0).metrics
    assert m.window_s.tolist() == [0.0, 1.0, 2.0]
    assert m.offered_w.tolist() == [1_000, 1_000, 500]
    assert m.components["frontier"].capacity.tolist() == [20_000, 20_000, 10_000]


def test_windows_table_has_one_row_per_window_and_component() -> None:
    """The DataFrame is long: windows x components rows, failures split by cause."""
    r = gym.simulate(design(), scenario(), seed=0)
    df = r.windows()
    assert len(df) == 10 * 5
    assert set(df["component"]) == {"frontier", "fetchers", "cache", "resolver", "page_store"}
    assert {"demand", "capacity", "saturation", "failed_crash_loss", "backlog"} <= set(df)
    assert int(df["failed"].sum()) == r.metrics.failed
