"""A cache: a lookup that finds a free slot (Erlang loss) is a hit with chance
``hit_ratio`` and finished there; misses go on. Lookups that find every slot busy fail
(``<node>_overload``; ``<node>_unavailable`` while it is stalled)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gym.models.common import InputModel, Rate, ServiceTime
from gym.system.kinds.base import Kind, slots_hint

if TYPE_CHECKING:
    from gym.models import Catalog


class CacheParams(InputModel):
    """A cache's parameters."""

    hit_ratio: float = Field(description="Share of lookups that hit (0 to 1).", ge=0, le=1)
    rps: Rate = Field(description="Lookups per second it answers (slots = rps x lookup time).")
    service: ServiceTime = Field(
        default_factory=lambda: ServiceTime(mean_ms=1.0),
        description="Lookup time (default 1 ms).",
    )


class CacheNode(CacheParams):
    """A cache node in a graph design."""

    kind: Literal["cache"] = Field(description="Node kind.")


def _units(p: Any, c: Catalog) -> int:
    """Units a node provisions under the catalog."""
    from gym.system.units import cache_units, units_for

    return int(max(cache_units(p.hit_ratio, c) or 60, units_for(p.rps, c.cache.lookups_rps)))


def _allowed(p: Any, c: Catalog) -> list[tuple[str, str]]:
    """A hit ratio the catalog's cache units can reach."""
    from gym.system.units import cache_units

    if cache_units(p.hit_ratio, c) is not None:
        return []
    return [
        (
            "hit_ratio",
            f"{p.hit_ratio:g} cannot be reached: the first cache unit reaches "
            f"{c.cache.base_hit_ratio:g} and each further unit halves the miss ratio, which "
            "never reaches 0",
        )
    ]


def _scale(units: int, c: Catalog) -> dict[str, Any]:
    """What ``units`` cache units give: the hit ratio they reach and their lookups."""
    from gym.system.units import cache_hit_ratio, cache_units

    ratio = cache_hit_ratio(units, c)
    shown = round(ratio, 12)  # 0.96, not 0.9600000000000001, when that is still exact
    ratio = shown if shown < 1 and cache_units(shown, c) == units else ratio
    return {"hit_ratio": ratio, "rps": units * c.cache.lookups_rps}


KIND = Kind(
    name="cache",
    summary="Serves a share hit_ratio of lookups; misses go on. No queue: Erlang loss.",
    node=CacheNode,
    units=_units,
    scale=_scale,
    causes=("overload", "unavailable"),
    passes=lambda p: 1.0 - p.hit_ratio,
    faults=("stall", "slowdown"),
    allowed=_allowed,
    hint=slots_hint,
)
