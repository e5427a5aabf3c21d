"""The unit catalog: what one unit of each component buys (part of a scenario)."""

from __future__ import annotations

from pydantic import Field

from gym.models.common import InputModel, Rate


class FrontierUnit(InputModel):
    """One frontier unit."""

    drain_rps: Rate = Field(30_000, description="URLs/s one frontier unit can hand out.")
    buffer: int = Field(100_000, description="URLs one frontier unit can hold.", gt=0, le=10**12)
    back_queues: int = Field(
        20_000,
        description="Per-host back queues (hosts in flight) one frontier unit runs.",
        gt=0,
        le=10**9,
    )


class FetcherUnit(InputModel):
    """One fetcher unit is one replica."""

    max_rps_per_replica: Rate = Field(4_000, description="Most fetches/s one replica can do.")


class CacheUnit(InputModel):
    """Cache units: the first reaches ``base_hit_ratio``, each further one halves the misses."""

    base_hit_ratio: float = Field(0.92, description="Hit ratio one cache unit reaches.", ge=0, lt=1)
    lookups_rps: Rate = Field(100_000, description="Lookups/s one cache unit serves.")


class PageStoreUnit(InputModel):
    """One page-store unit."""

    rps: Rate = Field(25_000, description="Writes/s one page-store unit takes.")
    relational_rps: Rate = Field(
        2_500,
        description="Page writes/s one relational-database unit takes with bodies in rows.",
    )
    relational_max_rps: Rate = Field(
        10_000,
        description=(
            "Most page writes/s one relational table takes with bodies in rows, however "
            "many units: its primary's write-ahead log and replication are the ceiling."
        ),
    )


class AsyncWriterUnit(InputModel):
    """One async-writer unit."""

    buffer: int = Field(
        100_000, description="Writes one async-writer unit can hold.", gt=0, le=10**12
    )


class SeenSetUnit(InputModel):
    """One seen-URL set shard (the link-discovery loop's seen set, ``discovery.shards``)."""

    shard_rps: Rate = Field(50_000, description="Lookups/s one seen-set shard answers.")


class Catalog(InputModel):
    """Prices in units. Every field has the default of docs/specification.md section 5."""

    frontier: FrontierUnit = Field(default_factory=FrontierUnit, description="Frontier unit.")
    fetchers: FetcherUnit = Field(default_factory=FetcherUnit, description="Fetcher unit.")
    cache: CacheUnit = Field(default_factory=CacheUnit, description="Cache unit.")
    page_store: PageStoreUnit = Field(default_factory=PageStoreUnit, description="Page-store unit.")
    async_writer: AsyncWriterUnit = Field(
        default_factory=AsyncWriterUnit, description="Async-writer unit."
    )
    seen_set: SeenSetUnit = Field(
        default_factory=SeenSetUnit, description="Seen-URL set shard (one unit each)."
    )
