"""From per-tick tallies to what users read: 1-second windows, saturation, run totals.

Saturation follows docs/specification.md section 3: a pure load-over-capacity figure per
component and window, where each stage's demand is what reaches it when every upstream
stage passes on at most its own capacity:

    frontier  demand = offered (less what the seen set skips, when dedup is set)
    fetchers  demand = min(offered, frontier drain capacity)
    cache     demand = min(fetchers demand, fetcher capacity)
    resolver  demand = min(cache demand, cache capacity) x (1 - hit_ratio)
    page_store demand = min(resolver demand, resolver capacity) x (1 - duplicate bodies
                        skipped by content hashing) + async-writer flushes

The async writer's saturation is how full its buffer got (most writes held / buffer).
A window in which a component's capacity is 0 is an outage, not a saturation figure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from gym.models import Design, Scenario
from gym.sim.record import RunRecord, Tally
from gym.system import compiled, kinds
from gym.system.graph import GraphDesign
from gym.system.kinds.base import Kind
from gym.system.topology import Node, Topology

FloatArray = np.ndarray
IntArray = np.ndarray


@dataclass(repr=False)
class ComponentWindows:
    """One component, one value per 1-second window."""

    name: str
    demand: FloatArray  # URLs in the window (docs/specification.md section 3)
    capacity: IntArray  # whole URLs it could take in the window (a buffer's size for the writer)
    rated: FloatArray  # rate x seconds in the window: what saturation is measured against
    arrived: IntArray  # URLs that actually reached it
    processed: IntArray  # URLs it took
    served: IntArray  # URLs finished here
    failed: dict[str, IntArray]  # by cause
    backlog: IntArray  # held at the end of the window
    saturation: FloatArray  # demand / rated; NaN in an outage
    outage: np.ndarray  # bool: rate 0 (stalled, every replica down) in the whole window
    utilization: FloatArray  # processed / rated; NaN in an outage
    fill: bool = False  # saturation is how full its buffer got (a write buffer)

    @property
    def failed_total(self) -> IntArray:
        total = np.zeros_like(self.arrived)
        for counts in self.failed.values():
            total = total + counts
        return total

    def __repr__(self) -> str:
        from gym.analysis.reprs import component_repr

        return component_repr(self)

    @property
    def peak(self) -> WindowPeak:
        """Highest saturation outside outages and the window it happened in (None, None
        when every window was an outage)."""
        valid = ~np.isnan(self.saturation)
        if not valid.any():
            return WindowPeak(None, None)
        masked = np.where(valid, self.saturation, -np.inf)
        w = int(np.argmax(masked))
        return WindowPeak(float(self.saturation[w]), w)


class WindowPeak(NamedTuple):
    """A component's highest saturation and its window (an index: second w)."""

    value: float | None
    window: int | None


class Peak(NamedTuple):
    """The highest saturation of a run: its value, where, and when (the window's start)."""

    value: float
    component: str | None
    at_s: float | None


@dataclass(repr=False)
class Metrics:
    """Run totals and the per-window table."""

    record: RunRecord
    window_s: FloatArray  # start time of each window
    offered_w: IntArray
    components: dict[str, ComponentWindows]
    units: dict[str, int]
    offered: int
    served: int
    failed: int
    in_flight_end: int
    failed_by_cause: dict[str, int]
    skipped_by_cause: dict[str, int]

    @property
    def skipped(self) -> int:
        """URLs the seen set dropped before the frontier (neither served nor failed)."""
        return sum(self.skipped_by_cause.values())

    duration_s: float

    @property
    def throughput_rps(self) -> float:
        return self.served / self.duration_s

    @property
    def finished(self) -> int:
        """URLs that finished: served or failed (not skipped, not in flight at the end)."""
        return self.served + self.failed

    @property
    def availability(self) -> float | None:
        """served / (served + failed); None when no URL finished, where it is undefined."""
        done = self.finished
        return self.served / done if done else None

    @property
    def cost_units(self) -> int:
        return sum(self.units.values())

    def __repr__(self) -> str:
        from gym.analysis.reprs import metrics_repr

        return metrics_repr(self)

    @property
    def peak(self) -> Peak:
        """Highest saturation of any component in any window: its value, the component
        and the window's start (0, None, None when no component has a figure)."""
        best = Peak(0.0, None, None)
        for name, cw in self.components.items():
            value, w = cw.peak
            if (
                value is not None
                and w is not None
                and (best.component is None or value > best.value)
            ):
                best = Peak(value, name, float(self.window_s[w]))
        return best

    @property
    def peak_saturation(self) -> float:
        """Highest saturation of any component in any window (:attr:`peak` says where)."""
        return self.peak.value

    @property
    def outages(self) -> list[tuple[str, float, float]]:
        """(component, from_s, to_s) for each run of outage windows."""
        spans = []
        for name, cw in self.components.items():
            w = 0
            n = len(cw.outage)
            while w < n:
                if cw.outage[w]:
                    start = w
                    while w < n and cw.outage[w]:
                        w += 1
                    end_s = min(float(self.window_s[w - 1]) + 1.0, self.duration_s)
                    spans.append((name, float(self.window_s[start]), end_s))
                else:
                    w += 1
        return spans


def compute(record: RunRecord, design: Design | GraphDesign, scenario: Scenario) -> Metrics:
    """Aggregate a run record into windows and totals."""
    tl = record.timeline
    win = _Windows(tl.n_ticks, tl.ticks_per_window)
    wsum = win.sum
    wlast = win.last
    offered_w = wsum(record.offered)
    c = record.components
    # Capacity is the rate in force x time: a station slower than one URL per tick takes
    # none in most ticks and is not down in them (the whole-URL quota stays in ``capacity``).
    cap = {name: _rated(t, wsum, tl.tick_s) for name, t in c.items()}
    graph = record.topology
    assert graph is not None, "a run's record carries its topology"
    made = {name: wsum(a) for name, a in record.created.items()}
    demand = _demand(graph, c, offered_w, cap, wsum, tl.tick_ms, made)

    windows: dict[str, ComponentWindows] = {}
    for name, tally in c.items():
        if kinds.kind(graph.node(name).kind).fill_saturation:
            windows[name] = _writer_windows(tally, win)
            continue
        rated = cap[name]
        outage = rated <= 0
        safe = np.where(outage, 1.0, rated)
        processed = wsum(tally.processed)
        windows[name] = ComponentWindows(
            name=name,
            demand=demand[name],
            capacity=wsum(tally.capacity),
            rated=rated,
            arrived=wsum(tally.arrived),
            processed=processed,
            served=wsum(tally.served),
            failed={cause: wsum(counts) for cause, counts in tally.failed.items()},
            backlog=wlast(tally.backlog),
            saturation=np.where(outage, np.nan, demand[name] / safe),
            outage=outage,
            utilization=np.where(outage, np.nan, processed / safe),
        )
    ordered = {n: windows[n] for n in graph.order() if n in windows}

    failed_by_cause = record.failed_by_cause()
    return Metrics(
        record=record,
        window_s=win.starts * tl.tick_s,
        offered_w=offered_w,
        components=ordered,
        units=compiled.units_of(design, scenario.catalog),
        offered=int(record.offered.sum()),
        served=record.served_total,
        failed=sum(failed_by_cause.values()),
        in_flight_end=sum(record.in_flight_end.values()),
        failed_by_cause={k: failed_by_cause[k] for k in record.causes},
        skipped_by_cause=record.skipped_by_cause(),
        # what was simulated: a duration off the tick grid runs to the tick after it
        duration_s=tl.n_ticks * tl.tick_ms / 1000,
    )


class _Windows:
    """Per-tick arrays -> one value per 1-second window (the last one may be shorter)."""

    def __init__(self, n_ticks: int, ticks_per_window: int) -> None:
        self.n_ticks = n_ticks
        self.starts = np.arange(0, n_ticks, ticks_per_window)
        self.ends = np.minimum(self.starts + ticks_per_window, n_ticks)

    def sum(self, a: IntArray) -> IntArray:
        out: IntArray = np.add.reduceat(a[: self.n_ticks], self.starts)
        return out

    def last(self, a: IntArray) -> IntArray:
        out: IntArray = a[self.ends - 1]
        return out

    def max(self, a: IntArray) -> IntArray:
        out: IntArray = np.maximum.reduceat(a[: self.n_ticks], self.starts)
        return out


def _demand(
    graph: Topology,
    tallies: dict[str, Tally],
    offered_w: IntArray,
    cap: dict[str, FloatArray],
    wsum: Callable[[np.ndarray], np.ndarray],
    tick_ms: int = 10,
    made: dict[str, IntArray] | None = None,
) -> dict[str, FloatArray]:
    """Each node's demand per window, propagated along the edges (the module docstring):
    what reaches it when every node upstream passes on at most its own capacity, times
    the share it passes on (a cache's misses), plus a write buffer's flushes; less what
    the node itself skips (URLs its seen set drops at the door). ``made``: per window, the
    URLs a node made (links found on pages; the source offers the rest of ``offered_w``).

    A delayed edge (a feedback loop) carries what its source passed on its delay (on the
    tick grid) earlier, shifted by that many 1-second windows. Around a loop the demand
    feeds itself: the passes repeat until no node's figure moves (a loop returning a
    share g of what enters it converges as g^n)."""
    passed: dict[str, FloatArray] = {}
    demand: dict[str, FloatArray] = {}
    made = made or {}
    seeds = offered_w - sum(made.values(), np.zeros_like(offered_w))
    looped = any(e.delay_s for e in graph.edges)
    own = _own_figures(graph, tallies, offered_w, wsum)
    for _ in range(MAX_LOOP_PASSES if looped else 1):
        before = dict(passed)
        for name in graph.order():
            node = graph.node(name)
            k = kinds.kind(node.kind)
            if k.source:
                passed[name] = seeds  # every source's offer, in the run's total
                continue
            if k.creates:  # links found on pages: what it made, as counted
                passed[name] = np.asarray(made.get(name, seeds * 0), dtype=float)
                continue
            demand[name] = _arriving(graph, name, passed, own, tick_ms, len(offered_w))
            passed[name] = _passed_on(node, k, demand[name], cap[name], own)
        if looped and _settled(before, passed, offered_w):
            break
    return demand


class _Own(NamedTuple):
    """What each node adds, drops and passes on of its own, per window, counted once (the
    passes around a loop repeat only the propagation)."""

    retried: dict[str, FloatArray]  # later tries of what failed here
    skips: dict[str, FloatArray]  # what its seen set drops at the door
    kept: dict[str, FloatArray]  # the share it passed on, as counted
    flushes: dict[str, FloatArray]  # a write buffer's flushes


def _own_figures(
    graph: Topology,
    tallies: dict[str, Tally],
    offered_w: IntArray,
    wsum: Callable[[np.ndarray], np.ndarray],
) -> _Own:
    """Each node's own retries, skips, share passed on and flushes, from its tally."""
    own = _Own({}, {}, {}, {})
    for name, tally in tallies.items():
        k = kinds.kind(graph.node(name).kind)
        if "retries" in tally.extra:  # later tries of what failed here
            own.retried[name] = wsum(tally.extra["retries"])
        if tally.skipped and k.skips_at_door:
            own.skips[name] = sum(
                (wsum(a) for a in tally.skipped.values()), np.zeros_like(offered_w)
            )
        if k.passes_as_counted:
            took = wsum(tally.processed)
            with np.errstate(invalid="ignore", divide="ignore"):
                own.kept[name] = np.where(took > 0, wsum(tally.out) / took, 0.0)
        if "flushed" in tally.extra:
            own.flushes[name] = wsum(tally.extra["flushed"])
    return own


def _arriving(
    graph: Topology,
    name: str,
    passed: dict[str, FloatArray],
    own: _Own,
    tick_ms: int,
    n_windows: int,
) -> FloatArray:
    """A node's demand: what its input edges carry of what their sources passed on (a
    delayed edge's shifted), plus its retries, less what it skips at the door."""
    incoming = []
    for e in graph.inputs(name):
        sent = passed.get(e.source)
        if sent is None:  # around a loop, before its first pass: nothing yet
            continue
        if e.delay_s:
            sent = _shifted(sent, e.delay_ticks(tick_ms) * tick_ms / 1000.0)
        incoming.append(sent * e.share if e.share != 1.0 else sent)
    # Around a loop, before its first pass, a node may have nothing reaching it yet.
    total = incoming[0] if incoming else np.zeros(n_windows)
    for more in incoming[1:]:
        total = total + more
    if name in own.retried:
        total = total + own.retried[name]
    if name in own.skips:
        total = total - own.skips[name]
    return np.asarray(total).astype(float)


def _passed_on(node: Node, k: Kind, demand: FloatArray, cap: FloatArray, own: _Own) -> FloatArray:
    """What a node passes on of its demand: at most its capacity (where its kind is
    capped), times the share it passes on, plus its flushes."""
    name = node.name
    sent = np.minimum(demand, cap) if k.capped else demand
    share = k.passes(node.params)
    if name in own.kept:
        sent = sent * own.kept[name]
    elif share != 1.0:
        sent = sent * share
    if name in own.flushes:
        sent = sent + own.flushes[name]
    return sent


def _settled(
    before: dict[str, FloatArray], passed: dict[str, FloatArray], offered_w: IntArray
) -> bool:
    """Whether a pass around a loop moved no node's figure (relative to the offer)."""
    if before.keys() != passed.keys():
        return False
    scale = 1.0 + float(np.max(offered_w, initial=0))
    moved = max(float(np.max(np.abs(passed[n] - before[n]), initial=0)) for n in passed)
    return moved <= 1e-9 * scale


#: Most passes of the demand around a feedback loop (a loop returning 99% of what enters
#: it settles to 1e-9 in about 2,000).
MAX_LOOP_PASSES = 10_000


def _shifted(x: FloatArray, windows: float) -> FloatArray:
    """``x`` later by ``windows`` (a fraction spreads it over two windows, as a flow even
    within each window arrives); nothing before the start."""
    whole = int(windows)
    frac = windows - whole
    out = np.zeros(len(x), dtype=float)
    if whole < len(x):
        out[whole:] = x[: len(x) - whole] * (1.0 - frac)
    if frac and whole + 1 < len(x):
        out[whole + 1 :] += x[: len(x) - whole - 1] * frac
    return out


def _rated(tally: Tally, wsum: Callable[[np.ndarray], np.ndarray], tick_s: float) -> FloatArray:
    """Rate x seconds per window; from the whole-URL capacity where no rate was recorded."""
    if tally.rate is None:
        return np.asarray(wsum(tally.capacity), dtype=np.float64)
    rated: FloatArray = np.asarray(wsum(tally.rate), dtype=np.float64) * tick_s
    return rated


def _writer_windows(tally: Tally, win: _Windows) -> ComponentWindows:
    wsum, wlast = win.sum, win.last
    assert tally.limit is not None
    fill = win.max(tally.backlog) / tally.limit
    n = len(fill)
    capacity = np.full(n, tally.limit, dtype=np.int64)
    return ComponentWindows(
        name=tally.name,
        demand=wsum(tally.extra["held_in"]).astype(float),
        capacity=capacity,
        rated=capacity.astype(float),
        arrived=wsum(tally.arrived),
        processed=wsum(tally.processed),
        served=wsum(tally.served),
        failed={cause: wsum(counts) for cause, counts in tally.failed.items()},
        backlog=wlast(tally.backlog),
        saturation=fill,
        outage=np.zeros(n, dtype=bool),
        utilization=fill,
        fill=True,
    )
