"""A store: takes writes that find a free slot (Erlang loss) and serves them; the rest
fail (``<node>_overload``; ``<node>_unavailable`` while stalled). Behind a write buffer it
takes every write sent: the buffer sends only what it has room for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gym.models import PageStoreConfig
from gym.models.common import Rate
from gym.system.kinds.base import Kind, NodeChange, Seen, round_up

if TYPE_CHECKING:
    from gym.models import Catalog
    from gym.system.topology import Topology


#: A store's parameters, as its engines read them (a graph's store node, and the crawler's
#: page store section as it runs, are both one).
StoreParams = PageStoreConfig


class StoreNode(StoreParams):
    """A store node in a graph design."""

    kind: Literal["store"] = Field(description="Node kind.")
    rps: Rate = Field(description="Requests per second the store takes.")
    layout: Literal["split"] = Field(
        "split",
        description="A graph's store keeps no relational table of page bodies: the "
        "crawler's page store has that choice (page_store.layout); here only split.",
    )


def _units(p: Any, c: Catalog) -> int:
    """Units a node provisions under the catalog."""
    from gym.system.units import units_for

    return int(units_for(p.rps, c.page_store.rps))


def _scale(units: int, c: Catalog) -> dict[str, Any]:
    """What ``units`` store units give: their writes per second."""
    return {"rps": units * c.page_store.rps}


def _hint(
    _graph: Topology, component: str, cause: str, feeding: dict[str, str], worst: int
) -> str | None:
    """A store that was down or full: a cache's misses are reads (a higher hit ratio),
    writes a write buffer before it could hold."""
    if not cause.endswith(("unavailable", "overload")):
        return None
    caches = [n for n, k in feeding.items() if k == "cache"]
    if caches:
        more = f"; more rate at {component} takes more of them" if "overload" in cause else ""
        return (
            f"What reaches it are {', '.join(caches)}'s misses: reads, which no buffer can "
            f"hold. A higher hit ratio at {caches[0]} sends it fewer{more}."
        )
    if "write_buffer" in feeding.values():
        return ""
    return (
        f"A write_buffer node before {component} holding at least {worst:,} "
        "writes would keep them while it cannot take them and flush them after."
    )


def _changes(seen: Seen) -> list[NodeChange]:
    """A write buffer before a store that lost writes, holding at least what it lost (not
    before a store a cache or a buffer already feeds: a cache's misses are reads, which
    no buffer can hold)."""
    feeding = [e["from"] for e in seen.edges if e.get("to") == seen.name]
    if any(seen.nodes[n].get("kind") in ("write_buffer", "cache") for n in feeding):
        return []
    lost = sum(seen.lost.values())
    if not lost or not feeding:
        return []
    buffer = round_up(lost * 1.25)
    return [
        NodeChange(
            f"a write_buffer node before {seen.name} (buffer {buffer:,})",
            f"a write buffer before {seen.name} holds what it cannot take while down or full",
            before=(f"{seen.name}_buffer", {"kind": "write_buffer", "buffer": buffer}, seen.name),
        )
    ]


KIND = Kind(
    name="store",
    summary="Takes writes into concurrent slots (Erlang loss) and serves them.",
    node=StoreNode,
    units=_units,
    scale=_scale,
    causes=("overload", "unavailable"),
    faults=("stall", "slowdown"),
    hint=_hint,
    changes=_changes,
)
