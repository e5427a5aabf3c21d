"""Where the engines' discretisation changes what a design or scenario says.

Both engines act on a grid. The flow engine holds each fetch (a graph fleet's service) for
a whole number of ticks, waits whole ticks before a retry, and its async writer flushes
whole writes a tick; both engines give a station without a queue ``round(rate x service
time)`` concurrent slots, hold an edge's URLs (the links of a fetched page) for whole
ticks, and start and end load stages and faults on tick boundaries; the request engine
gives each fleet replica ``round(rps_per_replica x service time)`` slots and flushes its
writer into ``floor(flush_ceiling x slots)`` of the store's slots. Usually these roundings
are invisible; with a coarse ``--tick-ms`` or a small station they are not (a 250 ms
fetch on 1,000 ms ticks lasts 1,000 ms, and the crash loses four times the URLs; 12.5
slots a replica rounded to 12 is 4% less capacity, and a backlog drains that much
slower). :func:`warnings` names every rounding that moves a figure by more than
:data:`gym.sim.rounded.TOLERANCE`, with the figure as the design states it and as the
engine runs it, so a result is never silently about a different design. A node's are
its kind's own (``ROUNDING`` in each engine's module of the kind), a crawler's nodes'
those of the graph it compiles to, named as its sections name them
(:attr:`gym.system.topology.Node.names`); the crawler's add-ons' (its link-discovery
loop's delay, the links it ignores, its retries' waits) are here.
"""

from __future__ import annotations

import functools
import math

from gym.core.text import Unit
from gym.models import Design, RetryPolicy, Scenario
from gym.sim.flow.rules import rule_for
from gym.sim.request import rounding_for as request_rounding
from gym.sim.rounded import (
    Rounding,
    change,
    moved,
    or_request,
    tick_hint,
)
from gym.sim.timeline import Timeline
from gym.system.compiled import either
from gym.system.crawler import topology as crawler_topology
from gym.system.graph import GraphDesign, topology
from gym.system.topology import Topology


def warnings(
    design: Design | GraphDesign, scenario: Scenario, *, engine: str, tick_ms: int
) -> list[str]:
    """One sentence per rounding that changes a service time, a capacity, a delay or a
    wait, the length of a stage or a fault, or the run's duration by more than
    :data:`gym.sim.rounded.TOLERANCE`, for a crawler or a graph design, in the engine given."""
    return design_warnings(design, scenario, engine=engine, tick_ms=tick_ms) + (
        scenario_warnings(scenario, tick_ms)
    )


def design_warnings(
    design: Design | GraphDesign, scenario: Scenario, *, engine: str, tick_ms: int
) -> list[str]:
    """The roundings of the design's own figures (many designs, one scenario: a sweep
    asks this per point and :func:`scenario_warnings` once)."""
    crawler, graph = either(design)
    if crawler is not None:
        return _crawler_warnings(crawler.design, scenario, engine, tick_ms)
    assert graph is not None
    return _graph_warnings(graph, engine, tick_ms)


def _crawler_warnings(design: Design, scenario: Scenario, engine: str, tick_ms: int) -> list[str]:
    """The roundings of a crawler design's own figures: its nodes' (the graph it compiles
    to, in the crawler's field names), its link-discovery loop's delay, the links it
    ignores or follows, its retries' waits."""
    graph = crawler_topology(design, scenario)
    lines = _node_roundings(graph, engine, tick_ms, design.unit)
    if design.discovery is not None:
        lines += link_delay_warnings(tick_ms)
    return lines + _links_unused(design, scenario) + _retry_waits(design, engine, tick_ms)


def scenario_warnings(scenario: Scenario, tick_ms: int) -> list[str]:
    """The roundings of the scenario's times: its duration, its stages and faults."""
    return _event_times(scenario, tick_ms)


# --- the crawler ---------------------------------------------------------------------------


def link_delay_warnings(tick_ms: int) -> list[str]:
    """The link-discovery loop's delay on the tick grid (both engines), when the grid
    moves it."""
    from gym.system.crawler import LINK_DELAY_S

    held = _delay_ticks(LINK_DELAY_S, tick_ms) * tick_ms / 1000.0
    if not moved(held, LINK_DELAY_S):
        return []
    hint = tick_hint(functools.partial(_delay_fits, LINK_DELAY_S))
    return [
        f"discovery: links reach the seen set {LINK_DELAY_S:g} s after their page on average; "
        f"both engines hold them whole ticks, so on {tick_ms} ms ticks that is {held:g} s "
        f"({change(held, LINK_DELAY_S)}; {hint})"
    ]


def _retry_waits(design: Design, engine: str, tick_ms: int) -> list[str]:
    """Retry waits the flow engine's tick grid moves: each wait, drawn within the jitter,
    runs as the nearest whole number of ticks, at least the shortest first wait's (and at
    least one); the request engine waits the time drawn."""
    r = design.retries
    if r is None or engine != "flow":
        return []
    moved = _moved_waits(r, tick_ms)
    if not moved:
        return []
    retry, meant, used = max(moved, key=lambda m: abs(m[2] / m[1] - 1.0))
    others = len(moved) - 1
    more = f"; {others} other retr{'ies' if others > 1 else 'y'} move too" if others else ""
    hint = tick_hint(lambda t: not _moved_waits(r, t))
    return [
        f"retries.backoff_s: the flow engine waits whole ticks, at least one, so on {tick_ms} "
        f"ms ticks retry {retry} waits {used * 1000:.4g} ms on average, not "
        f"{meant * 1000:.4g} ms ({change(used, meant)}{more}; {or_request(hint)})"
    ]


def _moved_waits(r: RetryPolicy, tick_ms: int) -> list[tuple[int, float, float]]:
    """(retry, the mean wait the policy gives, the mean wait on the tick grid) for each
    retry whose wait the grid moves (as :class:`gym.sim.flow.retry.Retries` waits)."""
    tick_s = tick_ms / 1000.0
    least = max(1, math.floor(r.backoff_s * (1.0 - r.jitter) / tick_s))
    out = []
    for retry in range(1, r.attempts):
        meant = r.wait_s(retry)
        lo, hi = meant * (1.0 - r.jitter) / tick_s, meant * (1.0 + r.jitter) / tick_s
        used = _mean_rounded(lo, hi, least) * tick_s
        if moved(used, meant):
            out.append((retry, meant, used))
    return out


def _mean_rounded(lo: float, hi: float, least: int) -> float:
    """E[max(least, rint(X))] for X uniform on [lo, hi] (X = lo when they are equal).

    rint(x) - x has period 1 and integrates to 0 over a period, so E[rint X] is the mean
    plus (F(hi) - F(lo)) / (hi - lo), F the integral of rint(t) - t from 0 (a function of
    the fractional part); values below ``least`` are lifted to it."""
    if hi - lo < 1e-12:
        return float(max(least, round(lo)))

    def integral(x: float) -> float:
        u = x - math.floor(x)
        return -u * u / 2 if u < 0.5 else u - u * u / 2 - 0.5

    mean = (lo + hi) / 2 + (integral(hi) - integral(lo)) / (hi - lo)
    # Lift the whole numbers below ``least`` that X rounds to (n takes [n - 0.5, n + 0.5)).
    for n in range(max(0, round(lo)), least):
        share = max(0.0, min(hi, n + 0.5) - max(lo, n - 0.5)) / (hi - lo)
        mean += (least - n) * share
    return mean


def _links_unused(design: Design, scenario: Scenario) -> list[str]:
    """Links the scenario has pages yield, which a design without discovery ignores; with
    discovery, a loop that grows without end."""
    stages = [s.links_per_page or 0.0 for s in scenario.load]
    most = max([scenario.web.links_per_page, *stages])
    if design.discovery is not None:
        return _loop(design, scenario, most)
    if not most:
        return []
    return [
        f"web.links_per_page: pages yield up to {most:g} links in this scenario, but the "
        "design has no discovery section, so no link is followed (its frontier takes the "
        "scenario's load alone); add discovery: {shards: N} to run the link-discovery loop"
    ]


def _loop(design: Design, scenario: Scenario, most: float) -> list[str]:
    from gym.system.crawler import new_links

    new = new_links(design, scenario)
    if most * new < 1.0:
        return []
    return [
        f"web.links_per_page: at {most:g} links a page, {1 - scenario.web.links_seen_fraction:g} "
        f"of them new, each page brings back {most * new:.3g} new URLs (1 or more): the crawl "
        "grows until the fetchers or the frontier stop it, so their saturation and the "
        "frontier's overflow are the loop's, not the load's"
    ]


# --- graph designs -------------------------------------------------------------------------


def _graph_warnings(design: GraphDesign, engine: str, tick_ms: int) -> list[str]:
    """A graph's roundings, as the crawler's: each node's, as its kind's rule in the
    engine says them (``ROUNDING`` in the kind's module of :mod:`gym.sim.flow` or
    :mod:`gym.sim.request`: a fleet's service times on the flow engine's tick grid and its
    replicas' slots in the request engine, a loss station's slots, a write buffer's
    flushes); its edges' delays."""
    return _node_roundings(topology(design), engine, tick_ms, design.unit) + _edge_delays(
        design, tick_ms
    )


def _node_roundings(graph: Topology, engine: str, tick_ms: int, unit: Unit) -> list[str]:
    """Each node's roundings, as its kind's rule in the engine says them, in the order
    of the graph's nodes."""
    found = flow_rounding if engine == "flow" else request_rounding
    out = []
    for node in graph.nodes:
        said = found(node.kind)
        out += said(node, graph, tick_ms, unit) if said else []
    return out


def flow_rounding(kind: str) -> Rounding | None:
    """The roundings of ``kind`` in the flow engine."""
    return rule_for(kind).rounding


def _edge_delays(design: GraphDesign, tick_ms: int) -> list[str]:
    """Delays of edges that the tick grid moves (both engines hold them whole ticks)."""
    lines = []
    for i, e in enumerate(design.graph.edges):
        if not e.delay_s:
            continue
        ticks = _delay_ticks(e.delay_s, tick_ms)
        runs = ticks * tick_ms / 1000.0
        if moved(runs, e.delay_s):
            hint = tick_hint(functools.partial(_delay_fits, e.delay_s))
            lines.append(
                f"graph.edges[{i}].delay_s: {e.delay_s:g} s runs as {ticks} tick"
                f"{'s' if ticks > 1 else ''} of {tick_ms} ms = {runs:g} s "
                f"({change(runs, e.delay_s)}) in both engines, which hold an edge's "
                f"{design.unit.many} "
                f"whole ticks, at least one ({hint})"
            )
    return lines


def _delay_fits(delay_s: float, tick_ms: int) -> bool:
    """Whether ``tick_ms`` ticks keep a delay within the tolerance."""
    return not moved(_delay_ticks(delay_s, tick_ms) * tick_ms / 1000.0, delay_s)


def _delay_ticks(delay_s: float, tick_ms: int) -> int:
    """An edge's delay on the tick grid, as both engines hold it."""
    from gym.system.topology import Edge

    return Edge("a", "b", delay_s=delay_s).delay_ticks(tick_ms)


def _event_times(scenario: Scenario, tick_ms: int) -> list[str]:
    """Stages and faults start and end on tick boundaries (the first at or after the
    time written); a length that moves by more than the tolerance is reported, and a run
    whose duration is not whole ticks (it runs to the next tick, and throughput is counted
    over that)."""
    grid = Timeline(scenario, tick_ms)
    out = []
    ran = grid.n_ticks * tick_ms / 1000
    if ran != scenario.duration_s:
        out.append(
            f"duration_s: {scenario.duration_s:g} s is not a whole number of {tick_ms} ms "
            f"ticks; the run lasts {ran:g} s ({change(ran, scenario.duration_s)}), and "
            f"throughput is served / {ran:g} s"
        )
    spans: list[tuple[str, float, float]] = []
    for i, stage in enumerate(scenario.load):
        end = scenario.load[i + 1].at_s if i + 1 < len(scenario.load) else scenario.duration_s
        spans.append((f"load[{i}]", stage.at_s, end))
    for i, fault in enumerate(scenario.faults):
        if fault.for_s is not None:
            spans.append((f"faults[{i}].for_s", fault.at_s, fault.at_s + fault.for_s))
    for field, start, end in spans:
        meant = end - start
        if meant <= 0:
            continue
        t0, t1 = (grid.to_tick(t) * tick_ms / 1000 for t in (start, end))
        used = t1 - t0
        if moved(used, meant):
            out.append(
                f"{field}: {start:g}-{end:g} s lasts {meant:g} s, but both engines act on "
                f"{tick_ms} ms tick boundaries, so it runs {t0:g}-{t1:g} s, {used:g} s "
                f"({change(used, meant)})"
            )
    return out
