"""The scenario's timeline in ticks and in words: what is going on at any moment.

The engine schedules events from it; explanations and plots name events with it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gym.models import CrashFault, Scenario, SlowdownFault, StallFault

if TYPE_CHECKING:
    import numpy as np

#: Tick lengths the gym accepts: whole milliseconds that divide one second.
VALID_TICKS_MS: tuple[int, ...] = tuple(d for d in range(1, 1001) if 1000 % d == 0)

#: Longest run, in ticks, the per-tick arrays are allowed to reach.
MAX_TICKS = 2_000_000


@dataclass(frozen=True)
class Event:
    """One thing the scenario does: a load stage or a fault, with when it is active."""

    kind: str  # "load", "crash", "stall" or "slowdown"
    start_s: float
    end_s: float  # the scenario's end when the event lasts to the end
    name: str  # how explanations name it, e.g. "deep-crawl surge (load x2.0)"
    target: str | None = None
    multiplier: float | None = None  # load stages only
    links_per_page: float | None = None  # a load stage that changes the links per page

    @property
    def is_base_load(self) -> bool:
        return self.kind == "load" and self.multiplier == 1.0 and self.links_per_page is None


@dataclass(frozen=True)
class Segment:
    """A stretch of time in which no event starts or ends."""

    start_s: float
    end_s: float
    events: tuple[Event, ...]
    affected_by: dict[str, set[str]] = field(default_factory=dict, compare=False)

    def describe(self, component: str | None = None) -> str:
        """The events in force, as words; with ``component``, only those that matter to it."""
        return _describe(self.events, component, self.affected_by)


class Timeline:
    """A scenario laid on the tick grid."""

    def __init__(self, scenario: Scenario, tick_ms: int = 10) -> None:
        if tick_ms not in VALID_TICKS_MS:
            raise ValueError(f"tick_ms must be a whole number of ms dividing 1000, not {tick_ms}")
        self.scenario = scenario
        self.tick_ms = tick_ms
        self.tick_s = tick_ms / 1000
        self.duration_s = scenario.duration_s
        self.n_ticks = self.to_tick(scenario.duration_s)
        self.ticks_per_window = 1000 // tick_ms
        self.events = self._events()
        #: Per node, the nodes whose faults explain what happens there besides its own (a
        #: queue backs up when the fleet it feeds crashes), from the run's topology by its
        #: kinds (:func:`gym.system.kinds.affected_by`, set by :func:`gym.api.simulate`).
        self.affected_by: dict[str, set[str]] = {}

    def to_tick(self, t_s: float) -> int:
        """The first tick that starts at or after ``t_s`` (events act on tick boundaries)."""
        return max(0, math.ceil(t_s * 1000 / self.tick_ms - 1e-9))

    def _events(self) -> list[Event]:
        sc = self.scenario
        out: list[Event] = []
        for i, stage in enumerate(sc.load):
            end = sc.load[i + 1].at_s if i + 1 < len(sc.load) else sc.duration_s
            how = f"load x{stage.multiplier:g}"
            if stage.links_per_page is not None:
                how += f", {stage.links_per_page:g} links a page"
            if stage.label:
                name = f"{stage.label} ({how})"
            elif stage.multiplier == 1.0 and stage.links_per_page is None:
                name = "base load"
            else:
                name = how
            out.append(
                Event(
                    "load",
                    stage.at_s,
                    end,
                    name,
                    multiplier=stage.multiplier,
                    links_per_page=stage.links_per_page,
                )
            )
        for fault in sc.faults:
            end = (
                sc.duration_s
                if fault.for_s is None
                else min(sc.duration_s, fault.at_s + fault.for_s)
            )
            out.append(Event(fault.kind, fault.at_s, end, fault_name(fault), target=fault.target))
        return out

    def active_at(self, t_s: float) -> list[Event]:
        """Events in force at time ``t_s``."""
        return [e for e in self.events if e.start_s <= t_s < e.end_s]

    def fault_ticks(self, fault: CrashFault | StallFault | SlowdownFault) -> tuple[int, int | None]:
        """The ticks a fault starts and ends on; no end for a crash that stays down."""
        start = self.to_tick(fault.at_s)
        return start, None if fault.for_s is None else self.to_tick(fault.at_s + fault.for_s)

    def segments(self) -> list[Segment]:
        """The run cut at every event start and end."""
        cuts = sorted(
            {0.0, self.duration_s}
            | {e.start_s for e in self.events}
            | {e.end_s for e in self.events}
        )
        segs = []
        for a, b in itertools.pairwise(cuts):
            if b > a:
                segs.append(Segment(a, b, tuple(self.active_at(a)), self.affected_by))
        return segs

    def describe_at(self, t_s: float, component: str | None = None) -> str:
        """The events in force at ``t_s``; with ``component``, only those that matter to it."""
        return _describe(self.active_at(t_s), component, self.affected_by)


def matters_to(
    event: Event, component: str | None, affected_by: dict[str, set[str]] | None = None
) -> bool:
    """Whether ``event`` can explain what happens at ``component``: the load, its own
    faults, and those of the nodes ``affected_by`` names for it (a queue backs
    up when the fleet behind it loses replicas, a write buffer fills when its store
    stalls)."""
    if component is None or event.target is None:
        return True
    table = {} if affected_by is None else affected_by
    return event.target in table.get(component, {component})


def _describe(
    events: list[Event] | tuple[Event, ...],
    component: str | None,
    affected_by: dict[str, set[str]] | None = None,
) -> str:
    notable = [
        e.name for e in events if not e.is_base_load and matters_to(e, component, affected_by)
    ]
    return ", ".join(notable) if notable else "base load"


def fault_name(fault: CrashFault | StallFault | SlowdownFault) -> str:
    """How a fault is named in explanations."""
    if fault.label:
        return fault.label
    if isinstance(fault, CrashFault):
        n = fault.replicas
        return f"{fault.target} crash ({n} replica{'s' if n != 1 else ''} down)"
    if isinstance(fault, StallFault):
        return f"{fault.target} stall"
    return f"{fault.target} slowdown x{fault.factor:g}"


def hold_ticks(mean_ms: float, tick_ms: int) -> int:
    """A fleet's service time in whole ticks, at least one: how long the flow engine holds
    one of its services (:mod:`gym.analysis.rounding` warns when this changes it by more
    than 1%)."""
    return max(1, math.floor(mean_ms / tick_ms + 0.5))


def links_schedule(base: float, scenario: Scenario, timeline: Timeline) -> np.ndarray:
    """Links per page in force each tick: ``base``, then each load stage's links_per_page
    from its start on (a stage without one keeps the one before)."""
    import numpy as np

    per = np.full(timeline.n_ticks, float(base))
    for stage in scenario.load:
        if stage.links_per_page is not None:
            per[min(timeline.n_ticks, timeline.to_tick(stage.at_s)) :] = stage.links_per_page
    return per
