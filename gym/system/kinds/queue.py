"""A queue: holds up to ``buffer`` URLs and hands out at most ``drain_rps`` per second,
never more than the fleet it feeds can start; what arrives beyond a full buffer is
dropped (``<node>_overflow``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gym.models.common import InputModel, Rate
from gym.system.kinds.base import Kind

if TYPE_CHECKING:
    from gym.models import Catalog
    from gym.system.topology import Topology


class QueueParams(InputModel):
    """A queue's parameters."""

    drain_rps: Rate = Field(description="Most requests per second it hands out.")
    buffer: int = Field(
        description="Requests it can hold; arrivals beyond it are dropped (overflow).",
        gt=0,
        le=10**12,
    )
    seen_fraction: float = Field(
        0.0,
        description="Share of arrivals dropped at the door as seen before (skipped, not failed).",
        ge=0,
        lt=1,
    )
    false_positive_rate: float = Field(
        0.0,
        description="Share of the new arrivals a Bloom filter drops by mistake (skipped).",
        ge=0,
        lt=1,
    )
    variant_fraction: float = Field(
        0.0,
        description=(
            "Share of the new arrivals recognized at the door as variants of a known URL "
            "(canonicalization; skipped, url_variant)."
        ),
        ge=0,
        lt=1,
    )


class QueueNode(QueueParams):
    """A queue node in a graph design."""

    kind: Literal["queue"] = Field(description="Node kind.")


def _units(p: Any, c: Catalog) -> int:
    """Units a node provisions under the catalog."""
    from gym.system.units import units_for

    return int(
        max(units_for(p.drain_rps, c.frontier.drain_rps), units_for(p.buffer, c.frontier.buffer))
    )


def _scale(units: int, c: Catalog) -> dict[str, Any]:
    """What ``units`` queue units give: each drains and holds one catalog frontier unit."""
    return {"drain_rps": units * c.frontier.drain_rps, "buffer": units * c.frontier.buffer}


def _hint(
    graph: Topology, component: str, cause: str, _feeding: dict[str, str], _worst: int
) -> str | None:
    """A queue that overflowed: more capacity after it, or a larger buffer."""
    if not cause.endswith("overflow"):
        return None
    downstream = [e.target for e in graph.outputs(component)]
    if not downstream:
        return ""
    buffer = getattr(graph.node(component).params, "buffer", None)
    held = f"its {buffer:,}-request buffer" if isinstance(buffer, int) else "its buffer"
    return (
        f"It drains into {', '.join(downstream)}: while they take less than arrives (a "
        f"crash, a burst), {held} fills. More capacity there, or a larger buffer, "
        "keeps them."
    )


KIND = Kind(
    name="queue",
    summary="Holds up to buffer requests, hands out at most drain_rps per second.",
    node=QueueNode,
    units=_units,
    scale=_scale,
    causes=("overflow",),
    holds_work=True,
    skips_at_door=True,
    backs_up_behind=("fleet",),
    faults=("stall", "slowdown"),
    hint=_hint,
)
