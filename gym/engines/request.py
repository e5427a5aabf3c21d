"""The request engine's entry (``--engine request``): every URL one event at a time, by
:mod:`gym.sim.request`.

A graph design, and a crawler with retries or the link-discovery loop (its built-in
graph, :func:`gym.crawler.topology`), are walked by :mod:`gym.sim.request.engine`; a
plain crawler goes through its own pipeline, :mod:`gym.sim.request.pipeline`, on the
same kernel and stations.
"""

from __future__ import annotations

from collections.abc import Callable

from gym import crawler
from gym.models import Design, GraphDesign, Scenario
from gym.record import RunRecord
from gym.timeline import Timeline

Progress = Callable[[float], None]


def run(
    design: Design | GraphDesign,
    scenario: Scenario,
    *,
    seed: int,
    timeline: Timeline,
    warmup_s: float = 0.0,
    progress: Progress | None = None,
) -> RunRecord:
    """Simulate ``design`` under ``scenario``, every URL on its way through it."""
    if isinstance(design, GraphDesign) or design.discovery or design.retries:
        from gym.models.graph import topology
        from gym.sim.request import engine

        graph = (
            topology(design)
            if isinstance(design, GraphDesign)
            else crawler.topology(design, scenario)
        )
        record = engine.run(
            graph, scenario, seed=seed, timeline=timeline, warmup_s=warmup_s, progress=progress
        )
        if isinstance(design, Design):
            record.causes = crawler.causes(design)
        return record
    from gym.sim.request.pipeline import Engine

    record = Engine(design, scenario, seed, timeline, warmup_s, progress).run()
    record.seed = seed
    return record
