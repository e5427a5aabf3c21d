"""A store: takes writes that find a free slot (Erlang loss) and serves them; the rest
fail (``<node>_overload``; ``<node>_unavailable`` while stalled). Behind a write buffer it
takes every write sent: the buffer sends only what it has room for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gym.models import PageStoreConfig
from gym.models.common import Rate
from gym.system.kinds.base import Kind

if TYPE_CHECKING:
    from gym.models import Catalog


class StoreNode(PageStoreConfig):
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


KIND = Kind(
    name="store",
    summary="Takes writes into concurrent slots (Erlang loss) and serves them.",
    node=StoreNode,
    units=_units,
    scale=_scale,
    causes=("overload", "unavailable"),
    faults=("stall", "slowdown"),
)
