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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from gym.models import CrashFault, Design, SlowdownFault, StallFault
from gym.system.compiled import addons

if TYPE_CHECKING:
    from gym.analysis.result import Result
    from gym.models import Scenario
    from gym.sim.record import RunRecord

Credit = Literal["full", "partial", "none", "untested", "not gradable"]

#: Hosts whose share is computed one by one; the rest in log-spaced groups of ranks.
EXACT_HOSTS = 1_000
HOST_GROUPS = 2_000


@dataclass(frozen=True)
class Grade:
    """One rubric item: its credit and the measurement that earned it."""

    item: str
    credit: Credit
    measured: str
    trap: str | None = None  # the trap answer the design took, named

    def to_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "credit": self.credit,
            "measured": self.measured,
            "trap": self.trap,
        }


def host_groups(hosts: int, zipf: float) -> tuple[np.ndarray, np.ndarray]:
    """Host shares under the Zipf law, as (share of one host, hosts with that share): the
    busiest EXACT_HOSTS one by one, the rest in HOST_GROUPS log-spaced groups of ranks,
    each at the share of its geometric middle rank (shares change slowly there)."""
    k = min(hosts, EXACT_HOSTS)
    ranks = np.arange(1, k + 1, dtype=np.float64)
    counts = np.ones(k)
    if hosts > k:
        edges = np.unique(np.geomspace(k + 1, hosts + 1, HOST_GROUPS + 1).round())
        lo, hi = edges[:-1], edges[1:]
        ranks = np.concatenate([ranks, np.sqrt(lo * (hi - 1))])
        counts = np.concatenate([counts, hi - lo])
    weight = ranks**-zipf
    return weight / float((weight * counts).sum()), counts


def politeness_violations(record: RunRecord, design: Design, scenario: Scenario) -> float:
    """Expected fetches of a host sooner than its crawl delay after its previous fetch.

    A two-stage frontier makes none by construction: one host per back queue, each handed
    out at most once per crawl delay. A global FIFO hands URLs out in arrival order: a
    fetch in tick k is of host h with chance p_h, and comes too soon if host h was among
    the w_k URLs handed out in the crawl delay before it (hand-outs spread evenly within
    each tick, w_k taken at the middle of the tick, less the fetch itself). So tick k's
    m_k fetches make
    m_k (1 - sum_h p_h (1 - p_h)^w_k) violations, summed over the run.
    """
    if design.frontier.structure == "two_stage":
        return 0.0
    tl = record.timeline
    front = record.components["frontier"]
    # Each URL handed out once: a crash's requeued fetches go out again.
    handed = front.processed - front.extra.get("requeued", np.zeros_like(front.processed))
    handed = np.maximum(handed, 0).astype(np.float64)
    edges = np.arange(len(handed) + 1) * tl.tick_s  # cumulative hand-outs at tick edges
    cum = np.concatenate([[0.0], np.cumsum(handed)])
    middle = edges[:-1] + tl.tick_s / 2
    before = np.interp(middle - scenario.web.crawl_delay_s, edges, cum, left=0.0)
    # The URLs handed out in the crawl delay before a fetch, less the fetch itself: with
    # m evenly spaced fetches, the cumulative count at a fetch holds half of its own.
    window = np.maximum(np.interp(middle, edges, cum) - before - 0.5, 0.0)
    shares, counts = host_groups(scenario.web.hosts, scenario.web.host_zipf)
    weights = shares * counts
    log_keep = np.log1p(-np.minimum(shares, 1.0 - 1e-15))
    busy = np.flatnonzero(handed > 0)
    # Ticks of one window length share their chance: worked out once per length (a
    # frontier draining steadily hands out the same count tick after tick).
    lengths, which = np.unique(window[busy], return_inverse=True)
    unseen = np.empty(len(lengths))
    for chunk in np.array_split(np.arange(len(lengths)), max(1, len(lengths) // 256)):
        if chunk.size:
            unseen[chunk] = np.exp(np.outer(lengths[chunk], log_keep)) @ weights
    return float((handed[busy] * (1.0 - unseen[which])).sum())


def _frontier_totals(record: RunRecord) -> tuple[float, float]:
    """URLs the frontier handed out (each once: a crash's requeued fetches go out again)
    and URLs it admitted (what arrived less what its seen set skipped)."""
    front = record.components["frontier"]
    skipped = sum(int(a.sum()) for a in front.skipped.values())
    requeued = int(front.extra.get("requeued", np.zeros(1)).sum())
    return float(front.processed.sum() - requeued), float(front.arrived.sum() - skipped)


def high_priority_served(record: RunRecord, design: Design, scenario: Scenario) -> float | None:
    """The share of the high-priority URLs admitted that the frontier handed out.

    A two-stage frontier serves its high band first (and, when full, drops low-priority
    URLs first): it hands out min(high URLs admitted, all it handed out). A global FIFO
    hands them out, and drops them, in arrival order with the rest: the same share as
    every URL. None when no high-priority URL was admitted. The end-of-run share only:
    how long each band waited is not measured.
    """
    handed, admitted = _frontier_totals(record)
    high = scenario.web.high_priority_share * admitted
    if high <= 0:
        return None
    if design.frontier.structure == "global_fifo":
        return handed / admitted
    return min(high, handed) / high


def grade(result: Result) -> list[Grade]:
    """Every rubric item for a crawler design's run (see the module docstring)."""
    crawler = addons(result.design)
    if crawler is None:
        raise ValueError("the rubric grades crawler designs")
    design = crawler.design
    m = result.metrics
    record, scenario = m.record, result.scenario
    return [
        _frontier(record, design, scenario),
        _dedup(record, design, scenario),
        _decoupled_writes(result, design),
        _spare_fetcher(result),
        _dns_caching(result, design),
        _storage(result, design),
        _recrawl(record, design, scenario),
    ]


def _frontier(record: RunRecord, design: Design, scenario: Scenario) -> Grade:
    violations = politeness_violations(record, design, scenario)
    high = high_priority_served(record, design, scenario)
    handed, admitted = _frontier_totals(record)
    every = handed / admitted if admitted else 1.0
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
            f"two-stage frontier: no fetch of a host sooner than its {delay:g} s crawl "
            f"delay (one host per back queue, by construction); {served}",
        )
    return Grade(
        "frontier structure",
        "partial",
        f"global FIFO: about {violations:,.0f} fetches of a host sooner than its {delay:g} s "
        f"crawl delay ({scenario.web.hosts:,} hosts, web.host_zipf "
        f"{scenario.web.host_zipf:g}); {served}",
        trap="global FIFO: fast, but impolite to popular hosts and blind to priority",
    )


def _dedup(record: RunRecord, design: Design, scenario: Scenario) -> Grade:
    totals = record.skipped_by_cause()
    seen = totals.get("seen_url", 0)
    mistaken = totals.get("bloom_false_positive", 0)
    saved = record.writes_saved()
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
    if "seen_set" in record.components:  # the link-discovery loop's sharded seen set
        lost = int(record.components["seen_set"].failed["seen_set_overload"].sum())
        assert design.discovery is not None
        shards = design.discovery.shards
        layers[0] += f", {shards} shard{'s' if shards > 1 else ''}"
        if lost:
            missing.append(f"seen-set lookup capacity ({lost:,} new URLs lost to overload)")
    measured = "; ".join(layers) + ("; missing: " + ", ".join(missing) if missing else "")
    credit: Credit = "partial" if missing else "full"
    world = scenario.dedup
    links = record.links_found()
    tested = links and scenario.web.links_seen_fraction
    if (
        not (world.seen_url_fraction or world.variant_fraction or world.duplicate_body_fraction)
        and not tested
    ):
        return Grade(
            "dedup layers",
            "untested",
            f"{measured} (this scenario offers no seen URLs, variants or duplicate bodies)",
        )
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


@dataclass(frozen=True)
class Recrawl:
    """What a run's recrawl policy did, counted from the URLs the frontier handed out to
    the fetchers (not the URLs offered: those that overflowed the frontier or were still
    queued at the end were never fetched, whatever the policy).

    The frontier does not tell a recrawled URL from a new one: it hands out, and drops,
    the URLs it admitted alike, so the URLs it handed out are a sample of what it admitted
    (``seed_share`` of them seeds, ``seen_share`` of those seeds crawled before).
    """

    policy: Literal["change_rate", "full"]
    offered: int  # seed URLs offered (the source's load; links found on pages excluded)
    #: URLs the frontier handed out to the fetchers, each once (a crash's requeued fetches
    #: go out again, not counted twice); fetches a crash lost in flight, and those still in
    #: flight at the end, were handed out and are counted: their pages were being fetched.
    fetched: float
    seed_share: float  # of those, the seeds (1 without the link-discovery loop)
    seen_share: float  # of the seeds let in, the share crawled before
    unchanged_share: float  # of those, the share whose page did not change
    let_in: float  # the share of the seeds the seen test lets in (1 - seen_skipped)
    skipped: float  # seeds the seen test skipped as seen (unchanged), not fetched
    page_kb: float

    @property
    def recrawled(self) -> float:
        """Pages seen before that were fetched again."""
        return self.fetched * self.seed_share * self.seen_share

    @property
    def unchanged(self) -> float:
        """Pages fetched again that had not changed: the bandwidth wasted."""
        return self.recrawled * self.unchanged_share

    @property
    def changed(self) -> float:
        """Pages fetched again that had changed: refreshed."""
        return self.recrawled - self.unchanged


def recrawl_counts(record: RunRecord, design: Design, scenario: Scenario) -> Recrawl | None:
    """The recrawl's pages from what reached the fetchers, or None when the scenario
    offers no URL crawled before (a share ``dedup.seen_url_fraction`` s of the seeds).

    The seen test skips a share k = seen_skipped of the seeds: none with ``recrawl:
    full``, the unchanged s (1 - c) by change rate (c: ``dedup.changed_fraction``). The
    variant and Bloom tests after it, and a loss at the seen set, take the seeds let in
    alike, so of the seeds the frontier admits a share (s - k) / (1 - k) was crawled
    before: s with a full recrawl, (1 - c) of them unchanged; s c / (1 - s (1 - c)) by
    change rate, all changed. Of the URLs handed out, fetched x seed share x that share
    are pages fetched again. Links found on pages are new URLs or skipped as seen under
    either policy, never recrawled: with the link-discovery loop the seed share is the
    seeds' part of what the seen set let through.
    """
    from gym.system.crawler import seen_skipped

    world = scenario.dedup
    seeds = int(record.offered.sum()) - record.links_found()
    s, c = world.seen_url_fraction, world.changed_fraction
    if not (s and seeds):
        return None
    fetched, _ = _frontier_totals(record)
    k = seen_skipped(design, scenario)
    seen = record.skipped_by_cause().get("seen_url", 0)
    skipped, seed_share = float(seen), 1.0
    if "seen_set" in record.components:
        # The seen set tests the links too: a share web.links_seen_fraction of those that
        # reached it are skipped as seen whatever the policy. The rest of its seen skips
        # are the seeds' (every seed reaches it: no delay from the source).
        tested = int(record.components["seen_set"].arrived.sum())
        links = max(tested - seeds, 0)
        skipped = max(seen - scenario.web.links_seen_fraction * links, 0.0)
        # What the seen test let through, seeds and links; the later tests take both alike.
        through = tested - seen
        seed_share = (seeds - skipped) / through if through > 0 else 1.0
    full = design.dedup.recrawl == "full"
    return Recrawl(
        policy=design.dedup.recrawl,
        offered=seeds,
        fetched=fetched,
        seed_share=min(max(seed_share, 0.0), 1.0),
        seen_share=(s - k) / (1.0 - k),
        unchanged_share=1.0 - c if full else 0.0,
        let_in=1.0 - k,
        skipped=skipped,
        page_kb=world.page_kb,
    )


def _pct(x: float) -> str:
    """A share as a percentage: whole when it is one, else to a tenth."""
    return f"{x:.0%}" if abs(x * 100 - round(x * 100)) < 1e-9 else f"{x:.1%}"


def _gb(pages: float, kb: float) -> str:
    """``pages`` of ``kb`` KB each, in GB (10^6 KB), to about three figures."""
    gb = pages * kb / 1e6
    return f"{gb:,.0f} GB" if gb >= 100 else f"{gb:.1f} GB" if gb >= 10 else f"{gb:.2f} GB"


def _recrawl(record: RunRecord, design: Design, scenario: Scenario) -> Grade:
    r = recrawl_counts(record, design, scenario)
    if r is None:
        return Grade("recrawl policy", "untested", "this scenario offers no URLs crawled before")
    world = scenario.dedup
    s, c, kb = world.seen_url_fraction, world.changed_fraction, r.page_kb
    fetched = f"{r.fetched:,.0f} URLs handed out to the fetchers"
    if "seen_set" in record.components:  # the link-discovery loop: seeds and links
        fetched += (
            f" (of {r.offered:,} seeds offered) x {_pct(r.seed_share)} seeds (the rest "
            "links found on pages)"
        )
    else:
        fetched += f" (of {r.offered:,} offered)"
    if r.policy == "full":
        return Grade(
            "recrawl policy",
            "none",
            f"every page seen before fetched again: {fetched} x {_pct(r.seen_share)} seen "
            f"before x {_pct(r.unchanged_share)} unchanged = about {r.unchanged:,.0f} pages x "
            f"{kb:g} KB = {_gb(r.unchanged, kb)} of bandwidth wasted (and the {_pct(c)} "
            "changed, about "
            f"{r.changed:,.0f} pages, refreshed)",
            trap="recrawl everything: most of the bandwidth goes to pages that did not change",
        )
    # By change rate the seen test skips the unchanged pages at the frontier's door (the
    # seen set's, with the link-discovery loop), before its buffer: every URL counted
    # there reached it and none was fetched, whether the frontier later overflowed or
    # not, so the measured skips are credited as they are. They are pages not fetched,
    # not bandwidth saved against a full recrawl: that one would have fetched no more
    # than its fetchers could take. The changed pages fetched again are counted from
    # what was handed out, like a full recrawl's.
    return Grade(
        "recrawl policy",
        "full",
        f"by change rate: {fetched} x {_pct(r.seen_share)} seen before and changed "
        f"({_pct(s)} x {_pct(c)} = {_pct(s * c)} of the seeds, of the {_pct(r.let_in)} "
        "the seen test lets in) = about "
        f"{r.changed:,.0f} pages fetched again; {r.skipped:,.0f} unchanged ones skipped "
        f"as seen x {kb:g} KB = {_gb(r.skipped, kb)} not fetched",
    )


def _decoupled_writes(result: Result, design: Design) -> Grade:
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
            "none" if lost else "untested",
            f"no async writer: {lost:,} page writes lost while the page store was stalled "
            "or slowed" + ("" if lost else " (its faults in this scenario cost nothing)"),
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
    tl = record.timeline
    windows = [(a, b) for a, b in _fault_windows(result, (CrashFault,), "fetchers") if a < b]
    if not windows:
        return Grade("N+1 fetchers", "untested", "this scenario crashes no fetcher replica")
    overflow = _lost(record.components["frontier"].failed["frontier_overflow"], windows)
    crash = _lost(record.components["fetchers"].failed["crash_loss"], windows)
    per = tl.ticks_per_window
    cw = m.components["fetchers"]
    during = sorted(
        {w for a, b in windows for w in range(a // per, min(len(cw.saturation), -(-b // per)))}
    )
    down = any(bool(cw.outage[w]) for w in during)  # every replica down: capacity 0
    worst = max((float(cw.saturation[w]) for w in during if not cw.outage[w]), default=0.0)
    live = int(record.components["fetchers"].extra["live"][windows[0][0]])
    ok = overflow == 0 and worst <= 1.0 and not down
    credit: Credit = "full" if ok else "none"
    left = f"with {live} replica{'s' if live != 1 else ''} left after the crash"
    if len(windows) > 1:
        left = f"over {len(windows)} crashes ({live} replicas left after the first)"
    measured = (
        f"{left}: no fetcher capacity at all for a while"
        if down
        else f"{left}: fetchers' peak saturation {worst:.2f}"
    ) + f", {overflow:,} URLs overflowed the frontier meanwhile"
    if crash:
        measured += f"; {crash:,} fetches in flight lost (on_crash: requeue keeps them)"
    return Grade("N+1 fetchers", credit, measured)


def _storage(result: Result, design: Design) -> Grade:
    from gym.system.costing import page_store_units
    from gym.system.crawler import page_store_in_effect

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
        f"{units} unit{'s' if units != 1 else ''} ({page_store_units(split, cat)} in object "
        "storage), and the table "
        f"takes at most {runs:,.0f}/s: peak saturation {peak:.2f}, {lost:,} writes lost to "
        "overload",
        trap="blobs in a relational table: it costs more at scale and stops at one "
        "primary's writes",
    )


def _dns_caching(result: Result, design: Design) -> Grade:
    m = result.metrics
    lost = m.failed_by_cause.get("resolver_overload", 0)
    peak = np.nanmax(m.components["resolver"].saturation, initial=0.0)
    hit = design.cache.hit_ratio
    measured = (
        f"cache hit ratio {hit:g}: the resolver's peak saturation {peak:.2f}, "
        f"{lost:,} lookups lost to its overload"
    )
    if hit <= 0:
        return Grade("DNS caching", "none", measured + "; no lookup is cached")
    credit: Credit = "full" if lost == 0 and peak <= 1.0 else "partial"
    return Grade("DNS caching", credit, measured)


def traps(result: Result) -> list[Grade]:
    """The rubric's traps this crawler design took, as ``gym run`` warns of them: a
    global FIFO frontier (its politeness violations), recrawling everything (the
    bandwidth wasted), page bodies in a relational table, and dedup layers missing where
    the scenario tests them; each with what the run measured. Graph designs: none."""
    crawler = addons(result.design)
    if crawler is None:
        return []
    design = crawler.design
    record, scenario = result.metrics.record, result.scenario
    items = [
        _frontier(record, design, scenario),
        _recrawl(record, design, scenario),
        _storage(result, design),
    ]  # the items with a trap; the others cost a run nothing
    out = [g for g in items if g.trap is not None]
    # Dedup layers: only those the scenario tests (its variants, duplicate bodies), each
    # with what going without it cost in this run.
    missing = []
    world = scenario.dedup
    if not design.dedup.canonicalize and world.variant_fraction:
        handed = int(record.components["frontier"].processed.sum())
        missing.append(
            f"no URL canonicalization: about {world.variant_fraction * handed:,.0f} variants "
            "of known URLs fetched again"
        )
    if not design.dedup.content_hash and world.duplicate_body_fraction:
        writes = int(record.components["page_store"].arrived.sum())
        missing.append(
            f"no content hashing: about {world.duplicate_body_fraction * writes:,.0f} "
            "duplicate page bodies written"
        )
    if missing:
        out.append(
            Grade(
                "dedup layers",
                "partial",
                "; ".join(missing),
                trap="dedup layers missing: the same work done twice",
            )
        )
    return out


def credit_points(grades: list[Grade]) -> tuple[float, int]:
    """Points over the gradable items: full 1, partial 0.5, none 0; and how many count."""
    points = {"full": 1.0, "partial": 0.5, "none": 0.0}
    counted = [g for g in grades if g.credit in points]
    return sum(points[g.credit] for g in counted), len(counted)
