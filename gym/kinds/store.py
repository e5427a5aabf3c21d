"""A store: takes writes that find a free slot (Erlang loss) and serves them; the rest
fail (``<node>_overload``; ``<node>_unavailable`` while stalled). Behind a write buffer it
takes every write sent: the buffer sends only what it has room for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gym.kinds import Build, Kind, connect_upstream
from gym.models import PageStoreConfig

if TYPE_CHECKING:
    from gym.components.base import Component
    from gym.models import Catalog
    from gym.topology import Node


class StoreNode(PageStoreConfig):
    """A store node in a graph design."""

    kind: Literal["store"] = Field(description="Node kind.")


def _flow(build: Build, node: Node) -> Component:
    from gym.components import PageStore
    from gym.streams import stream

    return PageStore(build.env, stream(build.seed, node.name), build.ledger, node.params)


def _connect(
    component: Component, inputs: Sequence[Component], outputs: Sequence[Component]
) -> None:
    from gym.components import AsyncWriter

    connect_upstream(component, inputs, outputs)
    if inputs and isinstance(inputs[0], AsyncWriter):
        component.gated = True  # type: ignore[attr-defined]
    component.finishes = not outputs  # type: ignore[attr-defined]


def _units(p: Any, c: Catalog) -> int:
    """Units a node provisions under the catalog."""
    from gym.costing import units_for

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
    flow=_flow,
    connect=_connect,
    faults=("stall", "slowdown"),
)
