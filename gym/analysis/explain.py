"""Why a design fails, in words a person can act on.

Every explanation names the component, when it happened, the scenario event in force
and how many URLs (a graph's requests) were lost to which cause. Explanations read
metrics and the run's per-tick tallies; they never change a number.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gym.analysis import explain_graph
from gym.analysis.metrics import Metrics
from gym.analysis.scoring import SLOCheck, per_second
from gym.core.text import Unit
from gym.models import Design, Scenario
from gym.sim.record import RunRecord
from gym.system.compiled import addons
from gym.system.crawler import CAUSES, Politeness
from gym.system.graph import GraphDesign

#: Which component records each cause, and how a person says it.
CAUSE_WORDS: dict[str, str] = {
    "frontier_overflow": "frontier overflow",
    "crash_loss": "crash loss",
    "cache_overload": "cache overload",
    "cache_unavailable": "cache unavailable",
    "resolver_overload": "resolver overload",
    "resolver_unavailable": "resolver unavailable",
    "writer_overflow": "async-writer overflow",
    "store_overload": "page-store overload",
    "store_unavailable": "page store unavailable",
    "seen_set_overload": "seen-set overload",
    "seen_set_unavailable": "seen set unavailable",
}

_MAX_PHASES = 6


@dataclass(frozen=True)
class Explanation:
    """One finding: what, where, when, under which event, how many URLs."""

    kind: str  # "slo" (why an SLO failed), "cause" (a failure cause), "outage"
    text: str
    details: tuple[str, ...] = field(default=())  # one line per phase, component, ...
    slo: str | None = None
    component: str | None = None
    cause: str | None = None
    at_s: float | None = None
    event: str | None = None
    urls: int | None = None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {k: v for k, v in self.__dict__.items() if v is not None}
        out["details"] = list(self.details)
        return out


def explain(
    metrics: Metrics, checks: list[SLOCheck], design: Design | GraphDesign, scenario: Scenario
) -> list[Explanation]:
    """Explanations for every failed SLO, then every failure cause, then every outage."""
    crawler = addons(design)
    polite = crawler.politeness(scenario) if crawler is not None else None
    # Links the scenario's pages carry that the design does not follow (no discovery).
    unfollowed = crawler is not None and crawler.unfollowed_links(scenario)
    unit = design.unit
    out = [_slo(metrics, chk, polite, unit, unfollowed) for chk in checks if not chk.passed]
    causes = sorted(((n, c) for c, n in metrics.failed_by_cause.items() if n > 0), reverse=True)
    own = crawler.design if crawler is not None else None
    out += [_cause(metrics, cause, own, polite, unit) for _, cause in causes]
    if crawler is None and any(not c.passed for c in checks):  # what a graph's loops amplify
        out += [
            Explanation("note", f"{line[0].upper()}{line[1:]}.")
            for line in explain_graph.loops(metrics)
        ]
    tl = metrics.record.timeline
    for component, start, end in metrics.outages:
        event = tl.describe_at(start, component)
        out.append(
            Explanation(
                kind="outage",
                text=f"{component} was down (capacity 0) t={start:g}-{end:g}s: {event}.",
                component=component,
                at_s=start,
                event=event,
            )
        )
    return out


# -- SLO headlines ------------------------------------------------------------------------


def _words(cause: str, crawler: bool = True) -> str:
    """A cause as a sentence says it: the crawler's words (for a crawler run), else the
    name spaced out (a graph's node called "writer" is not the crawler's async writer)."""
    return (CAUSE_WORDS.get(cause) if crawler else None) or cause.replace("_", " ")


def _slo(
    m: Metrics, chk: SLOCheck, polite: Politeness | None, unit: Unit, unfollowed: bool = False
) -> Explanation:
    top = _top_causes(m)
    if chk.name == "throughput_rps":
        offered_rps = m.offered / m.duration_s
        text = (
            f"throughput {per_second(chk.measured or 0.0)}/s is below {per_second(chk.target)}/s: "
            f"of {m.offered:,} {unit.many} offered in {m.duration_s:g} s, "
            f"{m.served:,} were served, {m.failed:,} failed"
            f"{top} and {m.in_flight_end:,} were still in flight at the end."
        )
        if offered_rps < chk.target and not m.record.created and unfollowed:
            text += (
                f" Its seeds offer only {offered_rps:,.0f}/s; the scenario's pages carry "
                "links the design does not follow: a discovery section (a seen-URL set) "
                "crawls them too."
            )
        elif offered_rps < chk.target and not m.record.created:  # links could add to it
            text += (
                f" The scenario itself offers only {offered_rps:,.0f}/s, so no design "
                "can meet this target."
            )
        return Explanation("slo", text, slo=chk.name, urls=m.failed)
    if chk.name == "availability":
        done = m.finished
        if chk.measured is None:
            text = (
                f"availability is undefined, so the SLO fails: no {unit.one} finished (served "
                f"or failed) in the {m.duration_s:g} s run. Of {m.offered:,} {unit.many} offered, "
                f"{m.in_flight_end:,} were still in flight at the end"
                + (f" and {m.skipped:,} were skipped as seen before" if m.skipped else "")
                + f"; a run must finish {unit.many} before its availability can be judged."
            )
            return Explanation("slo", text, slo=chk.name, urls=0)
        budget = (1 - chk.target) * done
        text = (
            f"availability {chk.measured:.4f} is below {chk.target:g}: {m.failed:,} of the "
            f"{done:,} {unit.many} that finished failed{top}; the SLO allows at most {budget:,.0f} "
            f"({(1 - chk.target) * 100:g}% of those that finished)."
        )
        return Explanation("slo", text, slo=chk.name, urls=m.failed)
    if chk.name == "peak_saturation":
        return _saturation(m, chk, polite, unit)
    parts = " + ".join(f"{name} {u}" for name, u in m.units.items() if u)
    return Explanation(
        "slo", f"cost {chk.measured:g} units is above {chk.target:g}: {parts}.", slo=chk.name
    )


def _top_causes(m: Metrics) -> str:
    causes = sorted(((n, c) for c, n in m.failed_by_cause.items() if n > 0), reverse=True)
    if not causes:
        return ""
    crawler = set(CAUSES) <= set(m.record.causes)
    return " (" + ", ".join(f"{_words(c, crawler)} {n:,}" for n, c in causes[:3]) + ")"


def _saturation(m: Metrics, chk: SLOCheck, polite: Politeness | None, unit: Unit) -> Explanation:
    tl = m.record.timeline
    over = []
    for name, cw in m.components.items():
        value, w = cw.peak
        if value is not None and w is not None and value > chk.target:
            over.append((value, name, w))
    over.sort(reverse=True)
    details = []
    for value, name, w in over:
        cw = m.components[name]
        t = float(m.window_s[w])
        when = tl.describe_at(t, name)
        if cw.fill:
            details.append(f"{name}: {value:.2f} (buffer {value:.0%} full) at t={t:g}s ({when})")
        else:
            line = (
                f"{name}: {value:.2f} at t={t:g}s, demand {_urls(cw.demand[w])} vs capacity "
                f"{_urls(cw.rated[w])} {unit.many} in that second ({when})"
            )
            if name == "frontier" and polite is not None and polite.bound:
                line += "; " + _politeness_words(polite)
            if (
                polite is None
            ):  # a graph: the node holding its backlog (a fleet's queue, a store's write buffer)
                line += explain_graph.fed_by(m, name)
            details.append(line)
    value, name, w = over[0]
    t = float(m.window_s[w])
    names = ", ".join(n for _, n, _ in over)
    text = (
        f"peak saturation {chk.measured:.2f} is above {chk.target:g}: {name} at t={t:g}s; "
        f"over the limit: {names}."
    )
    return Explanation(
        "slo",
        text,
        details=tuple(details),
        slo=chk.name,
        component=name,
        at_s=t,
        event=tl.describe_at(t, name),
    )


# -- failure causes -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Phase:
    """A stretch of time in which the events that matter to one component do not change."""

    start_s: float
    end_s: float
    name: str
    t0: int
    t1: int
    urls: int


def _politeness_words(p: Politeness) -> str:
    return (
        f"politeness-bound: {p.active_hosts:,} back queues (hosts in flight) / "
        f"{p.crawl_delay_s:g} s crawl delay = {p.rate:,.0f}/s, below the drain rate of "
        f"{p.drain_rps:,.0f}/s; more back queues (frontier.back_queues) raise it"
    )


def _cause(
    m: Metrics, cause: str, design: Design | None, polite: Politeness | None, unit: Unit
) -> Explanation:
    """A failure cause, phase by phase: with the crawler's words and load figures for a
    crawler ``design``, the node's kind of loss for a graph's (``design`` None), counted
    in ``unit``."""
    rec = m.record
    component = rec.component_of(cause)
    counts = rec.components[component].failed[cause]
    total = int(counts.sum())
    first_s = int(np.argmax(counts > 0)) * rec.timeline.tick_s
    phases = _phases(rec, counts, component)
    worst = max(phases, key=lambda p: p.urls)
    listed = [p for p in phases if p.urls > 0]
    shown = sorted(sorted(listed, key=lambda p: -p.urls)[:_MAX_PHASES], key=lambda p: p.start_s)
    details = [
        f"t={p.start_s:g}-{p.end_s:g}s {p.name}: {p.urls:,}"
        + (_detail(rec, cause, p) if design is not None else "")
        for p in shown
    ]
    rest = total - sum(p.urls for p in shown)
    if rest:
        details.append(f"other times: {rest:,}")
    if design is not None:
        text = (
            f"{_words(cause)}: {unit.counted(total)} lost at the {component}, from t={first_s:g}s. "
            f"{_why(m, cause, design)}"
        )
        if cause == "frontier_overflow" and polite is not None and polite.bound:
            text += " The frontier is " + _politeness_words(polite) + "."
    else:
        why = next((w for end, w in _NODE_WHY.items() if cause.endswith(end)), "")
        more = explain_graph.hint(m, component, cause, _worst_outage_loss(m, cause, component))
        words = _words(cause, crawler=False)
        text = f"{words}: {unit.counted(total)} lost at {component}, from t={first_s:g}s. {why}"
        text = (text.strip() + " " + more).strip()
    return Explanation(
        "cause",
        text,
        details=tuple(details),
        component=component,
        cause=cause,
        at_s=worst.start_s,
        event=worst.name,
        urls=total,
    )


#: Why a node of a graph design loses requests, by the end of the cause's name.
_NODE_WHY: dict[str, str] = {
    "overflow": "Its buffer was full: more arrived than it could hand on or hold.",
    "overload": (
        "Every slot was busy: it has rate x service time slots and no waiting room (Erlang "
        "loss), so requests beyond them fail."
    ),
    "unavailable": "It was stalled (capacity 0): everything that reached it failed.",
    "crash_loss": "Work in flight on crashed replicas was lost.",
}


def _phases(rec: RunRecord, counts: np.ndarray, component: str) -> list[_Phase]:
    """Failures per phase: the timeline's segments as they read for ``component``, with
    neighbours that read the same merged."""
    tl = rec.timeline
    phases: list[_Phase] = []
    for seg in tl.segments():
        name = seg.describe(component)
        t0, t1 = tl.to_tick(seg.start_s), min(tl.to_tick(seg.end_s), tl.n_ticks)
        if t1 <= t0:
            continue
        n = int(counts[t0:t1].sum())
        if phases and phases[-1].name == name:
            last = phases[-1]
            phases[-1] = _Phase(last.start_s, seg.end_s, name, last.t0, t1, last.urls + n)
        else:
            phases.append(_Phase(seg.start_s, seg.end_s, name, t0, t1, n))
    return phases


def _why(m: Metrics, cause: str, design: Design) -> str:
    """The rule that lost the URLs, in one or two sentences."""
    if cause == "frontier_overflow":
        return (
            "The frontier hands out at most min(drain_rps, back queues / crawl delay, what the "
            "live fetchers can start); "
            "when more arrives the queue grows, and once its "
            f"{design.frontier.buffer:,}-URL buffer is full new URLs are dropped."
        )
    if cause == "crash_loss":
        return (
            "The fetches in flight on a crashed replica fail: a replica holds "
            f"rps_per_replica x {design.fetchers.service.mean_ms:g} ms of fetches. With "
            "fetchers.on_crash: requeue they would go back to the frontier instead."
        )
    tried = ""
    if design.retries is not None and cause.startswith(("resolver_", "store_")):
        r = design.retries
        tried = (
            f" Each failed only after {r.attempts} tries (retries: waits of "
            f"{r.backoff_s:g} s, x{r.multiplier:g} each time); the retries added to the load."
        )
    return _rule(m, cause, design) + tried


def _rule(m: Metrics, cause: str, design: Design) -> str:
    """The rule that lost the URLs (without the retries' sentence)."""
    if cause in ("resolver_overload", "resolver_unavailable"):
        return (
            "Every cache miss needs a fresh DNS lookup and the resolver has no queue: a lookup "
            "that finds all its slots busy fails, some already below its capacity (Erlang "
            f"loss). At hit ratio {design.cache.hit_ratio:g}, "
            f"{1 - design.cache.hit_ratio:.0%} of fetches are misses; a higher hit ratio sends "
            "it fewer."
        )
    if cause in ("store_unavailable", "store_overload"):
        hint = ""
        if design.async_writer is None:
            hint = (
                " An async_writer with a buffer of at least "
                f"{_worst_outage_loss(m, cause):,} writes would hold them and flush them later."
            )
        which = "page" if design.discovery is not None else "cache miss"  # DNS cache alone
        return (
            f"Every {which} needs a page-store write and the store has no queue: a write that "
            "finds all its slots busy, or the store down, fails." + hint
        )
    if cause == "writer_overflow":
        assert design.async_writer is not None
        return (
            f"The async writer's {design.async_writer.buffer:,}-write buffer filled while the "
            "page store could not take the writes."
        )
    if cause in ("seen_set_overload", "seen_set_unavailable") and design.discovery is not None:
        return (
            "Every URL the crawler meets, seeds and the links of every fetched page, is "
            "looked up in the seen set, whose shards have no queue: a lookup that finds "
            "all its shard's slots busy (or the set stalled) fails, and the URL is lost if it "
            "was new. Its "
            "busiest shard limits it (the hot key lands on one shard); more shards help "
            "until the hot key's shard alone is full."
        )
    return "The cache has no queue: a lookup that finds all its slots busy fails."


def _urls(x: float) -> str:
    """A count of URLs in a window: whole above 10, two figures below (a station slower
    than one URL a second has 0.17 in a window, not 0)."""
    return f"{x:,.0f}" if x >= 10 or x == 0 else f"{x:.2g}"


def _detail(rec: RunRecord, cause: str, p: _Phase) -> str:
    """Load against capacity during one phase, for the causes where that is the story."""
    c = rec.components
    t0, t1 = p.t0, p.t1

    def rate(a: np.ndarray) -> str:
        return f"{float(a[t0:t1].sum()) / max((t1 - t0) * rec.timeline.tick_s, 1e-12):,.0f}/s"

    if cause == "frontier_overflow":
        limit = np.minimum(c["frontier"].capacity, c["fetchers"].capacity)
        live = int(c["fetchers"].extra["live"][t0])
        return (
            f" ({rate(c['frontier'].arrived)} arrived, at most {rate(limit)} handed out: frontier "
            f"{rate(c['frontier'].capacity)}, {live} live fetchers {rate(c['fetchers'].capacity)})"
        )
    component = rec.component_of(cause)
    if component in ("seen_set", "cache", "resolver", "page_store"):
        arrived, capacity = c[component].arrived, c[component].capacity
        text = f" ({rate(arrived)} arrived, capacity {rate(capacity)}"
        if arrived[t0:t1].sum() <= capacity[t0:t1].sum():
            text += "; below capacity, bursts of random arrivals still find every slot busy"
        return text + ")"
    return ""


def _worst_outage_loss(m: Metrics, cause: str, store: str = "page_store") -> int:
    """Most URLs one outage of ``store`` failed with ``cause`` (what a writer must hold)."""
    counts = m.components[store].failed[cause]
    worst = 0
    for component, start, end in m.outages:
        if component == store:
            span = (m.window_s >= start) & (m.window_s < end)
            worst = max(worst, int(counts[span].sum()))
    return worst or int(counts.sum())
