"""Links found on pages: fed a copy of the pages a node passes on (a tee edge), it yields
Poisson(links per page) links per page, new URLs the run adds to its offered load (the
crawler's link-discovery loop; a load stage may change the links per page: a deep
crawl). It fails nothing and holds nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from gym.models.common import InputModel
from gym.system.kinds.base import Kind

if TYPE_CHECKING:
    pass


class LinksParams(InputModel):
    """Links found on pages."""

    links_per_page: float = Field(description="Links a page yields, on average.", ge=0, le=1_000)


class LinksNode(LinksParams):
    """The crawler's links node (not for graph designs)."""

    kind: Literal["links"] = Field(description="Node kind.")


KIND = Kind(
    name="links",
    summary="Yields Poisson(links_per_page) new URLs per page a tee edge copies to it.",
    node=LinksNode,
    units=lambda _p, _c: 0,
    causes=(),
    creates=True,
    internal=True,
)
