"""The ``source`` kind: offers the scenario's load, one URL at a time.

Its counts per tick are the flow engine's (the same Poisson draws from the same stream,
named after the node), each URL at a uniform random instant inside its tick (which makes
them a Poisson process), or evenly spaced for deterministic arrivals. A tick's instants
are merged by the kernel with its heap (:meth:`~gym.sim.request.kernel.Kernel.arrivals`),
as SimPy orders the timeouts of a tick created in a row.
"""

from __future__ import annotations

from collections.abc import Callable

from gym.core.streams import stream
from gym.sim.flow.source import arrival_counts
from gym.sim.request.base import Run, Url, _nowhere, arrival_delays
from gym.system.topology import Node

Progress = Callable[[float], None]


class SourceRule:
    """A source: its offered counts, and the arrivals of each tick on the kernel."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...] = ()) -> None:
        self.run = run
        self.name = node.name
        self.offered = arrival_counts(run.scenario, run.timeline, stream(run.seed, node.name))
        self.offered_list: list[int] = self.offered.tolist()
        self.rng_times = stream(run.seed, "arrival_times")
        self.even = run.scenario.arrivals == "deterministic"
        self.progress: Progress | None = None
        self.next_report = 1.0
        #: Where a URL goes from here (set by the engine).
        self.onward: Callable[[Url], None] = _nowhere

    def start(self) -> None:
        """Schedule tick 0's arrivals (and, from each tick, the next one's)."""
        self._tick(0)

    def _tick(self, k: int) -> None:
        """Tick ``k`` starts: its URLs' arrival instants, and the next tick's start."""
        run = self.run
        kernel = run.kernel
        now = kernel.now
        if self.progress is not None and now >= self.next_report and k > 0:
            self.progress(now)
            self.next_report = now + 1.0
        if k >= run.n:
            return
        tick_s = run.tick_s
        delays = arrival_delays(k, self.offered_list[k], tick_s, self.even, self.rng_times, now)
        # As SimPy times a timeout: now + its delay.
        kernel.arrivals([now + d for d in delays], self._arrive)
        kernel.schedule(max(0.0, (k + 1) * tick_s - now), self._tick, k + 1)

    def _arrive(self, t: float) -> None:
        run = self.run
        self.onward(Url(t, int(t * run.per_s + 1e-9), t >= run.warmup_s))


RULE = SourceRule
