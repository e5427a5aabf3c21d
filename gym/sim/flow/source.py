"""The ``source`` kind: the offered load, URLs per tick, from the scenario's load stages."""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence

import numpy as np
import simpy

from gym.core.streams import stream
from gym.models import Scenario
from gym.sim.flow.base import Build, Component, IntArray, Ledger, PerRow, per_row, tick_quota
from gym.sim.timeline import Timeline
from gym.system.topology import Node


class Source(Component):
    """Offers URLs: Poisson per tick (or exactly rate x tick, evenly spaced) at the current
    stage's rate."""

    name = "source"

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator | PerRow,
        ledger: Ledger,
        scenario: Scenario,
        rows: int | None = None,
    ) -> None:
        super().__init__(env, rng, ledger, rows=rows)
        self.base_rps = scenario.base_rps
        self.poisson = scenario.arrivals == "poisson"
        self.multiplier = 1.0
        self._carry = 0.0

    @property
    def rate(self) -> float:
        return self.base_rps * self.multiplier

    def _advance(self, t0: int, t1: int) -> None:
        n = t1 - t0
        if self.poisson:
            mean = self.rate * self.ledger.tick_ms / 1000.0
            if self.rows is None:
                offered = self.rng.poisson(mean, size=n)
            else:  # each run's draws from its own generator
                offered = np.stack([g.poisson(mean, size=n) for g in per_row(self.rng)])
            self.expected[..., t0:t1] = mean
        else:
            # The same in every run of a batch (no draws): the rows share it.
            offered, self._carry = tick_quota(self.rate, self.ledger.tick_ms, n, self._carry)
            self.expected[..., t0:t1] = offered
            # Evenly spaced: no two closer than a tick over its largest count.
            per_tick = math.ceil(self.rate * self.ledger.tick_ms / 1000.0 - 1e-9)
            self.pace[..., t0:t1] = per_tick * 1000.0 / self.ledger.tick_ms
            mean = self.rate * self.ledger.tick_ms / 1000.0
            self.periodic[..., t0:t1] = abs(per_tick - mean) < 1e-9
            # Counts of n and n + 1 (a share p of ticks get the extra one): variance
            # p (1 - p) over a mean of n + p; 0 for a whole number per tick.
            p = mean - math.floor(mean + 1e-9) if mean > 0 else 0.0
            self.dispersion[..., t0:t1] = p * (1.0 - p) / mean if mean > 0 else 0.0
        self.arrived[..., t0:t1] = offered
        self.processed[..., t0:t1] = offered
        self.out[..., t0:t1] = offered

    def load_stage(self, start: int, multiplier: float) -> Generator[simpy.Event, None, None]:
        """From tick ``start`` on, offer ``multiplier`` x base_rps."""
        yield self.env.timeout(start)
        self.ledger.sync(start)
        self.multiplier = multiplier


def arrival_counts(scenario: Scenario, timeline: Timeline, rng: np.random.Generator) -> IntArray:
    """URLs offered in each tick, drawn exactly as :class:`Source` draws them.

    Draws go stage by stage; numpy's generators give the same numbers whether a stretch
    of ticks is drawn at once or in pieces, so this equals the flow engine's offered load
    for the same seed (the engines see the same traffic).
    """
    n = timeline.n_ticks
    out = np.zeros(n, dtype=np.int64)
    carry = 0.0
    stages = scenario.load
    for i, stage in enumerate(stages):
        t0 = min(n, timeline.to_tick(stage.at_s))
        t1 = n if i + 1 == len(stages) else min(n, timeline.to_tick(stages[i + 1].at_s))
        if t1 <= t0:
            continue
        rate = scenario.base_rps * stage.multiplier
        if scenario.arrivals == "poisson":
            out[t0:t1] = rng.poisson(rate * timeline.tick_ms / 1000.0, size=t1 - t0)
        else:
            out[t0:t1], carry = tick_quota(rate, timeline.tick_ms, t1 - t0, carry)
    return out


def build(b: Build, node: Node) -> Source:
    return Source(b.env, stream(b.seed, node.name), b.ledger, b.scenario)


def batch(builds: Sequence[Build], node: Node) -> Source:
    """One source for the runs of a batch: a row each, each run's own generator."""
    b = builds[0]
    rngs = PerRow(stream(x.seed, node.name) for x in builds)
    return Source(b.env, rngs, b.ledger, b.scenario, rows=len(builds))


def connect(
    component: Component, inputs: Sequence[Component], outputs: Sequence[Component]
) -> None:
    """A source has no input."""
