"""Units and cost: what a design costs under a scenario's catalog, and what it may not ask for."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gym.core.errors import Problem
from gym.models import Catalog, Design
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


def _kind_check(kind: str, section: str) -> Callable[[Any, Catalog, str | None], list[Problem]]:
    """The catalog's check of a crawler section by the rule of the kind it runs as
    (:attr:`gym.system.kinds.base.Kind.allowed`), its fields named in the section."""

    def check(part: Any, catalog: Catalog, file: str | None) -> list[Problem]:
        from gym.system.kinds import kind as kind_of

        rule = kind_of(kind).allowed
        return [Problem(file, f"{section}.{field}", why) for field, why in rule(part, catalog)]

    return check


#: The catalog's checks of a crawler design, by the one section each reads.
SECTION_CHECKS: dict[str, Callable[[Any, Catalog, str | None], list[Problem]]] = {
    "fetchers": _kind_check("fleet", "fetchers"),
    "cache": _kind_check("cache", "cache"),
}
