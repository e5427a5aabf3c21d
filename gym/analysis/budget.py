"""The error budget: how many failures the availability SLO allows, and who spent them.

allowed = (1 - availability target) x the URLs (a graph's requests) that finished
(served + failed): the availability SLO's own denominator, so the budget is over 100%
spent exactly when the SLO fails. Every failed URL is charged to its cause
and to one scenario event: among the events in force when it failed that can explain a
loss at its component (its own faults, and for the frontier the fetchers' crashes; see
``gym.sim.timeline.matters_to``), a fault before a load stage, the latest started first; with
none, the load stage in force ("base load" at multiplier 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gym.analysis.metrics import Metrics
from gym.sim.timeline import Event, matters_to


@dataclass(frozen=True)
class EventSpend:
    """Failures charged to one scenario event, by cause."""

    name: str
    kind: str
    start_s: float
    end_s: float
    urls: int
    by_cause: dict[str, int]


@dataclass(frozen=True)
class ErrorBudget:
    """The budget, what was spent, by cause and by event."""

    target: float | None  # the availability SLO, None when the scenario has none
    allowed: float
    spent: int
    by_cause: dict[str, int]
    by_event: list[EventSpend] = field(default_factory=list)
    over: bool = False  # the availability SLO failed: more than the budget was spent

    @property
    def fraction_spent(self) -> float | None:
        """spent / allowed: above 1 exactly when the availability SLO fails. ``allowed`` is
        a float, so at availability == target the ratio can come out a few ulps off 1;
        only there is it put on the side of 1 the SLO's verdict says. None when nothing
        is allowed (a target of 1, or nothing finished): see :attr:`over`."""
        if self.allowed <= 0:
            return None
        raw = self.spent / self.allowed
        if math.isclose(raw, 1.0, rel_tol=1e-12):
            return math.nextafter(1.0, 2.0) if self.over else 1.0
        return raw

    def to_dict(self) -> dict[str, object]:
        def frac(n: int) -> float | None:
            return n / self.allowed if self.allowed > 0 else None

        return {
            "availability_target": self.target,
            "allowed": self.allowed,
            "spent": self.spent,
            "fraction_spent": self.fraction_spent,
            "over": self.over,
            "by_cause": {
                c: {"urls": n, "fraction_of_budget": frac(n)} for c, n in self.by_cause.items() if n
            },
            "by_event": [
                {
                    "event": e.name,
                    "kind": e.kind,
                    "start_s": e.start_s,
                    "end_s": e.end_s,
                    "urls": e.urls,
                    "fraction_of_budget": frac(e.urls),
                    "by_cause": {c: n for c, n in e.by_cause.items() if n},
                }
                for e in self.by_event
            ],
        }


def compute(metrics: Metrics, availability_target: float | None) -> ErrorBudget:
    """Charge every failure to its cause and to one scenario event."""
    rec = metrics.record
    tl = rec.timeline
    events = tl.events
    charged = {id(e): dict.fromkeys(metrics.failed_by_cause, 0) for e in events}
    for cause, total in metrics.failed_by_cause.items():
        if not total:
            continue
        component = rec.component_of(cause)
        counts = rec.components[component].failed[cause]
        for seg in tl.segments():
            t0, t1 = tl.to_tick(seg.start_s), min(tl.to_tick(seg.end_s), tl.n_ticks)
            n = int(np.sum(counts[t0:t1]))
            if n:
                owner = _owner(seg.events, component, tl.affected_by)
                charged[id(owner)][cause] += n
    spends = [
        EventSpend(e.name, e.kind, e.start_s, e.end_s, sum(by.values()), by)
        for e in events
        if (by := charged[id(e)]) and sum(by.values())
    ]
    spends.sort(key=lambda s: -s.urls)
    target = availability_target
    allowed = (1 - target) * metrics.finished if target is not None else 0.0
    availability = metrics.availability
    over = target is not None and availability is not None and availability < target
    return ErrorBudget(
        target, allowed, metrics.failed, dict(metrics.failed_by_cause), spends, over=over
    )


def format_fraction(fraction: float | None) -> str:
    """A share of the budget as a percentage: whole percents, but one decimal near 100%,
    so 100.4% spent (a failing SLO) never reads as "100%"."""
    if fraction is None:
        return "-"
    if 0.99 <= fraction <= 1.01 and fraction != 1.0:
        return f"{fraction:.1%}"
    return f"{fraction:.0%}"


def _owner(active: tuple[Event, ...], component: str, affected_by: dict[str, set[str]]) -> Event:
    faults = [e for e in active if e.kind != "load" and matters_to(e, component, affected_by)]
    if faults:
        return max(faults, key=lambda e: e.start_s)
    return next(e for e in active if e.kind == "load")
