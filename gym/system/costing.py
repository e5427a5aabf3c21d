"""Units and cost: what a design costs under a scenario's catalog, and what it may not ask for."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gym.core.errors import Problem
from gym.models import CacheConfig, Catalog, Design, FetchersConfig
from gym.system.graph import GraphDesign
from gym.system.units import MAX_CACHE_UNITS, cache_units, units_for

#: Component names, in pipeline order, as they appear in results.
COMPONENTS: tuple[str, ...] = (
    "seen_set",
    "frontier",
    "fetchers",
    "cache",
    "resolver",
    "async_writer",
    "page_store",
)


def units(design: Design, catalog: Catalog) -> dict[str, int]:
    """Provisioned units per component (resolver: external, 0). Assumes ``check`` passed."""
    per = {
        "frontier": frontier_units(design, catalog),
        "fetchers": design.fetchers.replicas,
        "cache": cache_units(design.cache.hit_ratio, catalog) or MAX_CACHE_UNITS,
        "resolver": 0,
        "page_store": page_store_units(design, catalog),
    }
    if design.async_writer is not None:
        per["async_writer"] = units_for(design.async_writer.buffer, catalog.async_writer.buffer)
    if design.discovery is not None:
        per["seen_set"] = design.discovery.shards  # a unit per shard
    return {name: per[name] for name in COMPONENTS if name in per}


def units_of(design: Design | GraphDesign, catalog: Catalog) -> dict[str, int]:
    """Provisioned units per component of a crawler design, or per node of a graph."""
    if isinstance(design, Design):
        return units(design, catalog)
    from gym.system.graph import topology
    from gym.system.kinds import graph_units

    return graph_units(topology(design), catalog)


def frontier_units(design: Design, catalog: Catalog) -> int:
    """max(ceil(drain / 30,000), ceil(buffer / 100,000), ceil(back queues / 20,000)); the
    back queues count only when the design sets them (else the units' own are used) and
    its frontier has them (a global FIFO has none)."""
    f, unit = design.frontier, catalog.frontier
    needs = [units_for(f.drain_rps, unit.drain_rps), units_for(f.buffer, unit.buffer)]
    if f.back_queues is not None and f.structure == "two_stage":
        needs.append(units_for(f.back_queues, unit.back_queues))
    return max(needs)


def page_store_units(design: Design, catalog: Catalog) -> int:
    """Units of the page store: object-storage units, or relational-database units (each
    takes fewer multi-KB page writes) for a relational layout."""
    per = catalog.page_store
    if design.page_store.layout == "relational":
        return units_for(design.page_store.rps, per.relational_rps)
    return units_for(design.page_store.rps, per.rps)


def check(design: Design, catalog: Catalog, file: str | None = None) -> list[Problem]:
    """What the design asks for that no number of catalog units can give."""
    return check_sections({name: getattr(design, name) for name in SECTION_CHECKS}, catalog, file)


def check_sections(
    sections: Mapping[str, Any], catalog: Catalog, file: str | None
) -> list[Problem]:
    """:func:`check` of the sections given, by name: those of a design that does not
    validate as a whole but whose sections are valid on their own (the problems of both
    kinds in one round); a check whose section is not given is skipped."""
    return [
        problem
        for name, section_check in SECTION_CHECKS.items()
        if name in sections
        for problem in section_check(sections[name], catalog, file)
    ]


def _fetchers_check(fetchers: FetchersConfig, catalog: Catalog, file: str | None) -> list[Problem]:
    limit = catalog.fetchers.max_rps_per_replica
    if fetchers.rps_per_replica <= limit:
        return []
    return [
        Problem(
            file,
            "fetchers.rps_per_replica",
            f"{fetchers.rps_per_replica:g} is more than one replica can give "
            f"(the catalog allows at most {limit:g}/s per replica); add replicas instead",
        )
    ]


def _cache_check(cache: CacheConfig, catalog: Catalog, file: str | None) -> list[Problem]:
    if cache_units(cache.hit_ratio, catalog) is not None:
        return []
    return [
        Problem(
            file,
            "cache.hit_ratio",
            f"{cache.hit_ratio:g} cannot be reached: the first cache unit reaches "
            f"{catalog.cache.base_hit_ratio:g} and each further unit halves the miss ratio, "
            "which never reaches 0",
        )
    ]


#: The catalog's checks of a crawler design, by the one section each reads.
SECTION_CHECKS: dict[str, Callable[[Any, Catalog, str | None], list[Problem]]] = {
    "fetchers": _fetchers_check,
    "cache": _cache_check,
}
