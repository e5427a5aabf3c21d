"""The request engine's write buffer flushes within a tick: held writes go into the store
as soon as a slot below the flush ceiling frees, not once a tick, so how fast a backlog
drains does not depend on ``--tick-ms`` (issue 26, item 6). Before, the flusher filled the
ceiling's slots at each tick's start and slots freed within the tick waited for the
next: at most ceiling slots a tick (10 slots on 50 ms ticks: 200 writes/s where 500/s
were due). The crawler's async writer flushed the same way, and flushes the same way now."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gym
from gym.models import Scenario
from gym.system.graph import GraphDesign
from tests.conftest import design, scenario

#: The ticks (ms) the drain is checked on: finer and coarser than the 20 ms write.
TICKS = (1, 5, 10, 25, 50)


def _buffered(service: dict[str, Any]) -> GraphDesign:
    """writes -> buffer (ceiling 0.5) -> a store of 1,000 writes/s."""
    nodes = {
        "src": {"kind": "source"},
        "buf": {"kind": "write_buffer", "buffer": 100_000, "flush_ceiling": 0.5},
        "db": {"kind": "store", "rps": 1_000, "service": service},
    }
    edges = [{"from": "src", "to": "buf"}, {"from": "buf", "to": "db"}]
    return GraphDesign.model_validate({"graph": {"nodes": nodes, "edges": edges}})


def _stall_then_quiet(*stalls: tuple[float, float]) -> Scenario:
    """1,000 writes/s, evenly spaced, for 2 s while the store stalls; none after (10 s);
    ``stalls``: more (at_s, for_s) stalls of the store."""
    faults = [
        {"kind": "stall", "at_s": at, "for_s": length, "target": "db"}
        for at, length in ((0, 2), *stalls)
    ]
    return Scenario.model_validate(
        {
            "system": "graph",
            "duration_s": 10,
            "base_rps": 1_000,
            "arrivals": "deterministic",
            "load": [{"at_s": 0, "multiplier": 1.0}, {"at_s": 2, "multiplier": 0.0}],
            "faults": faults,
        }
    )


def _flushed_per_second(m: Any, tick_ms: int) -> list[int]:
    flushed = m.record.components["buf"].extra["flushed"]
    per_s = 1000 // tick_ms
    return [int(flushed[i * per_s : (i + 1) * per_s].sum()) for i in range(len(flushed) // per_s)]


@pytest.mark.parametrize("tick_ms", TICKS)
def test_fixed_writes_drain_at_the_ceilings_rate_whatever_the_tick(tick_ms: int) -> None:
    """The store: 1,000 writes/s x 20 ms = 20 slots; the ceiling floor(0.5 x 20) = 10 of
    them. The 2 s stall holds 2 x 1,000 = 2,000 writes and none arrive after it, so from
    2 s every slot below the ceiling holds a held write back to back: 10 writes every
    20 ms = 10 / 0.02 = 500 writes/s, the 2,000 gone in 2,000 / 500 = 4 s (by 6 s).

    Flushed once a tick (before), a slot freed 20 ms into a 50 ms tick waited 30 ms: 10
    writes a tick, 10 / 0.05 = 200/s (400/s on 25 ms ticks); only ticks dividing 20 ms
    gave 500/s."""
    m = gym.simulate(
        _buffered({"mean_ms": 20}), _stall_then_quiet(), engine="request", tick_ms=tick_ms
    ).metrics
    buf = m.record.components["buf"]
    per_s = 1000 // tick_ms
    assert buf.backlog[2 * per_s - 1] == 2_000  # the stall's writes, all held at its end
    assert _flushed_per_second(m, tick_ms) == [0, 0, 500, 500, 500, 500, 0, 0, 0, 0]
    assert buf.backlog[6 * per_s - 1] == 0
    assert m.failed == 0


@pytest.mark.parametrize("tick_ms", [10, 50])
def test_the_flow_engine_drains_the_same(tick_ms: int) -> None:
    """The flow engine's writer: the store takes 1,000 x tick writes a tick (10 on 10 ms
    ticks, 50 on 50 ms), the flush floor(0.5 x that) = 5 or 25 a tick: 500/s on both,
    as the request engine's 10 slots of 20 ms."""
    m = gym.simulate(
        _buffered({"mean_ms": 20}), _stall_then_quiet(), engine="flow", tick_ms=tick_ms
    ).metrics
    assert _flushed_per_second(m, tick_ms) == [0, 0, 500, 500, 500, 500, 0, 0, 0, 0]


def test_random_writes_drain_at_the_ceilings_rate_on_coarse_ticks() -> None:
    """Exponential writes of mean 20 ms: each of the 10 slots below the ceiling takes a
    held write as soon as its last ends, so it writes back to back, 1 / 0.02 = 50
    writes/s on average, 10 x 50 = 500/s in all: 2 x 500 = 1,000 +- 32 (a Poisson count
    of mean 1,000) in the 2 s after the stall, on any tick.

    Flushed once a tick on 50 ms ticks (before), a slot took a write at each tick's start
    only, E[min(S, 50 ms)] / E[S] = 1 - e^-2.5 = 0.92 of a write a tick at most: 10 x
    0.92 / 0.05 = 184/s, 368 in 2 s."""
    design = _buffered({"dist": "exponential", "mean_ms": 20})
    counts = []
    for tick_ms in (10, 50):
        m = gym.simulate(design, _stall_then_quiet(), engine="request", tick_ms=tick_ms).metrics
        counts.append(sum(_flushed_per_second(m, tick_ms)[2:4]))
    assert all(900 <= c <= 1_100 for c in counts), counts
    assert np.isclose(counts[0], counts[1], rtol=0.1)


def test_a_stall_in_the_middle_of_a_drain_holds_the_flusher_until_it_ends() -> None:
    """The store stalls again at 3 s for 1 s, in the middle of the drain: nothing is
    flushed then, and the flusher starts again at 4 s, when the stall ends (not a tick
    later): 500 at 2-3 s, none at 3-4 s, then 500/s until the 1,500 left are gone (6-7 s)."""
    sc = _stall_then_quiet((3, 1))
    m = gym.simulate(_buffered({"mean_ms": 20}), sc, engine="request", tick_ms=50).metrics
    assert _flushed_per_second(m, 50) == [0, 0, 500, 0, 500, 500, 500, 0, 0, 0]


@pytest.mark.parametrize("tick_ms", [10, 25, 50])
def test_the_crawlers_async_writer_drains_the_same_whatever_the_tick(tick_ms: int) -> None:
    """The crawler's async writer had the same once-a-tick flush. Every fetched URL is
    written (no cache hits): 1,000 writes/s for about 2 s, held while the page store
    stalls (0-3 s). The store: 1,000/s x 20 ms = 20 slots, the 0.5 ceiling floor(0.5 x
    20) = 10 of them, 10 / 0.02 s = 500 writes/s from 3 s, the 2,000 held gone by 7 s.
    Flushed once a tick (before): 10 a tick, 200/s on 50 ms ticks, 400/s on 25 ms."""
    d = design(
        cache={"hit_ratio": 0.0},
        page_store={"rps": 1_000},
        async_writer={"buffer": 100_000, "flush_ceiling": 0.5},
    )
    sc = scenario(
        load=[{"at_s": 0, "multiplier": 1.0}, {"at_s": 2, "multiplier": 0.0}],
        faults=[{"kind": "stall", "at_s": 0, "for_s": 3, "target": "page_store"}],
    )
    m = gym.simulate(d, sc, engine="request", tick_ms=tick_ms).metrics
    writer = m.record.components["async_writer"]
    per_s = 1000 // tick_ms
    flushed = writer.extra["flushed"]
    by_second = [int(flushed[i * per_s : (i + 1) * per_s].sum()) for i in range(10)]
    assert writer.extra["held_in"].sum() == 2_000
    assert by_second == [0, 0, 0, 500, 500, 500, 500, 0, 0, 0]
    assert m.failed == 0
