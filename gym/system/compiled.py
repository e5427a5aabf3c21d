"""A design as everything past loading sees it: the graph it runs and, for a crawler design,
the crawler's own add-ons (:class:`gym.system.crawler.CrawlerAddOns`).

A crawler design and a graph design are two types in the design files; this module is the
one place that tells them apart (:func:`addons` and :func:`graph_design`, each a single
``isinstance``). Everything else asks it: the topology a design runs under a scenario, the
problems that stop it, what it costs, where a node's parameter is written in its file, the
work the request engine should expect. A layer that has a crawler-only figure to show asks
for the add-ons and shows it where they exist.
"""

from __future__ import annotations

from gym.core.errors import Problem
from gym.models import Catalog, Design, Scenario
from gym.system import costing, crawler, graph
from gym.system.crawler import CrawlerAddOns
from gym.system.graph import GraphDesign
from gym.system.topology import Topology


def addons(design: object) -> CrawlerAddOns | None:
    """A crawler design's add-ons to its graph; None for a graph design (all it has is its
    graph) or anything else."""
    return CrawlerAddOns(design) if isinstance(design, Design) else None


def graph_design(design: object) -> GraphDesign | None:
    """``design`` if it is a graph design (where a graph's own path is taken: its moves, its
    search space), else None."""
    return design if isinstance(design, GraphDesign) else None


def either(design: object) -> tuple[CrawlerAddOns | None, GraphDesign | None]:
    """A design's crawler add-ons or its graph, exactly one of them (where a path has a twin
    for each); a ``TypeError`` for anything that is neither design."""
    crawler, graph = addons(design), graph_design(design)
    if crawler is None and graph is None:
        raise TypeError(f"a crawler design or a graph design, not {type(design).__name__}")
    return crawler, graph


def system_topology(design: Design | GraphDesign, scenario: Scenario) -> Topology:
    """The topology a design runs under a scenario, built once when a run starts: the
    crawler's built-in graph (its nodes' parameters in effect under the scenario), or a
    graph design's own."""
    own = addons(design)
    if own is not None:
        return crawler.topology(own.design, scenario)
    return graph.topology(_graph(design))


def problems_under(design: Design | GraphDesign, scenario: Scenario) -> list[Problem]:
    """What stops a design from running under ``scenario``: a graph's
    (:func:`gym.system.graph.problems_under`), or what the catalog allows a crawler design
    and whether the scenario is one for it."""
    own = addons(design)
    if own is None:
        return graph.problems_under(_graph(design), scenario)
    d = own.design
    problems = costing.check(d, scenario.catalog, d._source)
    return problems + crawler.fits(scenario, d.name, discovery=own.follows_links)


def units_of(design: Design | GraphDesign, catalog: Catalog) -> dict[str, int]:
    """Provisioned units per component of a crawler design, or per node of a graph."""
    from gym.system.kinds import graph_units

    own = addons(design)
    if own is not None:
        return costing.units(own.design, catalog)
    return graph_units(graph.topology(_graph(design)), catalog)


def expected_urls(scenario: Scenario, design: Design | GraphDesign | None = None) -> float:
    """How many URLs (requests) ``scenario`` offers on average, with a crawler design's
    link-discovery loop the links it finds too (:func:`gym.system.crawler.expected_urls`)."""
    own = addons(design)
    return crawler.expected_urls(scenario, None if own is None else own.design)


#: The section of a crawler design file each of its nodes is written in.
SECTIONS = {
    "seen_set": "discovery",
    "frontier": "frontier",
    "fetchers": "fetchers",
    "cache": "cache",
    "async_writer": "async_writer",
    "page_store": "page_store",
}


def parameter_paths(design: Design | GraphDesign, name: str) -> dict[str, str]:
    """Per node whose own section of the design file has the parameter ``name``, where it
    is written: ``{"cache": "cache.hit_ratio"}`` for a crawler's hit ratio,
    ``{"db": "graph.nodes.db.hit_ratio"}`` for a graph's cache node ``db``."""
    own = addons(design)
    if own is None:
        nodes = _graph(design).graph.nodes
        return {
            n: f"graph.nodes.{n}.{name}" for n, p in nodes.items() if name in type(p).model_fields
        }
    out = {}
    for node, section in SECTIONS.items():
        part = getattr(own.design, section)
        if part is not None and name in type(part).model_fields:
            out[node] = f"{section}.{name}"
    return out


def _graph(design: object) -> GraphDesign:
    """``design``, known to be a graph design (no crawler add-ons)."""
    got = graph_design(design)
    if got is None:
        raise TypeError(f"a crawler design or a graph design, not {type(design).__name__}")
    return got
