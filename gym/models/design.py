"""A crawler's capacity design: what the user provisions (designs/*.yaml)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, PrivateAttr

from gym.core.text import URLS, Unit
from gym.models.common import InputModel, Rate, ServiceTime


class FrontierConfig(InputModel):
    """The URL queue in front of the fetchers."""

    drain_rps: Rate = Field(description="Most URLs per second the frontier can hand out.")
    buffer: int = Field(
        description="URLs the frontier can hold; arrivals beyond it are dropped (overflow).",
        gt=0,
        le=10**12,
    )
    back_queues: int | None = Field(
        None,
        description=(
            "Per-host back queues (Mercator style): at most this many hosts are crawled at "
            "once, each once per crawl delay. Default: the catalog's per-unit figure times "
            "the frontier's units, capped by the web's hosts."
        ),
        gt=0,
        le=10**9,
    )
    structure: Literal["two_stage", "global_fifo"] = Field(
        "two_stage",
        description=(
            "two_stage (Mercator): front queues by priority band, one host per back queue, a "
            "heap of next-eligible times: high-priority URLs go first and no host is fetched "
            "faster than its crawl delay, at most back_queues / crawl delay URLs/s. "
            "global_fifo: one first-in first-out queue handing out at drain_rps whatever the "
            "host or priority: faster, but it fetches popular hosts faster than their crawl "
            "delay (politeness violations) and serves high-priority URLs no sooner than the "
            "rest."
        ),
    )


class FetchersConfig(InputModel):
    """The fetcher fleet: replicas that each fetch up to ``rps_per_replica`` pages/s."""

    replicas: int = Field(description="Number of fetcher replicas.", gt=0, le=100_000)
    rps_per_replica: Rate = Field(description="Fetches per second one replica can start.")
    service: ServiceTime = Field(
        default_factory=lambda: ServiceTime(mean_ms=250.0),
        description=(
            "Fetch time. A replica holds rps_per_replica x mean fetch time fetches in flight."
        ),
    )
    on_crash: Literal["fail", "requeue"] = Field(
        "fail",
        description=(
            "What happens to the fetches in flight on a replica when it crashes: they fail "
            "(cause crash_loss) or go back to the head of the frontier."
        ),
    )


class CacheConfig(InputModel):
    """DNS + seen-URL cache. A hit is served at once; a miss needs DNS and a store write
    (with a discovery section: the DNS cache alone, every page written)."""

    hit_ratio: float = Field(description="Fraction of lookups that hit (0 to 1).", ge=0, le=1)
    service: ServiceTime = Field(
        default_factory=lambda: ServiceTime(mean_ms=1.0),
        description="Lookup time (default 1 ms). Slots = lookup capacity x mean lookup time.",
    )


class PageStoreConfig(InputModel):
    """Where fetched pages are written."""

    rps: Rate = Field(description="Writes per second the page store takes.")
    layout: Literal["split", "relational"] = Field(
        "split",
        description=(
            "split: page bodies in object storage and URL metadata in a key-value store, "
            "each scaling with its units. relational: bodies and metadata as rows of one "
            "relational table, whose writes of multi-KB rows cost more units each and stop "
            "at the catalog's ceiling (page_store.relational_max_rps) however many are "
            "bought."
        ),
    )
    service: ServiceTime = Field(
        default_factory=lambda: ServiceTime(mean_ms=20.0),
        description="Write time (default 20 ms). Slots = rps x mean write time.",
    )


class AsyncWriterConfig(InputModel):
    """A write-behind buffer between the miss path and the page store."""

    buffer: int = Field(
        description="Writes the writer can hold while the store cannot take them.",
        gt=0,
        le=10**12,
    )
    flush_ceiling: float = Field(
        0.85,
        description=(
            "The writer flushes held writes only into store capacity left below this "
            "fraction of the store's capacity, so a flush never pushes the store above it."
        ),
        gt=0,
        le=1,
    )


class DedupConfig(InputModel):
    """How the crawler recognizes what it has seen: URLs and page bodies."""

    seen_set: Literal["bloom", "exact"] = Field(
        "exact",
        description=(
            "Seen-URL set: an exact set (8 bytes per URL, no mistakes) or a Bloom filter "
            "(-ln(p)/(ln 2)^2 bits per URL, skips a fraction fp_rate of new URLs)."
        ),
    )
    fp_rate: float = Field(0.01, description="The Bloom filter's false-positive rate.", gt=0, lt=1)
    content_hash: bool = Field(
        False,
        description="Hash page bodies and skip the store write of a body already stored.",
    )
    recrawl: Literal["change_rate", "full"] = Field(
        "change_rate",
        description=(
            "Which URLs seen before are fetched again: change_rate, only pages whose "
            "estimated change rate says they changed (the scenario's changed_fraction of "
            "them); full, every one of them, changed or not (bandwidth wasted on unchanged "
            "pages)."
        ),
    )
    canonicalize: bool = Field(
        False,
        description=(
            "Canonicalize URLs before the seen-URL test (lower-case host, drop default "
            "ports, fragments and tracking parameters): a syntactic variant of a known URL "
            "is then recognized and skipped (url_variant) instead of crawled again."
        ),
    )


class DiscoveryConfig(InputModel):
    """The link-discovery loop: fetched pages yield links (the scenario's
    web.links_per_page); a seen-URL set looks up every URL met, seeds and links alike,
    skips the ones already seen, and sends the new ones to the frontier."""

    shards: int = Field(
        description=(
            "Shards of the seen-URL set, split by URL hash; each answers the catalog's "
            "seen_set.shard_rps lookups/s and costs a unit. A hot key (the scenario's "
            "web.hot_key_share) lands on one shard however many there are."
        ),
        gt=0,
        le=10_000,
    )
    service: ServiceTime = Field(
        default_factory=lambda: ServiceTime(mean_ms=1.0),
        description="Lookup time (default 1 ms). Slots = lookup capacity x mean lookup time.",
    )


class RetryPolicy(InputModel):
    """Retries of a DNS lookup or a page write that failed (every slot busy, or the
    resolver or page store down): each waits a backoff, longer each time, then tries again."""

    attempts: int = Field(
        description="Tries in all, the first included (2: one retry), 2 to 20.", ge=2, le=20
    )
    backoff_s: float = Field(
        description="Wait before the first retry, seconds (at least a millisecond).",
        ge=0.001,
        le=3600,
    )
    multiplier: float = Field(
        2.0,
        description="Each further retry waits this many times the one before (1: a fixed wait).",
        ge=1,
        le=10,
    )
    jitter: float = Field(
        0.5,
        description=(
            "Each wait is drawn evenly within plus or minus this share of it (0: the "
            "failures of one instant all come back at one instant)."
        ),
        ge=0,
        lt=1,
    )

    def wait_s(self, retry: int) -> float:
        """The mean wait before retry number ``retry`` (1 for the first)."""
        return self.backoff_s * self.multiplier ** (retry - 1)


class Design(InputModel):
    """A complete crawler capacity design."""

    #: What it counts: URLs (a graph design counts requests).
    unit: ClassVar[Unit] = URLS
    _source: str | None = PrivateAttr(None)  # the file it was loaded from

    name: str | None = Field(
        None, description="Name shown in results; defaults to the file name.", max_length=200
    )
    frontier: FrontierConfig = Field(description="The URL frontier (queue).")
    fetchers: FetchersConfig = Field(description="The fetcher fleet.")
    cache: CacheConfig = Field(
        description=(
            "The DNS + seen-URL cache (with a discovery section, the DNS cache alone: the "
            "seen-URL test is the sharded seen set's, and every page is written, a hit "
            "without a resolver lookup)."
        )
    )
    page_store: PageStoreConfig = Field(description="The page store.")
    async_writer: AsyncWriterConfig | None = Field(
        None, description="Optional write-behind buffer in front of the page store."
    )
    dedup: DedupConfig = Field(
        default_factory=DedupConfig, description="URL and content deduplication."
    )
    retries: RetryPolicy | None = Field(
        None,
        description=(
            "Optional retries of lookups and writes that fail at the resolver or the page "
            "store (a store behind the async writer never fails a write): a failure waits "
            "and tries again, up to attempts tries, and counts as failed only after the "
            "last. Retries add to the load they meet: a tight policy is a retry storm."
        ),
    )
    discovery: DiscoveryConfig | None = Field(
        None,
        description=(
            "Optional link-discovery loop: fetched pages feed their links back through a "
            "sharded seen-URL set to the frontier. Without it the seen test is free and "
            "the frontier's only load is the scenario's."
        ),
    )
