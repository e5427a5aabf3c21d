"""The rubric: each design choice the crawler problem grades, credited from what a run
measured, not from keywords.

``grade(result)`` returns one :class:`Grade` per rubric item: full, partial or no credit,
the measurement that earned it, and the trap answer when the design took one. Items the
model cannot express yet are listed as ``not gradable`` with the reason, so a missing lever
is never mistaken for a passed item. Crawler designs only: the rubric is the crawler
problem's.

The frontier measures (:func:`politeness_violations`, :func:`high_priority_served`) follow
from the frontier's per-tick hand-outs and the scenario's web: URLs spread over hosts by a
Zipf law (``web.host_zipf``) and a share ``web.high_priority_share`` of them in the high
band. A two-stage frontier keeps one host per back queue and hands a host out at most
once per crawl delay, and serves the high band first; a global FIFO hands out in arrival
order, whatever the host or band.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from gym.models import CrashFault, Design, SlowdownFault, StallFault

if TYPE_CHECKING:
    from gym.models import Scenario
    from gym.record import RunRecord
    from gym.result import Result

Credit = Literal["full", "partial", "none", "untested", "not gradable"]

#: Hosts whose share is computed one by one; the rest by a second-order sum.
EXACT_HOSTS = 100_000


@dataclass(frozen=True)
class Grade:
    """One rubric item: its credit and the measurement that earned it."""

    item: str
    credit: Credit
    measured: str
    trap: str | None = None  # the trap answer the design took, named

    def to_json(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "credit": self.credit,
            "measured": self.measured,
            "trap": self.trap,
        }


def _host_shares(hosts: int, zipf: float) -> tuple[np.ndarray, float]:
    """The shares of the busiest hosts (at most EXACT_HOSTS, rank 1 first) and the sum of
    the squared shares of all the others (for the second-order tail)."""
    k = min(hosts, EXACT_HOSTS)
    ranks = np.arange(1, k + 1, dtype=np.float64)
    head = ranks**-zipf
    # The tail's sums, from the integral of x^-a between k + 1/2 and hosts + 1/2.
    lo, hi = k + 0.5, hosts + 0.5

    def integral(a: float) -> float:
        if hosts <= k:
            return 0.0
        if abs(a - 1.0) < 1e-12:
            return math.log(hi / lo)
        return float((hi ** (1 - a) - lo ** (1 - a)) / (1 - a))

    total = float(head.sum()) + integral(zipf)
    tail_sq = integral(2 * zipf) / total**2
    return head / total, tail_sq


def politeness_violations(record: RunRecord, design: Design, scenario: Scenario) -> float:
    """Expected fetches of a host sooner than its crawl delay after the previous one.

    A two-stage frontier makes none: one host per back queue, each handed out at most once
    per crawl delay. A global FIFO hands out n URLs in a crawl delay's window in arrival
    order; host h gets Binomial(n, p_h) of them, of which all but the first come too soon:
    E[max(0, X - 1)] = n p_h - 1 + (1 - p_h)^n, summed over the hosts (the busiest ones
    exactly, the rest to second order, (n p_h)^2 / 2) and over the run's windows.
    """
    if design.frontier.structure == "two_stage":
        return 0.0
    tl = record.timeline
    per = max(1, round(scenario.web.crawl_delay_s * 1000 / tl.tick_ms))
    handed = record.components["frontier"].processed
    n_windows = math.ceil(len(handed) / per)
    padded = np.zeros(n_windows * per, dtype=np.int64)
    padded[: len(handed)] = handed
    counts = padded.reshape(n_windows, per).sum(axis=1).astype(np.float64)
    shares, tail_sq = _host_shares(scenario.web.hosts, scenario.web.host_zipf)
    total = 0.0
    for n, times in zip(*np.unique(counts[counts > 1], return_counts=True), strict=True):
        head = n * shares - 1.0 + np.power(1.0 - shares, n)
        total += times * (float(head.sum()) + n * n * tail_sq / 2.0)
    return total


def high_priority_served(record: RunRecord, design: Design, scenario: Scenario) -> float | None:
    """The share of high-priority URLs the frontier handed out (of those it admitted).

    A two-stage frontier serves its high band first: by each tick it has handed out
    min(high URLs admitted so far, all it handed out). A global FIFO hands them out in
    arrival order with the rest, the same share as every other URL. None without any.
    """
    front = record.components["frontier"]
    skipped = sum((a for a in front.skipped.values()), np.zeros_like(front.arrived))
    admitted = np.cumsum(front.arrived - skipped).astype(np.float64)
    handed = np.cumsum(front.processed).astype(np.float64)
    share = scenario.web.high_priority_share
    high = share * admitted[-1] if len(admitted) else 0.0
    if high <= 0:
        return None
    if design.frontier.structure == "global_fifo":
        return float(handed[-1] / admitted[-1])
    return float(np.minimum(share * admitted, handed)[-1] / high)


def grade(result: Result) -> list[Grade]:
    """Every rubric item for a crawler design's run (see the module docstring)."""
    design = result.design
    assert isinstance(design, Design), "the rubric grades crawler designs"
    m = result.metrics
    record, scenario = m.record, result.scenario
    return [
        _frontier(record, design, scenario),
        _dedup(record, design, scenario),
        _decoupled_writes(result),
        _spare_fetcher(result),
        _dns_caching(result),
        _storage(result),
        _recrawl(record, design, scenario),
    ]


def _frontier(record: RunRecord, design: Design, scenario: Scenario) -> Grade:
    violations = politeness_violations(record, design, scenario)
    high = high_priority_served(record, design, scenario)
    front = record.components["frontier"]
    admitted = int(front.arrived.sum() - sum(int(a.sum()) for a in front.skipped.values()))
    every = front.processed.sum() / admitted if admitted else 1.0
    served = (
        f"high-priority URLs handed out: {high:.1%} (every URL: {every:.1%})"
        if high is not None
        else "no high-priority URLs in this scenario"
    )
    delay = scenario.web.crawl_delay_s
    if design.frontier.structure == "two_stage":
        return Grade(
            "frontier structure",
            "full",
            f"two-stage frontier: 0 fetches of a host sooner than its {delay:g} s crawl "
            f"delay; {served}",
        )
    return Grade(
        "frontier structure",
        "partial",
        f"global FIFO: about {violations:,.0f} fetches of a host sooner than its {delay:g} s "
        f"crawl delay (popular hosts, web.host_zipf {scenario.web.host_zipf:g}); {served}",
        trap="global FIFO: fast, but impolite to popular hosts and blind to priority",
    )


def _dedup(record: RunRecord, design: Design, scenario: Scenario) -> Grade:
    totals = record.skipped_by_cause()
    seen = totals.get("seen_url", 0)
    mistaken = totals.get("bloom_false_positive", 0)
    saved = int(record.components["resolver"].extra.get("writes_saved", np.zeros(1)).sum())
    kind = "Bloom filter" if design.dedup.seen_set == "bloom" else "exact set"
    layers = [f"seen-URL {kind}: {seen:,} URLs skipped as seen"]
    if mistaken:
        layers[0] += f" ({mistaken:,} new URLs skipped by mistake)"
    variants = totals.get("url_variant", 0)
    missing = []
    if design.dedup.canonicalize:
        layers.append(f"URL canonicalization: {variants:,} variants of known URLs skipped")
    else:
        # Crawled again: the scenario's share of the new URLs that the frontier handed out.
        handed = int(record.components["frontier"].processed.sum())
        again = scenario.dedup.variant_fraction * handed
        missing.append(f"URL canonicalization (about {again:,.0f} variants fetched again)")
    if design.dedup.content_hash:
        layers.append(f"content hash: {saved:,} duplicate bodies not written")
    else:
        missing.append("content hashing of page bodies")
    measured = "; ".join(layers) + ("; missing: " + ", ".join(missing) if missing else "")
    credit: Credit = "partial" if missing else "full"
    world = scenario.dedup
    if not (world.seen_url_fraction or world.variant_fraction or world.duplicate_body_fraction):
        measured += " (this scenario offers no seen URLs, variants or duplicate bodies)"
    return Grade("dedup layers", credit, measured)


def _fault_windows(result: Result, kinds: tuple[type, ...], target: str) -> list[tuple[int, int]]:
    tl = result.metrics.record.timeline
    out = []
    for fault in result.scenario.faults:
        if isinstance(fault, kinds) and fault.target == target:
            start, end = tl.fault_ticks(fault)
            out.append((start, tl.n_ticks if end is None else min(end, tl.n_ticks)))
    return out


def _lost(counts: np.ndarray, windows: list[tuple[int, int]]) -> int:
    return sum(int(counts[a:b].sum()) for a, b in windows)


def _recrawl(record: RunRecord, design: Design, scenario: Scenario) -> Grade:
    world = scenario.dedup
    offered = int(record.offered.sum())
    seen = world.seen_url_fraction * offered
    if not seen:
        return Grade("recrawl policy", "untested", "this scenario offers no URLs crawled before")
    changed = seen * world.changed_fraction
    unchanged = seen - changed
    kb = world.page_kb
    if design.dedup.recrawl == "full":
        return Grade(
            "recrawl policy",
            "none",
            f"every page seen before fetched again: about {unchanged:,.0f} of them unchanged, "
            f"{unchanged * kb / 1e6:,.1f} GB of bandwidth wasted (and {changed:,.0f} changed "
            "ones refreshed)",
            trap="recrawl everything: most of the bandwidth goes to pages that did not change",
        )
    skipped = record.skipped_by_cause().get("seen_url", 0)
    return Grade(
        "recrawl policy",
        "full",
        f"by change rate: about {changed:,.0f} changed pages fetched again, {skipped:,} "
        f"unchanged ones skipped ({skipped * kb / 1e6:,.1f} GB not fetched)",
    )


def _decoupled_writes(result: Result) -> Grade:
    design = result.design
    assert isinstance(design, Design)
    record = result.metrics.record
    windows = _fault_windows(result, (StallFault, SlowdownFault), "page_store")
    store = record.components["page_store"]
    lost = sum(_lost(v, windows) for v in store.failed.values())
    if not windows:
        return Grade(
            "decoupled writes",
            "untested",
            "this scenario has no page-store stall or slowdown to test it",
        )
    if design.async_writer is None:
        return Grade(
            "decoupled writes",
            "none",
            f"no async writer: {lost:,} page writes lost while the page store was stalled "
            "or slowed",
        )
    writer = record.components["async_writer"]
    held = _lost(writer.extra["held_in"], windows)
    overflow = _lost(writer.failed["writer_overflow"], windows)
    credit: Credit = "full" if lost + overflow == 0 else "partial"
    return Grade(
        "decoupled writes",
        credit,
        f"async writer: {held:,} writes held while the page store was stalled or slowed, "
        f"{lost + overflow:,} lost",
    )


def _spare_fetcher(result: Result) -> Grade:
    m = result.metrics
    record = m.record
    windows = _fault_windows(result, (CrashFault,), "fetchers")
    if not windows:
        return Grade("N+1 fetchers", "untested", "this scenario crashes no fetcher replica")
    overflow = _lost(record.components["frontier"].failed["frontier_overflow"], windows)
    crash = _lost(record.components["fetchers"].failed["crash_loss"], windows)
    tl = record.timeline
    per = tl.ticks_per_window
    sat = m.components["fetchers"].saturation
    during = [sat[w] for a, b in windows for w in range(a // per, max(a // per + 1, b // per))]
    worst = max((float(x) for x in during if not math.isnan(x)), default=0.0)
    live = int(record.components["fetchers"].extra["live"][windows[0][0]])
    if overflow == 0 and worst <= 1.0:
        credit: Credit = "full"
    else:
        credit = "none"
    measured = (
        f"with {live} replica{'s' if live != 1 else ''} left after the crash: fetchers' peak "
        f"saturation {worst:.2f}, {overflow:,} URLs overflowed the frontier meanwhile"
    )
    if crash:
        measured += f"; {crash:,} fetches in flight lost (on_crash: requeue keeps them)"
    return Grade("N+1 fetchers", credit, measured)


def _storage(result: Result) -> Grade:
    design = result.design
    assert isinstance(design, Design)
    from gym.costing import page_store_in_effect, page_store_units

    m = result.metrics
    cat = result.scenario.catalog
    store = design.page_store
    lost = m.failed_by_cause.get("store_overload", 0)
    peak = np.nanmax(m.components["page_store"].saturation, initial=0.0)
    units = page_store_units(design, cat)
    if store.layout == "split":
        return Grade(
            "storage split",
            "full",
            f"page bodies in object storage, URL metadata in a key-value store: "
            f"{store.rps:,.0f} writes/s for {units} unit{'s' if units != 1 else ''}, peak "
            f"saturation {peak:.2f}, {lost:,} writes lost to overload",
        )
    runs = page_store_in_effect(design, cat).rps
    split = design.model_copy(update={"page_store": store.model_copy(update={"layout": "split"})})
    return Grade(
        "storage split",
        "none",
        f"bodies as rows of one relational table: {store.rps:,.0f} writes/s asked for "
        f"{units} units ({page_store_units(split, cat)} in object storage), and the table "
        f"takes at most {runs:,.0f}/s: peak saturation {peak:.2f}, {lost:,} writes lost to "
        "overload",
        trap="blobs in a relational table: it costs more and stops at one primary's writes",
    )


def _dns_caching(result: Result) -> Grade:
    design = result.design
    assert isinstance(design, Design)
    m = result.metrics
    lost = m.failed_by_cause.get("resolver_overload", 0)
    peak = np.nanmax(m.components["resolver"].saturation, initial=0.0)
    hit = design.cache.hit_ratio
    measured = (
        f"cache hit ratio {hit:g}: the resolver's peak saturation {peak:.2f}, "
        f"{lost:,} lookups lost to its overload"
    )
    if lost == 0 and peak <= 1.0:
        return Grade("DNS caching", "full", measured)
    credit: Credit = "partial" if hit > 0 else "none"
    return Grade("DNS caching", credit, measured)


def credit_points(grades: list[Grade]) -> tuple[float, int]:
    """Points over the gradable items: full 1, partial 0.5, none 0; and how many count."""
    points = {"full": 1.0, "partial": 0.5, "none": 0.0}
    counted = [g for g in grades if g.credit in points]
    return sum(points[g.credit] for g in counted), len(counted)
