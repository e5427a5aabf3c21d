"""The unit search of the suggested fix (:mod:`gym.explore.fix`): a uniform-cost search
over units per part from a design's own, each candidate a flow run with the failing
run's seed and tick; the parts a failing run implicates; how far a run is from passing."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gym.core.errors import GymError
from gym.models import Design, Scenario
from gym.system.graph import GraphDesign

if TYPE_CHECKING:
    from gym.analysis.result import Result
    from gym.explore.unit_space import Space


#: The parts that shield a component: more of them, less load or loss there (a higher hit
#: ratio sends the resolver fewer lookups; a writer holds writes through a store stall).
_SHIELDS = {"resolver": ("cache",), "page_store": ("async_writer",)}


@dataclass
class Search:
    """The search's inputs and its count of runs."""

    base: Design | GraphDesign
    scenario: Scenario
    space: Space
    seed: int
    tick_ms: int
    max_runs: int
    runs: int = 0
    #: Every search of one suggestion counts here too (for progress: runs so far).
    spent: list[int] = field(default_factory=lambda: [0])
    progress: Callable[[int], None] | None = None

    def run(self, design: Design | GraphDesign) -> Result:
        from gym.api import simulate

        self.runs += 1
        self.spent[0] += 1
        if self.progress is not None:
            self.progress(self.spent[0])
        return simulate(design, self.scenario, seed=self.seed, tick_ms=self.tick_ms)

    def build(self, units: tuple[int, ...]) -> Design | GraphDesign | None:
        u = dict(zip(self.space.parts, units, strict=True))
        try:
            return self.space.build(u, self.scenario, self.base.name)
        except GymError:  # beyond a field's limit: no design file can say it
            return None


Found = tuple[tuple[int, ...], "Design | GraphDesign", "Result"]


def clamp(start: tuple[int, ...], space: Space, limit: int) -> tuple[int, ...]:
    """``start`` with no part above what a design within ``limit`` units can hold of it
    (the limit less the other parts' least): a design over the limit is searched from
    there, not one unit at a time down from a part of thousands (a drain_rps of 1e9)."""
    floor = sum(space.mins)
    if sum(start) <= limit or limit < floor:
        return start
    return tuple(min(u, limit - floor + m) for u, m in zip(start, space.mins, strict=True))


def uniform(
    search: Search, start: tuple[int, ...], limit: int, *, strict: bool = False
) -> tuple[Found | None, tuple[float, tuple[int, ...], Result] | None]:
    """The uniform-cost search over units from ``start`` (the module docstring): the
    first candidate that passes, and the closest miss. ``strict``: no candidate over
    ``limit``, even on the way down from a start above it."""
    space = search.space
    order = itertools.count()
    queue: list[tuple[int, float, int, tuple[int, ...]]] = [(sum(start), 0.0, next(order), start)]
    seen = {start}
    closest: tuple[float, tuple[int, ...], Result] | None = None
    while queue and search.runs < search.max_runs:
        _, _, _, units = heapq.heappop(queue)
        candidate = search.build(units)
        if candidate is None:
            continue
        r = search.run(candidate)
        if r.passed:
            return (units, candidate, r), closest
        slack = margin(r)
        if closest is None or slack > closest[0]:
            closest = (slack, units, r)
        for step in unit_moves(r, space):
            child = tuple(u + s for u, s in zip(units, step, strict=True))
            if child in seen or any(c < m for c, m in zip(child, space.mins, strict=True)):
                continue
            if sum(child) > (limit if strict else max(limit, sum(start))):
                # over the limit: only on the way down
                continue
            seen.add(child)
            heapq.heappush(queue, (sum(child), -slack, next(order), child))
    return None, closest


def unit_moves(r: Result, space: Space) -> list[tuple[int, ...]]:
    """One unit more of each part the run implicates, when an SLO other than cost failed;
    one unit less of each part, when the cost SLO failed."""
    parts = space.parts
    failed = {c.name for c in r.checks if not c.passed}
    out = []
    if failed - {"cost_units"}:
        hot = implicated(r, parts)
        out += [tuple(1 if p == q else 0 for q in parts) for p in parts if p in hot]
    if "cost_units" in failed:
        out += [tuple(-1 if p == q else 0 for q in parts) for p in parts]
    return out


def implicated(r: Result, parts: tuple[str, ...]) -> set[str]:
    """The parts a failing run points at (see the module docstring)."""
    m = r.metrics
    limit = next((c.target for c in r.checks if c.name == "peak_saturation" and c.op == "<="), 1.0)
    names = list(m.components)
    hot: set[str] = set()
    for i, name in enumerate(names):
        cw = m.components[name]
        lost = int(cw.failed_total.sum())
        peak = cw.peak.value
        if lost == 0 and (peak is None or peak <= limit):
            continue
        hot.add(name)
        hot.update(_SHIELDS.get(name, ()))
        overflowed = any(
            cause.endswith("overflow") and int(n.sum()) for cause, n in cw.failed.items()
        )
        if overflowed and i + 1 < len(names):
            hot.add(names[i + 1])
        if any(cause.startswith("crash") and int(n.sum()) for cause, n in cw.failed.items()):
            hot.add(name)
    if not hot:
        # Short of throughput with nothing lost or saturated: the busiest part.
        busiest = m.peak.component
        hot = {busiest} if busiest else set(parts)
    return hot & set(parts)


def margin(r: Result) -> float:
    """How far the run is from passing: its smallest relative slack over the SLOs."""
    out = []
    for c in r.checks:
        if c.measured is None or not c.target:
            continue
        gap = c.measured - c.target if c.op == ">=" else c.target - c.measured
        out.append(gap / abs(c.target))
    return min(out, default=0.0)
