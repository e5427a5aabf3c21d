"""Links found on pages: fed a copy of the pages a node passes on (a tee edge), it yields
Poisson(links per page) links per page, new URLs the run adds to its offered load (the
crawler's link-discovery loop; a load stage may change the links per page: a deep
crawl). It fails nothing and holds nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gym.kinds import Build, Kind
from gym.models.common import InputModel

if TYPE_CHECKING:
    import numpy as np

    from gym.components.base import Component
    from gym.models import Scenario
    from gym.timeline import Timeline
    from gym.topology import Node


class LinksParams(InputModel):
    """Links found on pages."""

    links_per_page: float = Field(description="Links a page yields, on average.", ge=0, le=1_000)


class LinksNode(LinksParams):
    """The crawler's links node (not for graph designs)."""

    kind: Literal["links"] = Field(description="Node kind.")


def schedule(base: float, scenario: Scenario, timeline: Timeline) -> np.ndarray:
    """Links per page in force each tick: ``base``, then each load stage's links_per_page
    from its start on (a stage without one keeps the one before)."""
    import numpy as np

    per = np.full(timeline.n_ticks, float(base))
    for stage in scenario.load:
        if stage.links_per_page is not None:
            per[min(timeline.n_ticks, timeline.to_tick(stage.at_s)) :] = stage.links_per_page
    return per


def _flow(build: Build, node: Node) -> Component:
    from gym.components.discovery import Links
    from gym.streams import stream

    p: LinksParams = node.params
    from gym.crawler import LINK_DELAY_S

    per = schedule(p.links_per_page, build.scenario, build.timeline)
    spread = round(2 * LINK_DELAY_S * 1000.0 / build.timeline.tick_ms)  # (0, 2 x delay]
    return Links(build.env, stream(build.seed, node.name), build.ledger, per, spread)


def _connect(component: Any, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
    component.upstream = inputs[0]


KIND = Kind(
    name="links",
    summary="Yields Poisson(links_per_page) new URLs per page a tee edge copies to it.",
    node=LinksNode,
    units=lambda _p, _c: 0,
    causes=(),
    flow=_flow,
    connect=_connect,
    creates=True,
    internal=True,
)
