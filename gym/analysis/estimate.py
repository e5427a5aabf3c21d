"""Back-of-the-envelope figures an engineer works out before drawing boxes.

Every figure carries the formula that gave it. Units are decimal: 1 KB = 1,000 bytes,
1 GB = 10^9 bytes, 1 TB = 10^12 bytes, 1 Gbps = 10^9 bits per second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from gym.core.errors import GymError, Problem
from gym.models import Design, Scenario

#: Each input's range (inclusive), and the ``gym estimate`` option that sets it.
_RANGES: dict[str, tuple[float, float, str]] = {
    "pages_per_s": (0, 1e9, "--pages-per-s"),
    "peak_pages_per_s": (0, 1e12, "--pages-per-s"),
    "page_kb": (0, 1e6, "--page-kb"),
    "compression": (1, 1e3, "--compression"),
    "urls": (1, 1e13, "--urls"),
    "fp_rate": (1e-12, 0.999, "--fp"),
    "hit_ratio": (0, 1, "cache.hit_ratio"),
    "crawl_delay_s": (0.001, 3600, "web.crawl_delay_s"),
}

#: Seconds in a day.
_DAY = 86_400


@dataclass(frozen=True)
class Inputs:
    """What the estimate starts from (defaults: docs/specification.md section 1)."""

    pages_per_s: float = 6_000
    peak_pages_per_s: float = 12_000
    page_kb: float = 100
    compression: float = 5
    urls: float = 1e9
    fp_rate: float = 0.01
    hit_ratio: float = 0.92
    crawl_delay_s: float = 1.0

    def __post_init__(self) -> None:
        """Every input a finite number in its range: no figure is infinite or NaN."""
        problems: list[Problem] = []
        for f in fields(self):
            value = getattr(self, f.name)
            low, high, option = _RANGES[f.name]
            if any(p.field == option for p in problems):
                continue  # the peak follows from the base: one line is enough
            if isinstance(value, bool) or not isinstance(value, int | float):
                problems.append(Problem(None, option, f"must be a number (got {value!r})"))
            elif not (math.isfinite(value) and low <= value <= high):
                problems.append(
                    Problem(None, option, f"must be from {low:g} to {high:g} (got {value:g})")
                )
        if problems:
            raise GymError(problems)

    @classmethod
    def of(
        cls,
        scenario: Scenario,
        design: Design | None = None,
        *,
        pages_per_s: float | None = None,
        **figures: float,
    ) -> Inputs:
        """The inputs a scenario (and optionally a design) give: base load (unless
        ``pages_per_s``), peak = base x the largest load multiplier, the design's hit ratio
        (else the catalog's base), the crawl delay; ``figures`` set the rest."""
        base = scenario.base_rps if pages_per_s is None else pages_per_s
        return cls(
            pages_per_s=base,
            peak_pages_per_s=base * max(stage.multiplier for stage in scenario.load),
            hit_ratio=(
                design.cache.hit_ratio
                if design is not None
                else scenario.catalog.cache.base_hit_ratio
            ),
            crawl_delay_s=scenario.web.crawl_delay_s,
            **figures,
        )


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    value: float
    unit: str
    formula: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def estimate(i: Inputs) -> list[Figure]:
    """Every figure, with its formula."""
    return [*_volume(i), *_bandwidth(i), *_storage(i), *_dedup(i), *_dns(i), *_politeness(i)]


def _volume(i: Inputs) -> list[Figure]:
    """Pages fetched per day and per 30-day month at the base rate."""
    return [
        Figure(
            "pages_per_day",
            "pages per day",
            i.pages_per_s * _DAY,
            "pages",
            f"{i.pages_per_s:,.0f} pages/s x 86,400 s",
        ),
        Figure(
            "pages_per_month",
            "pages per 30-day month",
            i.pages_per_s * _DAY * 30,
            "pages",
            "pages per day x 30",
        ),
    ]


def _bandwidth(i: Inputs) -> list[Figure]:
    """Download bandwidth at base and at peak, in MB/s and in Gbps."""
    return [
        Figure(
            "bandwidth_base_MBps",
            "download bandwidth at base",
            i.pages_per_s * i.page_kb / 1e3,
            "MB/s",
            f"{i.pages_per_s:,.0f} pages/s x {i.page_kb:g} KB",
        ),
        Figure(
            "bandwidth_base_Gbps",
            "download bandwidth at base",
            i.pages_per_s * i.page_kb * 8 / 1e6,
            "Gbps",
            "MB/s x 8 bits / 1,000",
        ),
        Figure(
            "bandwidth_peak_MBps",
            "download bandwidth at peak",
            i.peak_pages_per_s * i.page_kb / 1e3,
            "MB/s",
            f"{i.peak_pages_per_s:,.0f} pages/s x {i.page_kb:g} KB",
        ),
        Figure(
            "bandwidth_peak_Gbps",
            "download bandwidth at peak",
            i.peak_pages_per_s * i.page_kb * 8 / 1e6,
            "Gbps",
            "MB/s x 8 bits / 1,000",
        ),
    ]


def _storage(i: Inputs) -> list[Figure]:
    """Page storage per day, raw and compressed."""
    raw_day = i.pages_per_s * _DAY * i.page_kb * 1e3
    return [
        Figure(
            "storage_raw_TB_per_day",
            "raw page storage per day",
            raw_day / 1e12,
            "TB",
            f"pages per day x {i.page_kb:g} KB",
        ),
        Figure(
            "storage_compressed_TB_per_day",
            "compressed page storage per day",
            raw_day / i.compression / 1e12,
            "TB",
            f"raw per day / {i.compression:g} (HTML compresses about {i.compression:g}:1)",
        ),
    ]


def _dedup(i: Inputs) -> list[Figure]:
    """The seen set: a Bloom filter's bits, hashes and memory, and an exact set's memory."""
    bits = -math.log(i.fp_rate) / math.log(2) ** 2
    return [
        Figure(
            "bloom_bits_per_url",
            "Bloom filter bits per URL",
            bits,
            "bits",
            f"-ln(p) / (ln 2)^2 with p = {i.fp_rate:g}",
        ),
        Figure(
            "bloom_hashes",
            "Bloom filter hash functions",
            max(1, round(bits * math.log(2))),
            "hashes",
            "round(bits per URL x ln 2)",
        ),
        Figure(
            "bloom_memory_GB",
            f"Bloom filter for {i.urls:,.0f} URLs",
            i.urls * bits / 8 / 1e9,
            "GB",
            "URLs x bits per URL / 8",
        ),
        Figure(
            "exact_set_memory_GB",
            f"exact set of 64-bit fingerprints for {i.urls:,.0f} URLs",
            i.urls * 8 / 1e9,
            "GB",
            "URLs x 8 bytes (a lower bound: a hash table adds 50-100%)",
        ),
    ]


def _dns(i: Inputs) -> list[Figure]:
    """Fresh DNS resolutions (the cache's misses) at base and at peak."""
    return [
        Figure(
            "fresh_dns_per_s",
            "fresh DNS resolutions at base",
            i.pages_per_s * (1 - i.hit_ratio),
            "lookups/s",
            f"{i.pages_per_s:,.0f} pages/s x (1 - hit ratio {i.hit_ratio:g})",
        ),
        Figure(
            "fresh_dns_peak_per_s",
            "fresh DNS resolutions at peak",
            i.peak_pages_per_s * (1 - i.hit_ratio),
            "lookups/s",
            f"{i.peak_pages_per_s:,.0f} pages/s x (1 - hit ratio {i.hit_ratio:g})",
        ),
    ]


def _politeness(i: Inputs) -> list[Figure]:
    """Hosts in flight at base and at peak, each held for the crawl delay."""
    return [
        Figure(
            "hosts_in_flight",
            "hosts in flight at base (politeness)",
            i.pages_per_s * i.crawl_delay_s,
            "hosts",
            f"{i.pages_per_s:,.0f} pages/s x {i.crawl_delay_s:g} s crawl delay per host",
        ),
        Figure(
            "hosts_in_flight_peak",
            "hosts in flight at peak",
            i.peak_pages_per_s * i.crawl_delay_s,
            "hosts",
            f"{i.peak_pages_per_s:,.0f} pages/s x {i.crawl_delay_s:g} s crawl delay per host",
        ),
    ]
