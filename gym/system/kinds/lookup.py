"""A seen-URL set: a lookup that finds a free slot (Erlang loss) skips the URL when it was
seen before (``seen_url``), is a variant of a known one (``url_variant``) or a Bloom
filter's false positive (``bloom_false_positive``); the new ones go on. Lookups that find
every slot busy fail (``<node>_overload``; ``<node>_unavailable`` while stalled)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from gym.models.common import InputModel, Rate, ServiceTime
from gym.system.kinds.base import Kind

if TYPE_CHECKING:
    from gym.system.topology import Topology


class LookupParams(InputModel):
    """A seen-URL set's parameters."""

    rps: Rate = Field(
        description=(
            "Lookups per second it answers before its busiest shard is full (a shard "
            "answers rps x the busiest shard's share; slots = that x lookup time)."
        )
    )
    service: ServiceTime = Field(
        default_factory=lambda: ServiceTime(mean_ms=1.0),
        description="Lookup time (default 1 ms).",
    )
    seen_fraction: float = Field(0.0, description="Share skipped as seen.", ge=0, lt=1)
    link_seen_fraction: float = Field(
        0.0, description="Share of the links (from a links node) skipped as seen.", ge=0, le=1
    )
    variant_fraction: float = Field(
        0.0, description="Share of the rest skipped as variants.", ge=0, lt=1
    )
    false_positive_rate: float = Field(
        0.0, description="Share of the rest a Bloom filter skips by mistake.", ge=0, lt=1
    )
    shards: int = Field(1, description="Shards, split by URL hash.", gt=0, le=10_000)
    hot_key_share: float = Field(
        0.0, description="Share of the lookups for one hot URL, all on one shard.", ge=0, le=1
    )

    def busiest(self) -> float:
        """Share of the lookups its busiest shard takes."""
        return self.hot_key_share + (1.0 - self.hot_key_share) / self.shards

    def skips(self, links: bool = False) -> dict[str, float]:
        """Skip cause -> share of what is left when its test comes, in test order (for
        the links found on pages, or for the rest)."""
        return {
            "seen_url": self.link_seen_fraction if links else self.seen_fraction,
            "url_variant": self.variant_fraction,
            "bloom_false_positive": self.false_positive_rate,
        }


class LookupNode(LookupParams):
    """The crawler's seen-set node (not for graph designs)."""

    kind: Literal["lookup"] = Field(description="Node kind.")


def _hint(
    _graph: Topology, _component: str, cause: str, _feeding: dict[str, str], _worst: int
) -> str | None:
    """A lookup out of capacity: more shards, up to the hot key's shard."""
    if not cause.endswith("overload"):
        return None
    return (
        "More shards spread the lookups, until the busiest key's shard alone is full "
        "(the hot key lands on one shard)."
    )


KIND = Kind(
    name="lookup",
    summary="A seen-URL set: skips what it has seen, passes the new on. No queue: Erlang loss.",
    node=LookupNode,
    units=lambda _p, _c: 0,  # the crawler prices its shards (gym.system.costing.units)
    causes=("overload", "unavailable"),
    passes_as_counted=True,
    faults=("stall", "slowdown"),
    internal=True,
    hint=_hint,
)
