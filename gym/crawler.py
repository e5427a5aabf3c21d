"""The crawler as a topology: the built-in graph today's design files describe.

client -> frontier -> fetchers -> cache -> resolver -> [async_writer] -> page_store

A crawler design names its components by role (``frontier``, ``fetchers``, ...); this
module maps those keys, with what the scenario and the catalog add (the politeness limit,
the seen-URL and duplicate-body shares, the cache's lookup capacity, the external
resolver), onto nodes of the generic kinds. The node names and cause names are the ones
results have always carried.
"""

from __future__ import annotations

import itertools

from gym.costing import (
    cache_capacity_rps,
    fetchers_in_effect,
    page_store_in_effect,
    politeness,
)
from gym.kinds.cache import CacheParams
from gym.kinds.queue import QueueParams
from gym.kinds.service import ServiceParams
from gym.models import Design, Scenario
from gym.topology import Edge, Node, Topology


def seen_skipped(design: Design, scenario: Scenario) -> float:
    """The share of offered URLs the seen set skips: those crawled before, less the ones a
    recrawl fetches again (every one with recrawl: full; the changed ones by change rate)."""
    world = scenario.dedup
    if design.dedup.recrawl == "full":
        return 0.0
    return world.seen_url_fraction * (1.0 - world.changed_fraction)


def variants(design: Design, scenario: Scenario) -> float:
    """The share of new URLs the frontier skips as variants of known ones: the scenario's
    variants when the design canonicalizes URLs, else none (they are crawled again)."""
    return scenario.dedup.variant_fraction if design.dedup.canonicalize else 0.0


def topology(design: Design, scenario: Scenario) -> Topology:
    """The crawler's graph for ``design`` under ``scenario``."""
    polite = politeness(design, scenario)
    bloom = design.dedup.fp_rate if design.dedup.seen_set == "bloom" else 0.0
    duplicates = scenario.dedup.duplicate_body_fraction if design.dedup.content_hash else 0.0
    nodes = [
        Node("client", "source"),
        Node(
            "frontier",
            "queue",
            QueueParams.model_construct(
                drain_rps=polite.limit_rps,
                buffer=design.frontier.buffer,
                seen_fraction=seen_skipped(design, scenario),
                false_positive_rate=bloom,
                variant_fraction=variants(design, scenario),
            ),
        ),
        Node("fetchers", "fleet", fetchers_in_effect(design, scenario), prefix=""),
        Node(
            "cache",
            "cache",
            CacheParams.model_construct(
                hit_ratio=design.cache.hit_ratio,
                rps=cache_capacity_rps(design, scenario.catalog),
                service=design.cache.service,
            ),
        ),
        Node(
            "resolver",
            "service",
            ServiceParams.model_construct(
                rps=scenario.resolver.rps,
                service=scenario.resolver.service,
                finish_share=duplicates,
            ),
        ),
    ]
    if design.async_writer is not None:
        nodes.append(Node("async_writer", "write_buffer", design.async_writer, prefix="writer"))
    store = page_store_in_effect(design, scenario.catalog)
    nodes.append(Node("page_store", "store", store, prefix="store"))
    edges = tuple(Edge(a.name, b.name) for a, b in itertools.pairwise(nodes))
    return Topology(tuple(nodes), edges)
