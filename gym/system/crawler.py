"""The crawler as a topology: the built-in graph today's design files describe.

client -> frontier -> fetchers -> cache -> resolver -> [async_writer] -> page_store

A crawler design names its components by role (``frontier``, ``fetchers``, ...); this
module maps those keys, with what the scenario and the catalog add (the politeness limit,
the seen-URL and duplicate-body shares, the cache's lookup capacity, the external
resolver), onto nodes of the generic kinds. The node names and cause names are the ones
results have always carried. The parameters in effect under a scenario (the politeness
limit, the fetchers and the page store as they run, the seen set's and the cache's
capacities) are worked out here; :mod:`gym.system.costing` prices the design.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from gym.core.errors import Problem
from gym.models import Catalog, Design, FetchersConfig, PageStoreConfig, Scenario
from gym.system.costing import frontier_units, units
from gym.system.kinds.cache import CacheParams
from gym.system.kinds.fleet import FleetParams
from gym.system.kinds.links import LinksParams
from gym.system.kinds.lookup import LookupParams
from gym.system.kinds.queue import QueueParams
from gym.system.kinds.service import ServiceParams
from gym.system.topology import Edge, Node, Topology


@dataclass(frozen=True)
class CrawlerAddOns:
    """What a crawler design has beside its graph of kinds: the add-ons no kind carries
    (dedup, politeness, link discovery, the fetchers' crash policy, retries), asked for
    by the layers that report on them through :func:`gym.system.compiled.addons` (a
    graph design has none).
    The add-ons' rules live in this module; ``design`` is the crawler design they read."""

    design: Design

    @property
    def follows_links(self) -> bool:
        """True when the design runs the link-discovery loop."""
        return self.design.discovery is not None

    @property
    def on_crash(self) -> str:
        """What a crash does to the fetches in flight: ``fail`` or ``requeue``."""
        return self.design.fetchers.on_crash

    @property
    def retries(self) -> bool:
        """True when the design retries a failed lookup or write."""
        return self.design.retries is not None

    def politeness(self, scenario: Scenario) -> Politeness:
        """The frontier's hand-out limit under ``scenario`` (:func:`politeness`)."""
        return politeness(self.design, scenario)

    def unfollowed_links(self, scenario: Scenario) -> bool:
        """True when ``scenario``'s pages carry links the design does not follow."""
        carried = scenario.web.links_per_page or any(s.links_per_page for s in scenario.load)
        return not self.follows_links and bool(carried)


# The crawler's parameters in effect under a scenario (what its nodes run at).


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


#: Every failure cause of the crawler's pipeline, in its order.
CAUSES: tuple[str, ...] = (
    "frontier_overflow",
    "crash_loss",
    "cache_overload",
    "cache_unavailable",
    "resolver_overload",
    "resolver_unavailable",
    "writer_overflow",
    "store_overload",
    "store_unavailable",
)


#: The failure causes of the link-discovery loop's seen set (before the pipeline's).
SEEN_SET_CAUSES: tuple[str, ...] = ("seen_set_overload", "seen_set_unavailable")


def causes(design: Design) -> tuple[str, ...]:
    """Every failure cause the crawler can record with ``design``, in pipeline order."""
    return (SEEN_SET_CAUSES if design.discovery is not None else ()) + CAUSES


def new_links(design: Design, scenario: Scenario) -> float:
    """The share of the links found on pages that are new URLs: not seen before, and not
    a variant of a known URL the design canonicalizes away."""
    return (1.0 - scenario.web.links_seen_fraction) * (1.0 - variants(design, scenario))


def topology(design: Design, scenario: Scenario) -> Topology:
    """The crawler's graph for ``design`` under ``scenario``.

    With ``discovery`` the seen test moves from the frontier's door to its own node, and
    the fetched pages' links come back to it::

        client -> seen_set -> frontier -> fetchers -> cache -> ...
                     ^                       | (a copy of each fetched page)
                     +---- (0.05 s) --- links
    """
    nodes = [Node("client", "source")]
    if design.discovery is not None:
        nodes.append(_seen_set_node(design, scenario))
    nodes += [
        _frontier_node(design, scenario),
        _fetchers_node(design, scenario),
        _cache_node(design, scenario),
        _resolver_node(design, scenario),
        *_write_nodes(design, scenario),
    ]
    edges = tuple(Edge(a.name, b.name) for a, b in itertools.pairwise(nodes))
    if design.discovery is not None:
        edges = _loop_edges(design, edges)
        links = LinksParams.model_construct(links_per_page=scenario.web.links_per_page)
        nodes.append(Node("links", "links", links))
    return Topology(tuple(nodes), edges, causes=causes(design))


def _false_positive_rate(design: Design) -> float:
    """The share of new URLs the design's seen set takes for seen ones: its Bloom filter's
    false-positive rate (none for an exact set)."""
    return design.dedup.fp_rate if design.dedup.seen_set == "bloom" else 0.0


def _duplicates(design: Design, scenario: Scenario) -> float:
    """The share of fetched pages whose body is stored already and is finished without a
    write: the scenario's duplicate bodies when the design hashes content, else none."""
    return scenario.dedup.duplicate_body_fraction if design.dedup.content_hash else 0.0


def _seen_set_node(design: Design, scenario: Scenario) -> Node:
    """The link-discovery loop's seen set: the seen test, the variants and the Bloom
    filter's false positives, at its shards' capacity."""
    assert design.discovery is not None
    lookup = LookupParams.model_construct(
        rps=seen_set_capacity_rps(design, scenario),
        service=design.discovery.service,
        seen_fraction=seen_skipped(design, scenario),
        link_seen_fraction=scenario.web.links_seen_fraction,
        shards=design.discovery.shards,
        hot_key_share=scenario.web.hot_key_share,
        variant_fraction=variants(design, scenario),
        false_positive_rate=_false_positive_rate(design),
    )
    # Its slots are set by discovery.service and the catalog's shard rate.
    return Node("seen_set", "lookup", lookup, names={"rps": "discovery.service.mean_ms"})


def _frontier_node(design: Design, scenario: Scenario) -> Node:
    """The frontier, handing URLs out at the politeness limit; without the link-discovery
    loop it also makes the seen test at its door (with the loop, the seen set does)."""
    door = design.discovery is None
    params = QueueParams.model_construct(
        drain_rps=politeness(design, scenario).limit_rps,
        buffer=design.frontier.buffer,
        seen_fraction=seen_skipped(design, scenario) if door else 0.0,
        false_positive_rate=_false_positive_rate(design) if door else 0.0,
        variant_fraction=variants(design, scenario) if door else 0.0,
    )
    return Node("frontier", "queue", params)


def _fetchers_node(design: Design, scenario: Scenario) -> Node:
    """The fetchers as they run under the scenario: a fleet whose starts are paced."""
    fetchers = fetchers_in_effect(design, scenario)
    own = {name: getattr(fetchers, name) for name in type(fetchers).model_fields}
    params = FleetParams.model_construct(**own, paced=True)
    names = {
        "service.mean_ms": "fetchers.service.mean_ms",
        "rps_per_replica": "fetchers.rps_per_replica",
        "job": "fetch",
    }
    return Node("fetchers", "fleet", params, prefix="", names=names)


def _cache_node(design: Design, scenario: Scenario) -> Node:
    """The cache: the specification's, where a hit is finished and a miss needs DNS and a
    write; with the link-discovery loop, the DNS cache alone."""
    if design.discovery is None:
        # The specification's cache: a hit is finished there; a miss needs DNS and a write.
        spec = CacheParams.model_construct(
            hit_ratio=design.cache.hit_ratio,
            rps=cache_capacity_rps(design, scenario.catalog),
            service=design.cache.service,
        )
        return Node("cache", "cache", spec, names=_cache_names())
    # With the loop's own seen set the cache is the DNS cache alone: every page is
    # written, a hit without a resolver lookup; content hashing is done on every page
    # there (a body found stored is finished without a write).
    cache = ServiceParams.model_construct(
        rps=cache_capacity_rps(design, scenario.catalog),
        service=design.cache.service,
        finish_share=_duplicates(design, scenario),
    )
    return Node("cache", "service", cache, names=_cache_names())


def _cache_names() -> dict[str, str]:
    """The cache's rate is bought in units: what a user changes for its slots is its
    lookup time."""
    return {"rps": "cache.service.mean_ms"}


def _resolver_node(design: Design, scenario: Scenario) -> Node:
    """The external resolver, retried as the design retries; without the link-discovery
    loop content hashing is done here (with it, at the cache)."""
    params = ServiceParams.model_construct(
        rps=scenario.resolver.rps,
        service=scenario.resolver.service,
        finish_share=_duplicates(design, scenario) if design.discovery is None else 0.0,
    )
    names = {"rps": "resolver.rps"}  # the scenario's
    return Node("resolver", "service", params, retry=design.retries, names=names)


def _write_nodes(design: Design, scenario: Scenario) -> list[Node]:
    """The writes: the async writer if the design has one, then the page store as it
    runs."""
    nodes = []
    if design.async_writer is not None:
        writer = Node(
            "async_writer",
            "write_buffer",
            design.async_writer,
            prefix="writer",
            names={"": "async_writer"},
        )
        nodes.append(writer)
    store = page_store_in_effect(design, scenario.catalog)
    # Retries at the store: of the writes it fails (behind the async writer it fails none).
    retry = design.retries if design.async_writer is None else None
    names = {"rps": "page_store.rps"}
    nodes.append(Node("page_store", "store", store, prefix="store", retry=retry, names=names))
    return nodes


def _loop_edges(design: Design, edges: tuple[Edge, ...]) -> tuple[Edge, ...]:
    """The pipeline's ``edges`` with the link-discovery loop's: the DNS cache's hits and
    misses apart, and the fetched pages' links back to the seen set."""
    # DNS hits go straight to the writes; misses through the resolver.
    hit = design.cache.hit_ratio
    entry = "async_writer" if design.async_writer is not None else "page_store"
    split = (Edge("cache", "resolver", 1.0 - hit), Edge("cache", entry, hit))
    return (
        tuple(e for e in edges if e.source != "cache")
        + tuple(e for e in split if e.share > 0)
        + (
            Edge("fetchers", "links", tee=True),
            # a page's links reach the seen set after its fetch (the loop's delay)
            Edge("links", "seen_set", delay_s=LINK_DELAY_S),
        )
    )


#: How long links take from a fetched page to the seen set, on average (parsing the page:
#: the request engine spreads a page's links evenly over twice this, the flow engine holds
#: them this long, to the nearest tick, at least one: a feedback loop needs a delay).
LINK_DELAY_S = 0.05


def expected_urls(scenario: Scenario, design: Design | None = None) -> float:
    """How many URLs a scenario offers on average (what the request engine will simulate);
    with a crawler design's link-discovery loop, also the links its fetched pages yield: at
    most links per page x pages fetched, the pages fetched being what the seeds and the new
    links sustain (seeds x seeds kept / (1 - links x links kept)), capped by the fleet's
    rate."""
    total = 0.0
    stages = scenario.load
    links = scenario.web.links_per_page
    fleet = math.inf
    kept = new = 1.0
    follows = design is not None and design.discovery is not None
    if follows:
        assert design is not None
        fleet = design.fetchers.replicas * fetchers_in_effect(design, scenario).rps_per_replica
        kept = (1.0 - seen_skipped(design, scenario)) * (1.0 - variants(design, scenario))
        new = new_links(design, scenario)
    else:
        links = 0.0
    for i, stage in enumerate(stages):
        end = stages[i + 1].at_s if i + 1 < len(stages) else scenario.duration_s
        seeds = scenario.base_rps * stage.multiplier
        if stage.links_per_page is not None and follows:
            links = stage.links_per_page
        loop = links * new
        pages = min(fleet, seeds * kept / (1.0 - loop)) if loop < 1.0 else fleet
        total += (seeds + links * pages) * (end - stage.at_s)
    return total


def fits(scenario: Scenario, name: str | None, *, discovery: bool) -> list[Problem]:
    """What stops a crawler design (named ``name``, with a link-discovery loop or not)
    from running under ``scenario``: a fault on the seen set it lacks, a graph scenario."""
    problems = []
    if not discovery:
        problems += [
            Problem(
                scenario._source,
                f"faults[{i}].target",
                f"'seen_set' is the link-discovery loop's seen set, and "
                f"{name or 'this design'} has no discovery section",
            )
            for i, fault in enumerate(scenario.faults)
            if fault.target == "seen_set"
        ]
    if scenario.system != "crawler":
        problems.append(
            Problem(
                scenario._source,
                "system",
                f"the scenario is for graph designs (system: {scenario.system}) and "
                f"{name or 'this design'} is a crawler design",
            )
        )
    return problems
