"""The structural changes the suggested fix tries beside unit counts (issue 29): a choice
switched, or a section or a node added, each the lesson of a teaching design.

Each move applies where the failing run and its scenario say it could matter, and gives
a design the fix's unit search then starts from (:mod:`gym.explore.fix`):

- ``page_store.layout: split``: page bodies out of a relational table, into object
  storage (a relational store, wherever the SLOs fail);
- ``dedup.recrawl: change_rate``: pages seen before fetched again only if changed (the
  scenario offers seen URLs);
- ``dedup.canonicalize: true``, ``dedup.content_hash: true``: the dedup layers the
  scenario's variants and duplicate bodies call for;
- ``frontier.structure: two_stage``: a global FIFO frontier made polite;
- ``discovery``: a seen-URL set of one shard (the unit search adds shards), where the
  scenario's pages carry links and the design follows none; taken out where they carry
  none;
- ``async_writer`` taken out: its unit spent elsewhere;
- ``retries``: backoff with jitter and a budget of tries (writes or lookups failed at the
  store or resolver, and the design retries none, or in lockstep with no backoff);
- each node's kind's own changes (``Kind.changes``, in its declaration), on the graph
  that ran, a crawler's compiled one included, wherever the design file holds the
  fields they set: ``on_crash: requeue`` on a fleet that lost work in a crash (a
  crawler's ``fetchers.on_crash``); a service's rate raised to its busiest second's
  demand at 80% (a service costs no units, so the unit search never changes it; a
  crawler's resolver is the scenario's, not its design's); a ``write_buffer`` node
  before a store that lost writes while down or overloaded, holding at least the writes
  it lost (not before a store a cache feeds: its misses are reads; a graph design's
  only: a crawler's write buffer is its ``async_writer`` section).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from gym.explore.changes import with_field
from gym.models import Design, Scenario
from gym.system.compiled import either, parameter_paths
from gym.system.graph import GraphDesign
from gym.system.kinds import kind
from gym.system.kinds.base import NodeChange, Seen
from gym.system.topology import Node

if TYPE_CHECKING:
    from gym.analysis.metrics import Metrics
    from gym.analysis.result import Result

#: The retry policy a move sets: the Workbook's advice, exponential backoff with jitter
#: and a bounded number of tries (retry-backoff.yaml's).
RETRIES = {"attempts": 5, "backoff_s": 1.0, "multiplier": 2.0, "jitter": 0.5}


@dataclass(frozen=True)
class Move:
    """One structural change: what it is, the lesson it teaches, and how to make it."""

    name: str
    lesson: str
    apply: Callable[[Design | GraphDesign], Design | GraphDesign]
    #: The rubric's trap it takes the design out of (gym.analysis.rubric: an item).
    trap: str | None = None


def moves(result: Result) -> list[Move]:
    """The moves that could matter to ``result``'s failing run: its graph's nodes' changes,
    each kind's own (:func:`_node_moves`), and for a crawler design its add-ons' around
    them."""
    crawler, graph = either(result.design)
    if crawler is None:
        assert graph is not None
        return _node_moves(result, _graph_path, adds_nodes=True)
    return _crawler_moves(result, crawler.design)


def both(a: Move, b: Move) -> Move:
    """Two moves made together: their lessons, one after the other."""

    def apply(d: Design | GraphDesign) -> Design | GraphDesign:
        return b.apply(a.apply(d))

    return Move(f"{a.name} and {b.name}", f"{a.lesson}; and {b.lesson}", apply)


def _setting(name: str, lesson: str, path: str, value: Any, trap: str | None = None) -> Move:
    """A move that sets the field at ``path`` (dotted) to ``value``."""
    return Move(name, lesson, partial(with_field, path=path, value=value), trap)


def _switch(path: str, value: Any, lesson: str, trap: str | None = None) -> Move:
    """A choice switched: a move named after the field at ``path`` and its new value."""
    return _setting(f"{path}={str(value).lower()}", lesson, path, value, trap)


def _crawler_moves(result: Result, design: Design) -> list[Move]:
    """The moves that could matter to a crawler design's failing run, in the order the fix
    tries them: its add-ons' (the page store's layout, dedup, sections, the frontier's
    structure, retries) and its compiled graph's nodes' changes where its sections hold
    the fields they set (the fetchers' ``on_crash``)."""
    lost = result.metrics.failed_by_cause
    return [
        *_store_and_dedup_moves(design, result.scenario),
        *_section_moves(design, result.scenario),
        *_frontier_moves(design),
        *_node_moves(result, partial(_crawler_path, design), adds_nodes=False),
        *_retry_moves(design, lost),
    ]


def _store_and_dedup_moves(design: Design, scenario: Scenario) -> list[Move]:
    """The page store split, and the dedup layers the scenario's URLs and bodies call
    for."""
    world = scenario.dedup
    out = []
    if design.page_store.layout == "relational":
        out.append(
            _switch(
                "page_store.layout",
                "split",
                "page bodies belong in object storage, not in rows of a relational table",
                "storage split",
            )
        )
    if design.dedup.recrawl == "full" and world.seen_url_fraction:
        out.append(
            _switch(
                "dedup.recrawl",
                "change_rate",
                "recrawl a page only when it changed: unchanged pages waste the fetchers",
                "recrawl policy",
            )
        )
    if not design.dedup.canonicalize and world.variant_fraction:
        out.append(
            _switch(
                "dedup.canonicalize",
                True,
                "canonicalize URLs: variants are pages crawled twice",
                "dedup layers",
            )
        )
    if not design.dedup.content_hash and world.duplicate_body_fraction:
        out.append(
            _switch(
                "dedup.content_hash",
                True,
                "hash page bodies: duplicates are writes stored twice",
                "dedup layers",
            )
        )
    return out


def _section_moves(design: Design, scenario: Scenario) -> list[Move]:
    """Sections taken out or added: the seen-URL set where the scenario's pages carry no
    links (or do, and the design follows none), and the async writer."""
    links = scenario.web.links_per_page or any(st.links_per_page for st in scenario.load)
    out = []
    # Sections that cost units, taken out: their units spent where the run falls short.
    if design.discovery is not None and not links:
        out.append(
            _setting(
                "discovery: none",
                "the scenario's pages carry no links: a seen-URL set has nothing to find, "
                "and its shards cost units",
                "discovery",
                None,
            )
        )
    if design.async_writer is not None:
        out.append(
            _setting(
                "async_writer: none",
                "an async writer costs a unit; where the store keeps up, that unit does more "
                "elsewhere",
                "async_writer",
                None,
            )
        )
    if design.discovery is None and links:
        out.append(
            _setting(
                "discovery: a seen-URL set",
                "discover links: the crawl grows by the links its pages yield, each new one "
                "found by a seen-URL set (the scenario's pages carry links)",
                "discovery",
                {"shards": 1},
            )
        )
    return out


def _frontier_moves(design: Design) -> list[Move]:
    """A global FIFO frontier made polite."""
    if design.frontier.structure != "global_fifo":
        return []
    return [
        _switch(
            "frontier.structure",
            "two_stage",
            "a two-stage frontier: polite to every host, priorities first",
            "frontier structure",
        )
    ]


def _retry_moves(design: Design, lost: Mapping[str, int]) -> list[Move]:
    """Backoff with jitter, where writes or lookups failed at the store or the resolver and
    the design retries none, or in lockstep."""
    retried = design.retries
    writes = any(lost.get(c, 0) for c in ("store_unavailable", "store_overload"))
    lookups = any(lost.get(c, 0) for c in ("resolver_unavailable", "resolver_overload"))
    lockstep = retried is not None and (retried.jitter == 0 or retried.multiplier == 1)
    if not (writes or lookups) or not (retried is None or lockstep):
        return []
    lesson = _retry_lesson(writes, lookups, retried is None)
    return [_setting("retries: backoff with jitter", lesson, "retries", RETRIES)]


def _retry_lesson(writes: bool, lookups: bool, none: bool) -> str:
    """The retries move's lesson: the failed writes or lookups to retry when the design
    retries none (``none``), else the storm its retries in lockstep make."""
    if not none:
        return "retries in lockstep are a storm: space them out (backoff that grows, or jitter)"
    what = "writes and lookups" if writes and lookups else "writes" if writes else "lookups"
    return f"retry failed {what} with backoff, a bounded number of times"


#: Where a design file writes node ``name``'s ``field``, given the node as it ran (None
#: where the file cannot say it).
PathOf = Callable[[str, str, dict[str, Any]], str | None]


def _graph_path(name: str, field: str, _node: dict[str, Any]) -> str:
    return f"graph.nodes.{name}.{field}"


def _crawler_path(design: Design, name: str, field: str, node: dict[str, Any]) -> str | None:
    """A crawler's node's field in its section (``fetchers.on_crash``), where the section
    writes the value the node ran with; else None: not a section's (the resolver's rate
    is the scenario's, the cache's is bought in units), or a figure the scenario or the
    catalog changes on the way (the fetchers' rate under JS rendering, a relational
    page store's), which a change worked out on the node's would misplace."""
    path = parameter_paths(design, field).get(name)
    if path is None:
        return None
    section, key = path.split(".", 1)
    written = getattr(design, section).model_dump(mode="json", by_alias=True).get(key)
    return path if written == node.get(field) else None


def _node_moves(result: Result, path_of: PathOf, *, adds_nodes: bool) -> list[Move]:
    """Node by node of the graph that ran, each kind's own changes (``Kind.changes`` in its
    declaration: a fleet's crashed work requeued, a service's rate raised, a write buffer
    before a store), where the design file can say them (``path_of``; a node put before
    another only where the design file ``adds_nodes``: a graph design's)."""
    graph = result.metrics.record.topology
    assert graph is not None  # both engines record the topology they ran
    nodes = {n.name: _written(n) for n in graph.nodes}
    edges = [{"from": e.source, "to": e.target} for e in graph.edges if not e.tee]
    m = result.metrics
    out = []
    for name, node in nodes.items():
        if name not in m.components:
            continue
        seen = Seen(name, nodes, edges, _lost(m, name), _peak(m.components[name].demand))
        for change in kind(node["kind"]).changes(seen):
            move = _move(change, name, nodes, path_of, adds_nodes)
            if move is not None:
                out.append(move)
    return out


def _written(node: Node) -> dict[str, Any]:
    """A node's fields as a graph design writes them (its kind, its parameters)."""
    params = {} if node.params is None else node.params.model_dump(mode="json", by_alias=True)
    return {**params, "kind": node.kind}


def _lost(m: Metrics, name: str) -> dict[str, int]:
    """The work each cause lost at node ``name`` over the run."""
    return {cause: int(n.sum()) for cause, n in m.components[name].failed.items()}


def _peak(demand: np.ndarray) -> float:
    """The busiest second's demand (0 where none was measured)."""
    seen = demand[~np.isnan(demand)]
    return float(seen.max()) if seen.size else 0.0


def _move(
    change: NodeChange, name: str, nodes: dict[str, Any], path_of: PathOf, adds_nodes: bool
) -> Move | None:
    """A kind's change at node ``name`` as a move of the fix: its fields set, its node put
    before another (named as no node is); None where the design file cannot say it."""
    paths = {field: path_of(name, field, nodes[name]) for field in change.sets}
    if None in paths.values() or (change.before is not None and not adds_nodes):
        return None
    sets = {path: change.sets[field] for field, path in paths.items() if path is not None}
    before = change.before
    if before is None:
        return Move(change.name, change.lesson, partial(_with_fields, sets=sets))
    new, node, target = before
    added = partial(_add_before, name=_unique(new, nodes), node=node, target=target)

    def apply(d: Design | GraphDesign) -> Design | GraphDesign:
        return _with_fields(added(d), sets)

    return Move(change.name, change.lesson, apply)


def _with_fields(d: Design | GraphDesign, sets: dict[str, Any]) -> Design | GraphDesign:
    for path, value in sets.items():
        d = with_field(d, path=path, value=value)
    return d


def _add_before(
    d: Design | GraphDesign, name: str, node: dict[str, Any], target: str
) -> GraphDesign:
    """Graph design ``d`` with ``node`` named ``name`` before ``target``: the edges into
    the target go into it, and it feeds the target."""
    g = d.model_dump(mode="json", by_alias=True)
    g["graph"]["nodes"][name] = node
    for e in g["graph"]["edges"]:
        if e.get("to") == target:
            e["to"] = name
    g["graph"]["edges"].append({"from": name, "to": target})
    return GraphDesign.model_validate(g)


#: The longest node name a graph takes (gym.system.graph.NODE_NAME_PATTERN).
MAX_NODE_NAME = 64


def _unique(name: str, taken: dict[str, Any]) -> str:
    """``name``, or ``name2``, ``name3``...: one no node has, cut to a node name's length
    (a store of 60 characters gets a buffer named after its first 57)."""
    out, n = name[:MAX_NODE_NAME], 2
    while out in taken:
        suffix = str(n)
        out, n = name[: MAX_NODE_NAME - len(suffix)] + suffix, n + 1
    return out
