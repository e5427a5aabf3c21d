"""Where the engines' discretisation changes what a design or scenario says.

Both engines act on a grid: the flow engine holds each fetch for a whole number of ticks,
both engines start and end load stages and faults on tick boundaries, and the request
engine gives each station ``round(rate x service time)`` concurrent slots. Usually these
roundings are invisible; with a coarse ``--tick-ms`` or a tiny station they are not (a
250 ms fetch on 1,000 ms ticks lasts 1,000 ms, and the crash loses four times the URLs).
:func:`warnings` names every rounding that moves a figure by more than :data:`TOLERANCE`,
with the figure, so a result is never silently about a different design.
"""

from __future__ import annotations

from gym.models import Design, Scenario
from gym.sim.erlang import mean_held
from gym.sim.grid import PACED_BELOW_CV, flush_slots, station_slots
from gym.sim.timeline import VALID_TICKS_MS, Timeline, fetch_ticks
from gym.system.crawler import (
    cache_capacity_rps,
    fetchers_in_effect,
    page_store_in_effect,
    seen_set_capacity_rps,
)
from gym.system.graph import GraphDesign

#: A rounding that changes a figure by more than this fraction is reported.
TOLERANCE = 0.05


def warnings(
    design: Design | GraphDesign, scenario: Scenario, *, engine: str, tick_ms: int
) -> list[str]:
    """One sentence per rounding that changes a service time, a capacity, the length of a
    stage or a fault, or the run's duration by more than :data:`TOLERANCE` (for a graph
    design, the scenario's alone so far)."""
    return design_warnings(design, scenario, engine=engine, tick_ms=tick_ms) + (
        scenario_warnings(scenario, tick_ms)
    )


def _graph_warnings(design: GraphDesign, tick_ms: int) -> list[str]:
    """A graph's fleets' service times and its edges' delays on the tick grid."""
    fleets = [
        line
        for name, node in design.graph.nodes.items()
        if getattr(node, "kind", None) == "fleet"
        for line in _service_ticks(
            f"graph.nodes.{name}.service.mean_ms", node.service.mean_ms, tick_ms
        )
    ]
    return fleets + _edge_delays(design, tick_ms)


def _edge_delays(design: GraphDesign, tick_ms: int) -> list[str]:
    """Delays of edges that the tick grid changes by more than the tolerance."""
    from gym.system.topology import Edge

    lines = []
    for i, e in enumerate(design.graph.edges):
        if not e.delay_s:
            continue
        ticks = Edge(e.source, e.target, delay_s=e.delay_s).delay_ticks(tick_ms)
        runs = ticks * tick_ms / 1000.0
        if abs(runs - e.delay_s) > TOLERANCE * e.delay_s:
            lines.append(
                f"graph.edges[{i}].delay_s: {e.delay_s:g} s runs as {ticks} tick"
                f"{'s' if ticks > 1 else ''} of {tick_ms} ms = {runs:g} s"
            )
    return lines


def design_warnings(
    design: Design | GraphDesign, scenario: Scenario, *, engine: str, tick_ms: int
) -> list[str]:
    """The roundings of the design's own figures (many designs, one scenario: a sweep
    asks this per point and :func:`scenario_warnings` once)."""
    if isinstance(design, GraphDesign):
        return _graph_warnings(design, tick_ms) + _graph_slots(design, engine)
    if engine == "flow":
        lines = _fetch_ticks(design, tick_ms) + _slots(design, scenario, engine)
    else:
        lines = _slots(design, scenario, engine) + _flushes(design, tick_ms)
    if design.discovery is not None:
        lines += link_delay_warnings(tick_ms)
    return lines + _links_unused(design, scenario) + _retry_waits(design, engine, tick_ms)


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


def link_delay_warnings(tick_ms: int) -> list[str]:
    """The link-discovery loop's delay on the tick grid, when the grid moves it."""
    from gym.system.crawler import LINK_DELAY_S
    from gym.system.topology import Edge

    ticks = Edge("links", "seen_set", delay_s=LINK_DELAY_S).delay_ticks(tick_ms)
    runs = ticks * tick_ms / 1000.0
    if abs(runs - LINK_DELAY_S) <= TOLERANCE * LINK_DELAY_S:
        return []
    return [
        f"discovery: links reach the seen set {LINK_DELAY_S:g} s after their page on average; "
        f"on {tick_ms} ms ticks that is {runs:g} s (a finer --tick-ms keeps it)"
    ]


def _retry_waits(design: Design, engine: str, tick_ms: int) -> list[str]:
    """Retry waits the flow engine's tick grid lengthens (it waits at least one tick)."""
    r = design.retries
    if r is None or engine != "flow":
        return []
    shortest = r.backoff_s * (1.0 - r.jitter) * 1000.0
    if shortest >= tick_ms * (1.0 - TOLERANCE):
        return []
    return [
        f"retries.backoff_s: the flow engine waits whole ticks, at least one, so waits from "
        f"{shortest:g} ms run as {tick_ms} ms on {tick_ms} ms ticks (use a finer --tick-ms, "
        "or the request engine)"
    ]


def _links_unused(design: Design, scenario: Scenario) -> list[str]:
    """Links the scenario has pages yield, which a design without discovery ignores; with
    discovery, a loop that grows without end, and the links' delay off the tick grid."""
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


def scenario_warnings(scenario: Scenario, tick_ms: int) -> list[str]:
    """The roundings of the scenario's times: its duration, its stages and faults."""
    return _event_times(scenario, tick_ms)


def _fetch_ticks(design: Design, tick_ms: int) -> list[str]:
    return _service_ticks("fetchers.service.mean_ms", design.fetchers.service.mean_ms, tick_ms)


def _service_ticks(field: str, mean: float, tick_ms: int) -> list[str]:
    """A fleet's service time as the flow engine holds it, in whole ticks."""
    used = fetch_ticks(mean, tick_ms) * tick_ms
    if abs(used - mean) <= TOLERANCE * mean:
        return []
    fine = [t for t in VALID_TICKS_MS if abs(fetch_ticks(mean, t) * t - mean) <= TOLERANCE * mean]
    fine = sorted(fine, reverse=True)[:3]
    if fine:
        named = [str(t) for t in fine]
        hint = "--tick-ms " + (", ".join(named[:-1]) + " or " if len(named) > 1 else "") + named[-1]
    else:
        hint = "a finer --tick-ms"
    return [
        f"{field}: the flow engine holds each fetch for whole ticks, so "
        f"{mean:g} ms runs as {used:g} ms on {tick_ms} ms ticks ({_change(used, mean)}); "
        f"fetch latency and the URLs a crash loses follow the rounded time (use {hint}, "
        "or the request engine)"
    ]


def _slots(design: Design, scenario: Scenario, engine: str) -> list[str]:
    """Stations whose round(rate x service time) slots move their capacity: in the request
    engine every station; in the flow engine the loss stations (cache, resolver, and the
    store unless the async writer meters its writes), whose Erlang loss uses the slots."""
    f = fetchers_in_effect(design, scenario)  # JavaScript rendering slows a replica
    stations = [
        ("fetchers", "fetchers.rps_per_replica", f.rps_per_replica, f.service.mean_ms),
        (
            "cache",
            "cache.service.mean_ms",
            cache_capacity_rps(design, scenario.catalog),
            design.cache.service.mean_ms,
        ),
        ("resolver", "resolver.rps", scenario.resolver.rps, scenario.resolver.service.mean_ms),
        *(
            [
                (
                    "seen_set",
                    "discovery.shards",
                    seen_set_capacity_rps(design, scenario),
                    design.discovery.service.mean_ms,
                )
            ]
            if design.discovery is not None
            else []
        ),
        (
            "page_store",
            "page_store.rps",
            page_store_in_effect(design, scenario.catalog).rps,
            design.page_store.service.mean_ms,
        ),
    ]
    if engine == "flow":
        skip = {"fetchers"} | ({"page_store"} if design.async_writer is not None else set())
        stations = [s for s in stations if s[0] not in skip]
    paced = f.service.cv_value < PACED_BELOW_CV
    return [
        line
        for name, field, rate, mean_ms in stations
        for line in _slot_warning(name, field, rate, mean_ms, engine, name == "fetchers" and paced)
    ]


def _slot_warning(
    name: str, field: str, rate: float, mean_ms: float, engine: str, paced: bool = False
) -> list[str]:
    """A station whose round(rate x service time) slots move its capacity by more than
    the tolerance. ``paced``: a fleet whose starts are paced at its rate (extra slots add
    no capacity; fewer still cut it)."""
    exact = rate * mean_ms / 1000.0
    slots = station_slots(rate, mean_ms)
    if abs(slots - exact) <= TOLERANCE * exact or (paced and slots > exact):
        return []
    who = "the request engine gives" if engine == "request" else "both engines give"
    capacity = slots / (mean_ms / 1000.0)
    return [
        f"{field}: {who} {name} round({rate:g}/s x {mean_ms:g} ms) = "
        f"{slots} concurrent slot{'s' if slots != 1 else ''} ({exact:.2f} exactly), so "
        f"it serves at most {capacity:,.4g}/s, not {rate:,.4g}/s ({_change(capacity, rate)})"
    ]


def _graph_slots(design: GraphDesign, engine: str) -> list[str]:
    """A graph's stations whose slots move their capacity, as :func:`_slots` for the
    crawler: its loss stations in both engines (a store behind a write buffer only in the
    request engine: the flow engine meters its writes), its fleets in the request engine."""
    nodes = design.graph.nodes
    metered = {e.target for e in design.graph.edges if nodes[e.source].kind == "write_buffer"}
    out = []
    for name, node in nodes.items():
        where = f"graph.nodes.{name}"
        if node.kind in ("cache", "service", "store"):
            if engine == "flow" and name in metered:
                continue
            out += _slot_warning(name, f"{where}.rps", node.rps, node.service.mean_ms, engine)
        elif node.kind == "fleet" and engine == "request":
            paced = node.service.cv_value < PACED_BELOW_CV
            out += _slot_warning(
                name,
                f"{where}.rps_per_replica",
                node.rps_per_replica,
                node.service.mean_ms,
                engine,
                paced,
            )
    return out


def _flushes(design: Design, tick_ms: int) -> list[str]:
    """The request engine's writer fills the store's free slots below the ceiling once per
    tick; slots freed within the tick wait for the next (all of them with a tick longer
    than a fixed write, 39% with exponential 20 ms writes on 10 ms ticks)."""
    writer, store = design.async_writer, design.page_store
    if writer is None:
        return []
    slots = station_slots(store.rps, store.service.mean_ms)
    ceiling = flush_slots(writer.flush_ceiling, slots)
    meant = writer.flush_ceiling * store.rps
    most = _drain(design, ceiling, tick_ms)
    if most >= meant * (1 - TOLERANCE):
        return []
    fine = [t for t in VALID_TICKS_MS if _drain(design, ceiling, t) >= meant * (1 - TOLERANCE)]
    hint = f"use --tick-ms {max(fine)} or less" if fine else "no tick is short enough"
    return [
        f"async_writer: the request engine flushes held writes once per {tick_ms} ms tick, "
        f"into at most {ceiling} of the store's {slots} slots, so it drains at most "
        f"{most:,.0f}/s, not flush_ceiling x page_store.rps = {meant:,.0f}/s "
        f"({_change(most, meant)}; {hint})"
    ]


def _drain(design: Design, ceiling: int, tick_ms: int) -> float:
    """Flushes per second at best: each tick the ceiling's slots are filled, and those that
    free within the tick (a share E[min(S, tick)] / E[S] of them) wait for the next one."""
    service = design.page_store.service
    tick_s = tick_ms / 1000.0
    return ceiling * (mean_held(service, tick_s) / (service.mean_ms / 1000.0)) / tick_s


def _event_times(scenario: Scenario, tick_ms: int) -> list[str]:
    """Stages and faults start and end on tick boundaries (the first at or after the
    time written); a length that changes by more than 5% is reported, and a run whose
    duration is not whole ticks (it runs to the next tick, and throughput is counted
    over that)."""
    grid = Timeline(scenario, tick_ms)
    out = []
    ran = grid.n_ticks * tick_ms / 1000
    if ran != scenario.duration_s:
        out.append(
            f"duration_s: {scenario.duration_s:g} s is not a whole number of {tick_ms} ms "
            f"ticks; the run lasts {ran:g} s ({_change(ran, scenario.duration_s)}), and "
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
        if abs(used - meant) > TOLERANCE * meant:
            out.append(
                f"{field}: {start:g}-{end:g} s lasts {meant:g} s, but both engines act on "
                f"{tick_ms} ms tick boundaries, so it runs {t0:g}-{t1:g} s, {used:g} s "
                f"({_change(used, meant)})"
            )
    return out


def _change(used: float, meant: float) -> str:
    return f"{(used / meant - 1) * 100:+.0f}%"
