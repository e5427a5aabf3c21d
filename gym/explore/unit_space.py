"""The optimizer's search space: designs of whole units of each part, under a catalog.

Each component of a crawler (frontier, fetchers, cache, page store, async writer), or each
node of a graph whose kind is bought in units (:attr:`gym.system.kinds.base.Kind.scale`),
gets a whole number of units, at least its minimum; :func:`unit_design` and
:func:`unit_graph` build the design those units give, the base design supplying
everything the units do not set.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from gym.core.errors import GymError
from gym.models import Design, Scenario
from gym.system.compiled import either, units_of
from gym.system.costing import check as check_units
from gym.system.costing import units as costing_units
from gym.system.graph import GraphDesign
from gym.system.units import cache_hit_ratio, cache_units

COMPONENTS = ("frontier", "fetchers", "cache", "page_store", "async_writer")


M = TypeVar("M", Design, GraphDesign)


#: The fields the search chooses for every candidate: a base design's values for them are
#: replaced, so a ``--set`` of one of them would be silently dropped. (The writer's buffer
#: is replaced too, but a base needs one to state a writer's flush ceiling.)
SEARCHED = (
    "frontier.drain_rps",
    "frontier.buffer",
    "frontier.back_queues",
    "fetchers.replicas",
    "fetchers.rps_per_replica",
    "cache.hit_ratio",
    "page_store.rps",
)


def check_sets(sets: list[str], searched: tuple[str, ...] = SEARCHED) -> None:
    """Refuse a ``--set`` on a field the search chooses (or a section holding one): the
    search would replace it, so it would do nothing. Service times, the crash policy,
    dedup and the writer's flush ceiling are kept from the base, and may be set."""
    from gym.inputs.loading import parse_override

    for text in sets:
        path = ".".join(parse_override(text)[0])
        for chosen in searched:
            if path == chosen or chosen.startswith(path + ".") or path.startswith(chosen + "."):
                raise GymError.single(
                    None,
                    "--set",
                    f"{text}: the optimizer chooses {chosen} for every candidate, "
                    "so this would be dropped; --set only what the base design keeps "
                    "(service times, a crash policy, what its units do not buy)",
                )


def unit_design(
    units: dict[str, int], scenario: Scenario, base: Design | None, name: str | None
) -> Design:
    """The design that gets the most out of ``units`` under the scenario's catalog.

    Raises :class:`GymError` when no design file can say it: a figure beyond a field's
    limit (two frontier units of a catalog's 1e9 URLs/s), or a hit ratio so close to 1
    that it cannot be told from 1 or from the next number of cache units.
    """
    cat = scenario.catalog
    data: dict[str, Any] = base.model_dump(mode="json") if base is not None else {}
    data["name"] = name
    data["frontier"] = {
        "drain_rps": units["frontier"] * cat.frontier.drain_rps,
        "buffer": units["frontier"] * cat.frontier.buffer,
    }
    fetchers = data.get("fetchers", {})
    fetchers.update(replicas=units["fetchers"], rps_per_replica=cat.fetchers.max_rps_per_replica)
    data["fetchers"] = fetchers
    cache = data.get("cache", {})
    ratio = cache_hit_ratio(units["cache"], cat)
    shown = round(ratio, 12)  # 0.96, not 0.9600000000000001, when that is still exact
    cache["hit_ratio"] = shown if shown < 1 and cache_units(shown, cat) == units["cache"] else ratio
    data["cache"] = cache
    store = data.get("page_store", {})
    relational = store.get("layout") == "relational"  # a base's layout is kept
    per = cat.page_store.relational_rps if relational else cat.page_store.rps
    store["rps"] = units["page_store"] * per
    data["page_store"] = store
    if units.get("async_writer"):
        writer = data.get("async_writer") or {}
        writer["buffer"] = units["async_writer"] * cat.async_writer.buffer
        data["async_writer"] = writer
    else:
        data["async_writer"] = None
    if units.get("seen_set"):  # the link-discovery loop's seen set, a unit per shard
        discovery = data.get("discovery") or {}
        discovery["shards"] = units["seen_set"]
        data["discovery"] = discovery
    what = described(units)
    design = _validated(Design, data, what)
    problems = check_units(design, cat)
    got = {k: v for k, v in costing_units(design, cat).items() if k != "resolver"}
    if problems or got != {k: v for k, v in units.items() if v}:
        raise GymError.single(
            None,
            "cache.hit_ratio",
            f"{what}: the hit ratio {ratio!r} cannot be told from that of another number "
            "of cache units",
        )
    return design


def described(units: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in units.items() if v)


def _validated(model: type[M], data: dict[str, Any], what: str) -> M:
    """``data`` as a ``model``, or the GymError naming the field a unit set pushed past its
    limit (what no design file could say)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])
        raise GymError.single(
            None, where, f"{what}: beyond the field's limit under this catalog"
        ) from None


def design_mapping(design: Design | GraphDesign) -> dict[str, Any]:
    """A design as a mapping that loads as a design file: defaults left out (a graph's
    edges keep their ``from`` and ``to``)."""
    data = design.model_dump(mode="json", exclude_defaults=True, by_alias=True)
    nodes = data.get("graph", {}).get("nodes", {})
    for name, node in nodes.items():  # each node's kind first, as a person writes it
        nodes[name] = {"kind": node.pop("kind"), **node}
    return {k: v for k, v in data.items() if v is not None}


@dataclass(frozen=True)
class Space:
    """What the search buys: the parts in units (each at least its minimum), and how a
    set of units becomes a design."""

    parts: tuple[str, ...]
    mins: tuple[int, ...]
    needs: str  # why the least design costs what it does, for the messages
    build: Callable[[dict[str, int], Scenario, str | None], Design | GraphDesign]
    #: Fields the search sets on every candidate (a ``--set`` of one would be dropped).
    searched: tuple[str, ...] = ()

    @property
    def min_cost(self) -> int:
        return sum(self.mins)


def crawler_space(base: Design | None) -> Space:
    """The crawler's: frontier, fetchers, cache and page store one unit each at least, the
    async writer none or more; with a base running the link-discovery loop, its seen set's
    shards too (one at least)."""
    if base is not None and base.discovery is not None:
        return Space(
            parts=(*COMPONENTS, "seen_set"),
            mins=(1, 1, 1, 1, 0, 1),
            needs="frontier, fetchers, cache, page store and seen set need one unit each",
            build=lambda units, scenario, name: unit_design(units, scenario, base, name),
            searched=(*SEARCHED, "discovery.shards"),
        )
    return Space(
        parts=COMPONENTS,
        mins=(1, 1, 1, 1, 0),
        needs="frontier, fetchers, cache and page store need one unit each",
        build=lambda units, scenario, name: unit_design(units, scenario, base, name),
        searched=SEARCHED,
    )


def graph_space(base: GraphDesign, scenario: Scenario) -> Space:
    """A graph design's: every node whose kind is bought in units, one unit each at least.
    The base must run under the scenario (its faults name its nodes) before any search."""
    from gym.api import validate
    from gym.system import kinds

    wrong = [p for p in validate(base, scenario) if p.file == scenario._source]
    if wrong:
        raise GymError(wrong)

    parts = tuple(
        name
        for name, spec in base.graph.nodes.items()
        if kinds.kind(getattr(spec, "kind")).scale is not None  # noqa: B009
    )
    if not parts:
        raise GymError.single(
            base._source, "graph.nodes", "has no node bought in units: nothing to search"
        )
    searched = tuple(
        f"graph.nodes.{name}.{key}" for name in parts for key in _scaled(base, name, 1, scenario)
    )
    return Space(
        parts=parts,
        mins=(1,) * len(parts),
        needs=f"{', '.join(parts)} need one unit each",
        build=lambda units, sc, name: unit_graph(units, sc, base, name),
        searched=searched,
    )


def _scaled(base: GraphDesign, name: str, units: int, scenario: Scenario) -> dict[str, Any]:
    from gym.system import kinds

    spec = base.graph.nodes[name]
    scale = kinds.kind(getattr(spec, "kind")).scale  # noqa: B009
    assert scale is not None
    return scale(units, scenario.catalog)


def unit_graph(
    units: dict[str, int], scenario: Scenario, base: GraphDesign, name: str | None
) -> GraphDesign:
    """The base graph with each bought node as large as its units allow under the
    scenario's catalog. Raises :class:`GymError` when no design file can say it."""
    data = base.model_dump(mode="json", by_alias=True)
    data["name"] = name
    for node, count in units.items():
        data["graph"]["nodes"][node].update(_scaled(base, node, count, scenario))
    what = described(units)
    design = _validated(GraphDesign, data, what)
    got = {k: v for k, v in units_of(design, scenario.catalog).items() if k in units}
    if got != units:
        raise GymError.single(
            None, "graph.nodes", f"{what}: the catalog prices this design at {got}, not {units}"
        )
    return design


def space_for(scenario: Scenario, base: Design | GraphDesign | None) -> Space:
    """What to search for ``scenario``: a graph scenario needs the graph to size."""
    crawler, graph = either(base) if base is not None else (None, None)
    if scenario.system == "graph":
        if graph is None:
            raise GymError.single(
                scenario._source,
                "system",
                "graph: give the graph design to size (gym optimize DESIGN --scenario ...); "
                "the search keeps its nodes and edges and buys each node's units",
            )
        return graph_space(graph, scenario)
    if graph is not None:
        raise GymError.single(
            scenario._source,
            "system",
            f"{scenario.system}: {graph.name or 'the design'} is a graph design; its scenario "
            "needs system: graph",
        )
    return crawler_space(None if crawler is None else crawler.design)


def unit_sets(cost: int, space: Space | None = None) -> list[dict[str, int]]:
    """Every split of ``cost`` units over the space's parts, each at least its minimum
    (the crawler's: one each of frontier, fetchers, cache and page store, the rest,
    possibly none, to the writer: C(cost, 4) of them)."""
    space = space or crawler_space(None)
    spare = cost - space.min_cost
    if spare < 0:
        return []
    out = []
    k = len(space.parts)
    # Stars and bars: the spare units over k parts, in lexicographic order.
    for bars in _compositions(spare, k):
        out.append({p: m + b for p, m, b in zip(space.parts, space.mins, bars, strict=True)})
    return out


def _compositions(total: int, k: int) -> list[tuple[int, ...]]:
    """Every k-tuple of whole numbers >= 0 adding up to ``total``, in order."""
    if k == 1:
        return [(total,)]
    return [
        (first, *rest) for first in range(total + 1) for rest in _compositions(total - first, k - 1)
    ]


def designs_up_to(limit: int, space: Space | None = None) -> int:
    """Unit-aligned designs of the least cost to ``limit`` units: the spare units over k
    parts, C(spare + k - 1, k - 1) at each cost, summing to C(limit - least + k, k) (the
    crawler's: C(limit + 1, 5))."""
    space = space or crawler_space(None)
    k = len(space.parts)
    spare = limit - space.min_cost
    return math.comb(spare + k, k) if spare >= 0 else 0
