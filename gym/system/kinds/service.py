"""An external service: concurrent slots and no queue (Erlang loss); what it finishes goes
on, but a share ``finish_share`` is done there (a body found stored already). Requests
that find every slot busy fail (``<node>_overload``; ``<node>_unavailable`` while
stalled)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from gym.models.common import InputModel, Rate, ServiceTime
from gym.system.kinds.base import Kind

if TYPE_CHECKING:
    from gym.engines.request_graph import Run, Stage
    from gym.system.topology import Node


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


def _request(run: Run, node: Node, causes: tuple[str, ...]) -> Stage:
    from gym.engines.request_graph import LossStage

    p: ServiceParams = node.params
    return LossStage(
        run,
        node,
        causes,
        rate=p.rps,
        service=p.service,
        finish=p.finish_share,
        saved="writes_saved",
    )


KIND = Kind(
    name="service",
    summary="An external service with concurrent slots and no queue (Erlang loss).",
    node=ServiceNode,
    units=lambda _p, _c: 0,
    causes=("overload", "unavailable"),
    request=_request,
    passes=lambda p: 1.0 - p.finish_share,
    faults=("stall", "slowdown"),
)
