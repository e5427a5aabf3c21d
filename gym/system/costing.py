"""Units and cost: what a design costs under a scenario's catalog, and what it may not ask for."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gym.core.errors import Problem
from gym.models import Catalog, Design, FetchersConfig, PageStoreConfig, Scenario
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


@dataclass(frozen=True)
class Politeness:
    """How fast the frontier may hand out URLs, host by host."""

    back_queues: int  # what the design runs (set, or the units' own)
    active_hosts: int  # min(back queues, hosts in the web)
    crawl_delay_s: float
    rate: float  # active hosts / crawl delay, URLs per second
    drain_rps: float

    @property
    def bound(self) -> bool:
        """True when politeness, not the drain rate, limits the frontier."""
        return self.rate < self.drain_rps

    @property
    def limit_rps(self) -> float:
        return min(self.rate, self.drain_rps)


def politeness(design: Design, scenario: Scenario) -> Politeness:
    """The frontier's hand-out limit: min(drain_rps, active hosts / crawl delay) for a
    two-stage frontier; a global FIFO keeps no host apart, so only its drain limits it."""
    queues = design.frontier.back_queues
    if queues is None:
        queues = scenario.catalog.frontier.back_queues * frontier_units(design, scenario.catalog)
    active = min(queues, scenario.web.hosts)
    rate = active / scenario.web.crawl_delay_s
    if design.frontier.structure == "global_fifo":
        rate = math.inf
    return Politeness(queues, active, scenario.web.crawl_delay_s, rate, design.frontier.drain_rps)


def fetchers_in_effect(design: Design, scenario: Scenario) -> FetchersConfig:
    """The fetcher fleet as the scenario's web makes it: pages that need JavaScript
    rendering cost ``js_render_cost`` times the CPU of a plain page, so a replica fetches
    rps_per_replica / (1 - share + share x cost) pages a second (the design's own figure
    when no page needs rendering)."""
    web = scenario.web
    cost = 1.0 - web.js_render_share + web.js_render_share * web.js_render_cost
    if cost == 1.0:
        return design.fetchers
    rate = design.fetchers.rps_per_replica / cost
    return design.fetchers.model_copy(update={"rps_per_replica": rate})


def page_store_units(design: Design, catalog: Catalog) -> int:
    """Units of the page store: object-storage units, or relational-database units (each
    takes fewer multi-KB page writes) for a relational layout."""
    per = catalog.page_store
    if design.page_store.layout == "relational":
        return units_for(design.page_store.rps, per.relational_rps)
    return units_for(design.page_store.rps, per.rps)


def page_store_in_effect(design: Design, catalog: Catalog) -> PageStoreConfig:
    """The page store as it runs: a relational table takes at most the catalog's ceiling
    of page writes a second, whatever the design asks (a split layout takes its rps)."""
    store = design.page_store
    ceiling = catalog.page_store.relational_max_rps
    if store.layout == "relational" and store.rps > ceiling:
        return store.model_copy(update={"rps": ceiling})
    return store


def busiest_shard_share(design: Design, scenario: Scenario) -> float:
    """Share of the seen set's lookups its busiest shard takes: the hot key's, all on one
    shard, plus an even part of the rest (1 / shards with no hot key)."""
    assert design.discovery is not None
    hot = scenario.web.hot_key_share
    return hot + (1.0 - hot) / design.discovery.shards


def seen_set_capacity_rps(design: Design, scenario: Scenario) -> float:
    """Lookups/s the seen set answers before its busiest shard is full: shard_rps / the
    busiest shard's share (shards x shard_rps with no hot key; at most shard_rps / the hot
    key's share however many shards)."""
    return scenario.catalog.seen_set.shard_rps / busiest_shard_share(design, scenario)


def cache_capacity_rps(design: Design, catalog: Catalog) -> float:
    """Lookups/s the design's cache units serve."""
    return units(design, catalog)["cache"] * catalog.cache.lookups_rps


def check(design: Design, catalog: Catalog, file: str | None = None) -> list[Problem]:
    """What the design asks for that no number of catalog units can give."""
    problems: list[Problem] = []
    limit = catalog.fetchers.max_rps_per_replica
    if design.fetchers.rps_per_replica > limit:
        problems.append(
            Problem(
                file,
                "fetchers.rps_per_replica",
                f"{design.fetchers.rps_per_replica:g} is more than one replica can give "
                f"(the catalog allows at most {limit:g}/s per replica); add replicas instead",
            )
        )
    if cache_units(design.cache.hit_ratio, catalog) is None:
        problems.append(
            Problem(
                file,
                "cache.hit_ratio",
                f"{design.cache.hit_ratio:g} cannot be reached: the first cache unit reaches "
                f"{catalog.cache.base_hit_ratio:g} and each further unit halves the miss ratio, "
                "which never reaches 0",
            )
        )
    return problems
