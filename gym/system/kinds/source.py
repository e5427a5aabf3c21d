"""A source of load: offers the scenario's URLs (Poisson per tick, or evenly spaced)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from gym.models.common import InputModel
from gym.system.kinds.base import Kind

if TYPE_CHECKING:
    pass


class SourceNode(InputModel):
    """A source of load in a graph design: it offers the scenario's URLs."""

    kind: Literal["source"] = Field(description="Node kind.")


KIND = Kind(
    name="source",
    summary="Offers the scenario's load: base_rps x the stage's multiplier.",
    node=SourceNode,
    units=lambda _p, _c: 0,
    causes=(),
    source=True,
)
