"""Unit counts from the catalog (docs/specification.md section 5), by hand."""

from __future__ import annotations

import pytest

from gym.models import Catalog
from gym.system import costing
from gym.system.units import cache_units
from tests.conftest import design

CATALOG = Catalog()


@pytest.mark.parametrize(
    ("drain", "buffer", "units"),
    [
        (30_000, 80_000, 1),  # the reference: both within one unit
        (30_001, 80_000, 2),  # drain needs ceil(30,001/30,000) = 2
        (8_000, 250_000, 3),  # buffer needs ceil(250,000/100,000) = 3
        (90_000, 100_000, 3),
    ],
)
def test_frontier_units_are_the_larger_of_drain_and_buffer(
    drain: int, buffer: int, units: int
) -> None:
    """units = max(ceil(drain / 30,000), ceil(buffer / 100,000))."""
    d = design(frontier={"drain_rps": drain, "buffer": buffer})
    assert costing.units(d, CATALOG)["frontier"] == units


@pytest.mark.parametrize(
    ("hit_ratio", "units"),
    [(0.0, 1), (0.6, 1), (0.92, 1), (0.93, 2), (0.96, 2), (0.97, 3), (0.98, 3), (0.99, 4)],
)
def test_cache_units_halve_the_miss_ratio(hit_ratio: float, units: int) -> None:
    """One unit reaches 0.92; each further unit halves the misses: 0.96, 0.98, 0.99."""
    assert cache_units(hit_ratio, CATALOG) == units


def test_hit_ratio_one_is_unreachable() -> None:
    """Halving the misses never reaches zero: hit ratio 1 is an error, not 60 units."""
    assert cache_units(1.0, CATALOG) is None
    problems = costing.check(design(cache={"hit_ratio": 1.0}), CATALOG, "d.yaml")
    assert [p.field for p in problems] == ["cache.hit_ratio"]


def test_reference_and_starter_costs() -> None:
    """Reference: 1 + 4 + 1 + 1 = 7 units; starter: 1 + 3 + 1 + 1 = 6.

    The unit rules of docs/specification.md section 5.
    """
    reference = design()
    starter = design(
        frontier={"drain_rps": 8_000, "buffer": 20_000},
        fetchers={"replicas": 3, "rps_per_replica": 2_000},
        cache={"hit_ratio": 0.6},
    )
    assert costing.units(reference, CATALOG) == {
        "frontier": 1,
        "fetchers": 4,
        "cache": 1,
        "resolver": 0,
        "page_store": 1,
    }
    assert sum(costing.units(starter, CATALOG).values()) == 6


def test_store_and_writer_units() -> None:
    """Store: ceil(60,000 / 25,000) = 3; writer: ceil(150,000 / 100,000) = 2."""
    d = design(page_store={"rps": 60_000}, async_writer={"buffer": 150_000})
    u = costing.units(d, CATALOG)
    assert (u["page_store"], u["async_writer"]) == (3, 2)


def test_replica_above_the_catalog_limit_is_refused() -> None:
    """A replica at 5,000/s asks for more than one unit gives (4,000/s)."""
    d = design(fetchers={"replicas": 2, "rps_per_replica": 5_000})
    problems = costing.check(d, CATALOG, "d.yaml")
    assert len(problems) == 1
    assert problems[0].field == "fetchers.rps_per_replica"
    assert "5000" in problems[0].message and "4000" in problems[0].message


def test_a_scenario_can_change_prices() -> None:
    """With 10,000 URLs/s per frontier unit, a 30,000/s drain costs 3 units."""
    cat = Catalog.model_validate({"frontier": {"drain_rps": 10_000, "buffer": 100_000}})
    assert costing.units(design(), cat)["frontier"] == 3


def test_one_slot_station_is_allowed() -> None:
    """The catalog does not stop a tiny station: 1 replica at 4/s is valid."""
    d = design(fetchers={"replicas": 1, "rps_per_replica": 4})
    assert costing.check(d, CATALOG) == []
