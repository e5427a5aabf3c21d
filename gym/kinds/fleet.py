"""A fleet: replicas x rps_per_replica starts per second, each taking the service time;
fed by a queue. A crashed replica's work in flight fails (``<node>_crash_loss``) or goes
back to the head of the queue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from gym.kinds import Build, Kind, connect_upstream
from gym.models import FetchersConfig

if TYPE_CHECKING:
    from gym.components.base import Component
    from gym.topology import Node


class FleetNode(FetchersConfig):
    """A fleet node in a graph design."""

    kind: Literal["fleet"] = Field(description="Node kind.")


def _flow(build: Build, node: Node) -> Component:
    from gym.components import FetcherFleet
    from gym.streams import stream

    return FetcherFleet(build.env, stream(build.seed, node.name), build.ledger, node.params)


def _connect(
    component: Component, inputs: Sequence[Component], outputs: Sequence[Component]
) -> None:
    connect_upstream(component, inputs, outputs)


KIND = Kind(
    name="fleet",
    summary="replicas x rps_per_replica starts per second, fed by a queue; replicas crash.",
    node=FleetNode,
    units=lambda p, _c: p.replicas,
    params=FetchersConfig,
    causes=("crash_loss",),
    flow=_flow,
    connect=_connect,
    holds_work=True,
)
