"""The two engines on random graph designs (issue 26): per node, what it processed and
what it lost, and the run's availability, agree within a tolerance argued from the
sampling error.

The designs come from :func:`tests.randgraph.draw`: splits with shares, joins, feedback
loops with delays, every kind a graph may name (queue, fleet, cache, service, write
buffer, store), every fault (crash with fail or requeue, stall, slowdown), surges,
Poisson and evenly spaced arrivals. Each is run with simulation seeds 0, 1 and 2 in both
engines; each figure is in points: of availability, or of the URLs offered (a node's
processed and failed totals over the run).

**The tolerance.** A figure's two engine means may differ by at most

    FLOOR + K x sqrt(sd_flow^2 / n + sd_request^2 / n),   FLOOR = 1 point, K = 4, n = 3,

where sd is each engine's run-to-run standard deviation of that figure over its n seeds,
never taken below the binomial sd of a share of the URLs offered, sqrt(p (1 - p) / N)
(the least spread a count decided URL by URL has; three runs' sample sd comes out below
a third of the true one about one time in ten, which would make the test flaky).

- *K = 4*: the square root is the standard error of the difference of the two means
  (taken as independent samples; the same seed gives both engines the same arrival
  counts, which only makes the difference less spread, so it is an upper bound). With
  the binomial floor keeping the estimate honest, 4 standard errors is a chance of about
  6e-5 per figure under a normal law; the suite compares 112 figures, so a false alarm
  from sampling alone is under one run in a hundred for a new seed set (the seeds are
  fixed: a passing suite stays passing).
- *FLOOR = 1 point*: the flow engine is an approximation, not a second sample of the
  request engine: its loss stations use Erlang's formula on a smoothed offered load,
  documented within 3% of theory (docs/model.md, *Loss stations*), so a station losing a
  third of a run's URLs may differ by 1 point however many seeds are run. No sampling
  error shrinks that; the floor is that documented model error, not a margin.

What it can see: runs of 2,000-10,000 URLs have a run-to-run sd of 0.5-1 point in a
node's figures, so tolerances come to 2.5-5 points, and a node figure about 3 points off
fails (the request engine made to lose a quarter more at every station fails 2 of the 6
graphs expected to pass; a tenth more fails none). Longer runs or more seeds would
tighten it, at the suite's time.

The draws stay clear of the differences docs/model.md lists between the engines
(tests/randgraph.py names each at the line that avoids it). Cases where the check found a
difference it does not list are marked ``xfail`` below with what was measured and why,
not given a wider tolerance. ``python -m tests.randgraph --report 48`` re-measures the
figure docs/model.md gives; ``--show SEED`` prints one case.
"""

from __future__ import annotations

import functools

import pytest

from gym.api import validate
from tests.randgraph import Quantity, compare, draw

#: Generator seeds the suite runs (about 25 s for both engines): together they draw every
#: kind, fault and shape (``test_the_seeds_draw_every_kind_fault_and_shape``).
SEEDS = (33, 17, 34, 40, 2, 22, 30, 15)

#: Disagreements the cross-check found that docs/model.md did not list, measured at the
#: commit that added this file (points; flow - request, mean of seeds 0-2). Not fixed here.
FOUND = {
    40: (
        "st2.failed -4.0 points (se 0.49): a store of 8 slots of fixed 25 ms writes fed "
        "evenly spaced arrivals (300/s, a surge to 414/s) through a service of 2 ms "
        "exponential calls loses 8.0% of them in the flow engine and 11.9% in the request "
        "engine: the flow engine takes the stream as smoother than Poisson (Hayward's "
        "share); the engines of 0629b0c, before the walk of fixed-service stations, gave "
        "8.4% and 11.9%"
    ),
}


@functools.cache
def _figures(seed: int) -> tuple[Quantity, ...]:
    return tuple(compare(draw(seed)))


def _outside(figures: tuple[Quantity, ...]) -> list[str]:
    return [q.line() for q in figures if not q.ok]


def _param(seed: int) -> object:
    if seed in FOUND:
        return pytest.param(seed, marks=pytest.mark.xfail(reason=FOUND[seed], strict=False))
    return seed


@pytest.mark.parametrize("seed", [_param(s) for s in SEEDS])
def test_the_engines_agree_on_a_random_graph(seed: int) -> None:
    """Every node's processed and failed totals and the availability within FLOOR + K
    standard errors (the module docstring argues both)."""
    figures = _figures(seed)
    assert len(figures) >= 5  # availability and two figures a node, at least two nodes
    bad = _outside(figures)
    assert not bad, f"{draw(seed).describe()}\n" + "\n".join(bad)


def test_the_check_fails_when_one_engine_is_off() -> None:
    """The tolerance is no blanket: moving one node's request figure by FLOOR + K se plus
    a tenth of a point (about 2.5 points here), in every run, fails the check."""
    figures = _figures(SEEDS[0])
    node = next(q for q in figures if q.name.endswith(".failed") and max(q.request) > 0)
    assert node.ok
    shift = node.tolerance + 0.1 - node.diff
    moved = Quantity(node.name, node.flow, [x - shift for x in node.request], node.offered)
    assert not moved.ok
    assert _outside((*figures, moved)) == [moved.line()]


def test_the_seeds_draw_every_kind_fault_and_shape() -> None:
    """The suite's seeds draw every graph kind, every fault, splits, joins, feedback with
    delays, surges and both arrival kinds; every draw of the first 200 seeds is a design
    and a scenario both engines accept."""
    features: set[str] = set()
    for seed in SEEDS:
        features |= draw(seed).features
    wanted = {"queue_fleet", "queue", "cache", "service", "buffered_store", "store"}
    wanted |= {"fault:crash", "fault:stall", "fault:slowdown", "requeue"}
    wanted |= {"split", "join", "feedback", "delay", "surge", "deterministic_arrivals"}
    wanted |= {"fleet:deterministic", "fleet:random"}
    wanted |= {"station:deterministic", "station:exponential", "station:lognormal"}
    assert wanted <= features, wanted - features
    for seed in range(200):
        case = draw(seed)
        assert validate(case.design, case.scenario) == [], seed
