"""What an engine hands back: per-tick integer tallies per component. No interpretation.

Both engines produce a :class:`RunRecord`; metrics and scoring read only this.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from gym.sim.latency import Samples
from gym.sim.timeline import Timeline

if TYPE_CHECKING:
    from gym.sim.flow.base import Component
    from gym.system.topology import Topology

IntArray = np.ndarray

#: Why a URL can be skipped (deduplicated): neither served nor failed.
SKIP_CAUSES: tuple[str, ...] = ("seen_url", "bloom_false_positive", "url_variant")


@dataclass
class Tally:
    """One component's per-tick counts (all int64 arrays of length n_ticks)."""

    name: str
    capacity: IntArray
    arrived: IntArray
    processed: IntArray
    out: IntArray
    served: IntArray
    backlog: IntArray
    failed: dict[str, IntArray]
    extra: dict[str, IntArray] = field(default_factory=dict)
    limit: int | None = None  # a buffer's size, for queues
    skipped: dict[str, IntArray] = field(default_factory=dict)  # dedup: not failed, not served
    #: Capacity per second in force each tick (0 while stalled or every replica is down);
    #: ``capacity`` is its whole URLs per tick. Saturation is measured against the rate, so
    #: a station slower than one URL a tick is not "down" in the ticks it takes none.
    rate: np.ndarray | None = None

    @classmethod
    def of(
        cls,
        c: Component,
        limit: int | None = None,
        skipped: dict[str, IntArray] | None = None,
        **extra: IntArray,
    ) -> Tally:
        return cls(
            name=c.name,
            capacity=c.capacity,
            arrived=c.arrived,
            processed=c.processed,
            out=c.out,
            served=c.served,
            backlog=c.backlog,
            failed=dict(c.failed),
            extra=dict(extra),
            limit=limit,
            skipped=dict(skipped or {}),
            rate=c.rates,
        )


@dataclass
class RunRecord:
    """Everything one run counted, tick by tick."""

    engine: str
    seed: int
    timeline: Timeline
    offered: IntArray
    components: dict[str, Tally]
    in_flight_end: dict[str, int]
    #: Per component and end_to_end (the flow engine's worked out on first use).
    latency: Mapping[str, Samples] = field(default_factory=dict)
    #: Every failure cause the system can record, in its order (its topology's, where the
    #: compile step lists them: a crawler's always list its write buffer's, with or
    #: without one; else its components' own).
    causes: tuple[str, ...] = ()
    #: URLs made in the run, per tick, by the node that made them (links found on
    #: pages): part of ``offered``, which is the source's load plus these.
    created: dict[str, IntArray] = field(default_factory=dict)
    #: The topology that ran (built once from the design, when the run starts).
    topology: Topology | None = None

    @property
    def served_total(self) -> int:
        return int(sum(int(t.served.sum()) for t in self.components.values()))

    def links_found(self) -> int:
        """URLs the run made (links found on pages), part of ``offered``."""
        return sum(int(a.sum()) for a in self.created.values())

    def retries(self) -> dict[str, int]:
        """Later tries of what failed, per component that retries (0 when none came)."""
        return {
            n: int(t.extra["retries"].sum())
            for n, t in self.components.items()
            if "retries" in t.extra
        }

    def writes_saved(self) -> int:
        """Writes saved: what a node finished before any write (a service's
        ``finish_share``, ``writes_saved`` in its tally)."""
        return sum(
            int(t.extra["writes_saved"].sum())
            for t in self.components.values()
            if "writes_saved" in t.extra
        )

    def component_of(self, cause: str) -> str:
        """The component that records ``cause``."""
        return next(name for name, t in self.components.items() if cause in t.failed)

    def skipped_by_cause(self) -> dict[str, int]:
        return self._totals(SKIP_CAUSES, "skipped")

    def failed_by_cause(self) -> dict[str, int]:
        return self._totals(self.causes, "failed")

    def _totals(self, causes: tuple[str, ...], kind: str) -> dict[str, int]:
        """Run totals of every cause of ``kind`` ("failed" or "skipped"), 0 where none."""
        totals = dict.fromkeys(causes, 0)
        for tally in self.components.values():
            for cause, counts in getattr(tally, kind).items():
                totals[cause] = totals.get(cause, 0) + int(counts.sum())
        return totals

    @classmethod
    def collect(
        cls,
        *,
        timeline: Timeline,
        engine: str,
        seed: int,
        offered: IntArray,
        components: list[Component],
        causes: tuple[str, ...],
        in_transit: dict[str, int] | None = None,
        created: dict[str, IntArray] | None = None,
    ) -> RunRecord:
        """The record of a run from its components, in pipeline order: each gives its own
        tally, and those that can hold work their URLs in flight at the end; ``in_transit``:
        URLs on delayed edges at the end, by the node they are on their way to;
        ``created``: URLs made by nodes (links), per tick, added to the offered load."""
        tallies = {c.name: c.tally() for c in components}
        in_flight = {c.name: c.in_flight_end() for c in components if c.holds_work}
        for name, count in (in_transit or {}).items():
            in_flight[name] = in_flight.get(name, 0) + count
        made = {name: a.copy() for name, a in (created or {}).items()}
        total = offered + sum(made.values(), np.zeros_like(offered))
        record = cls(engine, seed, timeline, total, tallies, in_flight, causes=causes, created=made)
        record.check_conservation()
        return record

    def check_conservation(self) -> None:
        """offered = served + failed + skipped + in flight at the end, exactly (skipped is 0
        unless a node skips some: a queue's or a lookup's skips at its door). A violation is
        a bug."""
        offered = int(self.offered.sum())
        failed = sum(self.failed_by_cause().values())
        skipped = sum(self.skipped_by_cause().values())
        in_flight = sum(self.in_flight_end.values())
        if offered != self.served_total + failed + skipped + in_flight:
            raise AssertionError(
                f"conservation broken: offered {offered} != served {self.served_total} + "
                f"failed {failed} + skipped {skipped} + in flight {in_flight}"
            )
