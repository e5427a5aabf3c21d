"""The engines' grid in words: the sentence that says where a rounding moves a figure a
design states (a fleet's service time held whole ticks, a station's slots, a write
buffer's flushes), with the figure as stated and as run and a ``--tick-ms`` that keeps it.
Each kind's engine module says which of its figures the grid moves (``ROUNDING``);
:mod:`gym.analysis.rounding` gathers them for a run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from gym.core.text import Unit
from gym.models import ServiceTime
from gym.sim.grid import PACED_BELOW_CV, flush_slots, station_slots
from gym.sim.timeline import VALID_TICKS_MS, hold_ticks

if TYPE_CHECKING:
    from gym.system.topology import Node, Topology

#: A kind's roundings in one engine (its module's ``ROUNDING``): (the node, the graph,
#: the tick in ms, what the design's work is called) -> one sentence per figure moved.
Rounding = Callable[["Node", "Topology", int, Unit], list[str]]

#: A rounding that changes a figure by more than this fraction is reported.
TOLERANCE = 0.01


def service_ticks(field: str, what: str, mean: float, tick_ms: int, unit: Unit) -> list[str]:
    """A fleet's service time as the flow engine holds it, in whole ticks."""
    used = hold_ticks(mean, tick_ms) * tick_ms
    if not moved(used, mean):
        return []
    hint = tick_hint(lambda t: not moved(hold_ticks(mean, t) * t, mean))
    return [
        f"{field}: {mean:g} ms runs as {used:g} ms on {tick_ms} ms ticks "
        f"({change(used, mean)}): the flow engine holds each {what} for whole ticks, at "
        f"least one, so the {unit.many} a crash loses and when its work reaches the next node "
        f"follow the rounded time; its {what} latency is the design's ({or_request(hint)})"
    ]


def fleet_slots(
    field: str, name: str, rate: float, service: ServiceTime, replicas: int
) -> list[str]:
    """A fleet whose replicas' round(rps_per_replica x service time) slots (the request
    engine's) move its capacity. Starts paced at the fleet's rate (nearly fixed times):
    extra slots add no capacity, fewer still cut it."""
    exact = rate * service.mean_ms / 1000.0
    slots = station_slots(rate, service.mean_ms)
    if not moved(slots, exact) or (service.cv_value < PACED_BELOW_CV and slots > exact):
        return []
    capacity = replicas * slots / (service.mean_ms / 1000.0)
    each = f"each of the {replicas:,} {name} replicas" if replicas > 1 else f"the {name} replica"
    return [
        f"{field}: {num(exact)} slots a replica rounded to {slots} "
        f"({change(slots, exact)}): capacity {fig(capacity)}/s, not "
        f"{fig(replicas * rate)}/s (the request engine gives {each} "
        f"round({fig(rate)}/s x {service.mean_ms:g} ms) concurrent slots{least(exact)})"
    ]


def loss_slots(node: Node, engine: str, *, shards: int = 1, share: float = 1.0) -> list[str]:
    """A station of ``rps`` and ``service`` (each of its ``shards``, the busiest taking
    ``share`` of the work) whose round(rate x service time) slots move its capacity."""
    name, mean_ms = node.name, node.params.service.mean_ms
    rate = node.params.rps * share
    exact = rate * mean_ms / 1000.0
    slots = station_slots(rate, mean_ms)
    if not moved(slots, exact):
        return []
    who = "the request engine gives" if engine == "request" else "both engines give"
    whom = f"each of the {shards:,} {name} shards" if shards > 1 else name
    capacity = slots / (mean_ms / 1000.0) / share
    per = " a shard" if shards > 1 else ""
    return [
        f"{where(node, 'rps')}: {num(exact)} slots{per} rounded to {slots} "
        f"({change(slots, exact)}): capacity {fig(capacity)}/s, not {fig(rate / share)}/s "
        f"({who} {whom} round({fig(rate)}/s x {mean_ms:g} ms) concurrent slots{least(exact)})"
    ]


def request_flushes(
    field: str, store_field: str, ceiling: float, rate: float, mean_ms: float
) -> list[str]:
    """A write buffer whose flushes the request engine holds off flush_ceiling x the
    store's rate: it fills the store's free slots below floor(ceiling x slots) as soon as
    one frees (not once a tick), so its held writes drain at that many slots' writes back
    to back, whatever the tick."""
    meant = ceiling * rate
    slots = station_slots(rate, mean_ms)
    filled = flush_slots(ceiling, slots)
    drains = filled / (mean_ms / 1000.0)
    if not moved(drains, meant):
        return []
    return [
        f"{field}: the request engine flushes held writes into at most {filled} of the "
        f"store's {slots} slots (floor({ceiling:g} x {slots})), so it drains at most "
        f"{fig(drains)}/s, not flush_ceiling x {store_field} = {fig(meant)}/s "
        f"({change(drains, meant)}; the tick does not change it)"
    ]


def flow_flushes(
    field: str, store_field: str, ceiling: float, rate: float, tick_ms: int
) -> list[str]:
    """A write buffer whose flushes the flow engine holds off flush_ceiling x the store's
    rate: it lets the store take floor(ceiling x the writes it takes that tick) a tick,
    at least one."""
    meant = ceiling * rate
    drains = flow_drain(ceiling, rate, tick_ms)
    if not moved(drains, meant):
        return []
    # The flow engine's whole writes a tick are not monotone in the tick.
    hint = tick_hint(lambda t: not moved(flow_drain(ceiling, rate, t), meant), near=tick_ms)
    per_tick = rate * tick_ms / 1000.0
    return [
        f"{field}: the flow engine lets the store take, while it flushes, floor({ceiling:g} x "
        f"the {per_tick:.4g} writes it takes a {tick_ms} ms tick) whole writes, so it drains "
        f"at most {fig(drains)}/s, not flush_ceiling x {store_field} = {fig(meant)}/s "
        f"({change(drains, meant)}; {hint})"
    ]


def flow_drain(ceiling: float, rate: float, tick_ms: int) -> float:
    """What the flow engine's store takes a second while its write buffer flushes: the store
    takes n or n + 1 whole writes a tick (a share p of the ticks n + 1, n + p = rate x
    tick), the buffer fills floor(ceiling x that) of them, at least one."""
    per_tick = rate * tick_ms / 1000.0
    n = math.floor(per_tick + 1e-9)
    p = per_tick - n

    def filled(room: int) -> int:
        return max(1, math.floor(ceiling * room + 1e-9)) if room > 0 else 0

    return ((1.0 - p) * filled(n) + p * filled(n + 1)) / (tick_ms / 1000.0)


def moved(used: float, meant: float) -> bool:
    """Whether ``used`` is off ``meant`` by more than the tolerance."""
    return abs(used - meant) > TOLERANCE * abs(meant)


def tick_hint(fits: Callable[[int], bool], near: int | None = None) -> str:
    """Which ``--tick-ms`` keeps a figure within the tolerance: the three coarsest ticks
    that do, or the one nearest ``near``. When no tick does, that."""
    fine = [t for t in VALID_TICKS_MS if fits(t)]
    if not fine:
        return f"no --tick-ms keeps it within {TOLERANCE:.0%}"
    if near is not None:
        return f"use --tick-ms {min(fine, key=lambda t: abs(math.log(t / near)))}"
    named = [str(t) for t in sorted(fine, reverse=True)[:3]]
    return "use --tick-ms " + (", ".join(named[:-1]) + " or " if len(named) > 1 else "") + named[-1]


def or_request(hint: str) -> str:
    """A tick hint, with the request engine (which does not round the time) beside it."""
    return (
        f"{hint}, or the request engine"
        if hint.startswith("use")
        else f"{hint}: use the request engine"
    )


def least(exact: float) -> str:
    """ ", at least one" where round() alone gives none."""
    return ", at least one" if round(exact) == 0 else ""


def num(x: float) -> str:
    """A slot count as exact as it is (12.5, 0.6)."""
    return f"{x:,.4g}"


def fig(x: float) -> str:
    """A rate: whole numbers with thousands separators from 100 up (21,250), else three
    significant digits (12.5)."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def change(used: float, meant: float) -> str:
    """The move in percent: one decimal below 10% (-4.0%), whole above (+67%)."""
    pct = (used / meant - 1) * 100
    return f"{pct:+.1f}%" if abs(pct) < 9.95 else f"{pct:+.0f}%"


def metered(node: Node, graph: Topology) -> bool:
    """Whether what reaches ``node`` is metered by a node that backs up behind it (a
    store's write buffer): the flow engine then sends it only what it has slots for."""
    from gym.system.kinds import kind

    return any(
        node.kind in kind(graph.node(e.source).kind).backs_up_behind
        for e in graph.inputs(node.name)
    )


def where(node: Node, figure: str = "") -> str:
    """The field a user changes to move a node's ``figure`` (``rps``; "" for the node
    itself): ``graph.nodes.<name>.<figure>`` in a graph design, the crawler's own names
    (:attr:`gym.system.topology.Node.names`) for its nodes, which must name every figure
    a rounding of theirs says (a KeyError otherwise: never a graph path for a crawler)."""
    if node.names is not None:
        return node.names[figure]
    return f"graph.nodes.{node.name}" + (f".{figure}" if figure else "")
