"""A source of load: offers the scenario's URLs (Poisson per tick, or evenly spaced)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from gym.kinds import Build, Kind
from gym.models.common import InputModel

if TYPE_CHECKING:
    from gym.components.base import Component
    from gym.topology import Node


class SourceNode(InputModel):
    """A source of load in a graph design: it offers the scenario's URLs."""

    kind: Literal["source"] = Field(description="Node kind.")


def _flow(build: Build, node: Node) -> Component:
    from gym.components import Client
    from gym.streams import stream

    return Client(build.env, stream(build.seed, node.name), build.ledger, build.scenario)


def _connect(component: Component, inputs: object, outputs: object) -> None:
    """A source has no input."""


KIND = Kind(
    name="source",
    summary="Offers the scenario's load: base_rps x the stage's multiplier.",
    node=SourceNode,
    units=lambda _p, _c: 0,
    causes=(),
    flow=_flow,
    connect=_connect,
    source=True,
)
