"""A write buffer in front of a store: holds the writes the store cannot take (up to
``buffer``; beyond it they fail, ``<node>_overflow``) and flushes them into the store's
spare room."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gym.models import AsyncWriterConfig
from gym.system.kinds.base import Kind

if TYPE_CHECKING:
    from gym.models import Catalog
    from gym.system.topology import Node, Topology


#: A write buffer's parameters, as its engines read them (a graph's write buffer node,
#: and the crawler's async writer section, are both one).
WriteBufferParams = AsyncWriterConfig


class WriteBufferNode(WriteBufferParams):
    """A write buffer node in a graph design."""

    kind: Literal["write_buffer"] = Field(description="Node kind.")


def _units(p: Any, c: Catalog) -> int:
    """Units a node provisions under the catalog."""
    from gym.system.units import units_for

    return int(units_for(p.buffer, c.async_writer.buffer))


def _check(node: Node, graph: Topology) -> list[tuple[str, str]]:
    """A write buffer feeds exactly one store, and nothing else feeds that store."""
    where = f"graph.nodes.{node.name}"
    outputs = graph.outputs(node.name)
    store = graph.node(outputs[0].target) if len(outputs) == 1 else None
    if store is None or store.kind != "store":
        return [(where, "a write buffer holds writes for one store: connect it to one")]
    if outputs[0].delay_s:
        return [(where, f"its edge to {store.name} has a delay; it writes into its store at once")]
    if len(graph.inputs(store.name)) > 1:
        return [
            (
                where,
                f"the store {store.name} behind it has other inputs too; a write buffer "
                "meters everything its store takes",
            )
        ]
    return []


def _scale(units: int, c: Catalog) -> dict[str, Any]:
    """What ``units`` write-buffer units give: the writes they hold."""
    return {"buffer": units * c.async_writer.buffer}


def _hint(
    graph: Topology, component: str, cause: str, _feeding: dict[str, str], _worst: int
) -> str | None:
    """A write buffer that overflowed: a larger one, or more capacity behind it."""
    if not cause.endswith("overflow"):
        return None
    behind = ", ".join(e.target for e in graph.outputs(component)) or "the store"
    return (
        f"It filled while {behind} could not take its flushes: a larger buffer holds "
        "a longer outage, more capacity behind it drains it sooner."
    )


KIND = Kind(
    name="write_buffer",
    summary="Holds the writes its store cannot take and flushes them into spare room.",
    node=WriteBufferNode,
    units=_units,
    scale=_scale,
    causes=("overflow",),
    holds_work=True,
    backs_up_behind=("store",),
    capped=False,
    fill_saturation=True,
    check=_check,
    hint=_hint,
)
