"""An external service: concurrent slots and no queue (Erlang loss); what it finishes goes
on, but a share ``finish_share`` is done there (a body found stored already). Requests
that find every slot busy fail (``<node>_overload``; ``<node>_unavailable`` while
stalled)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from gym.models.common import InputModel, Rate, ServiceTime
from gym.system.kinds.base import Kind, NodeChange, Seen, round_up, slots_hint

if TYPE_CHECKING:
    pass


class ServiceParams(InputModel):
    """An external service's parameters."""

    rps: Rate = Field(description="Requests per second it answers (slots = rps x time).")
    service: ServiceTime = Field(
        default_factory=lambda: ServiceTime(mean_ms=20.0),
        description="Service time (default 20 ms).",
    )
    finish_share: float = Field(
        0.0,
        description="Share of what it answers that is finished there, not passed on.",
        ge=0,
        le=1,
    )


class ServiceNode(ServiceParams):
    """A service node in a graph design."""

    kind: Literal["service"] = Field(description="Node kind.")


def _changes(seen: Seen) -> list[NodeChange]:
    """A service's rate raised to its busiest second's demand at 80%, where it lost work
    overloaded. A service costs no units, so the unit search never changes its rate."""
    if not seen.lost_by("overload"):
        return []
    rate = float(round_up(seen.peak_demand / 0.8))
    if rate <= float(seen.node.get("rps", 0)):
        return []
    return [
        NodeChange(
            f"{seen.name}.rps={rate:g}",
            f"{seen.name} is a service: it costs no units, so its rate is a choice, "
            f"not a purchase; its busiest second asked for {seen.peak_demand:,.0f}",
            sets={"rps": rate},
        )
    ]


KIND = Kind(
    name="service",
    summary="An external service with concurrent slots and no queue (Erlang loss).",
    node=ServiceNode,
    units=lambda _p, _c: 0,
    causes=("overload", "unavailable"),
    passes=lambda p: 1.0 - p.finish_share,
    faults=("stall", "slowdown"),
    hint=slots_hint,
    changes=_changes,
)
