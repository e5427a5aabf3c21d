"""Headroom: how far a passing design is from failing (``gym run``, docs/explore.md).

Three margins, each found on the flow engine with the run's seed and tick, on copies of
the scenario or the design:

- **load**: the factor on every load stage of the scenario (the surge included) at
  which the design first fails: bisected between the last factor that passes and the
  first that fails, to 1% (a factor that fails the run is found by doubling from 1);
- **crash**: with a crash in the scenario, how many replicas of the crashed fleet it can
  lose at once and still pass, bisected between the scenario's count and the fleet
  (with several crashes, the one that takes the most replicas; the others as they are);
- **hit ratio**: the lowest cache hit ratio at which a crawler still passes, bisected
  down from the design's to 0.005; for a graph, the same for each cache node.

Each says which SLO fails first past it. A bisection takes the runs past the first
failure to fail too; on one seed the edge is noisy, so a margin is the edge this seed
shows. A margin that cannot fail within its range says
so (a design that passes at 64x its load). The runs are counted: ``cost`` is what the
margins spent, in flow runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gym.core.jsontext import JsonText
from gym.explore.changes import mapping, read, with_field
from gym.models import CrashFault, Design, Scenario
from gym.system.compiled import addons, parameter_paths
from gym.system.graph import GraphDesign

if TYPE_CHECKING:
    from gym.analysis.result import Result

#: The largest factor on the load tried, and the precision of the load and hit-ratio
#: bisections (relative for the load, absolute for the hit ratio).
MAX_LOAD = 64.0
LOAD_PRECISION = 0.01
HIT_PRECISION = 0.005


@dataclass(frozen=True)
class Margin:
    """One margin: the last value that passes, the first that fails, and the SLOs that
    failed there (empty when none did within the range)."""

    what: str  # load, crash, hit_ratio
    passes: float  # the last value that passes
    fails: float | None  # the first that fails (None: none within the range)
    failed: tuple[str, ...] = ()
    fleet: int | None = None  # crash: the replicas of the fleet it hits
    at_s: float | None = None  # crash: when the crash it varies starts
    surge: bool = False  # load: the scenario's load rises above its first stage's
    node: str | None = None  # hit ratio: a graph's cache node

    def sentence(self) -> str:
        """The margin in words."""
        why = f" ({', '.join(self.failed)} fails)" if self.failed else ""
        if self.what == "load":
            load = "the scenario's load" + (" (its surge scaled alike)" if self.surge else "")
            if self.fails is None:
                return f"load: passes at every factor tried, up to {self.passes:g}x {load}"
            low, high = _apart(self.passes, self.fails)
            return f"load: passes up to {low}x {load}; fails at {high}x{why}"
        if self.what == "crash":
            when = "" if self.at_s is None else f" at t={self.at_s:g}s"
            n, fleet = int(self.passes), self.fleet
            lose = f"all {fleet} replicas" if n == fleet else f"{n} replica{'s' if n != 1 else ''}"
            return (
                f"crash{when}: can lose {lose}"
                + (f" of {fleet}" if n != fleet else "")
                + " at once"
                + ("" if self.fails is None else f"; losing {int(self.fails)} fails{why}")
            )
        at = "" if self.node is None else f" at {self.node}"
        if self.fails is None:
            return f"hit ratio{at}: passes down to {self.passes:g}"
        # four decimals, every margin alike: within 0.0001 of the points the bisection ran
        high, low = _apart(self.passes, self.fails, at_least=4, exact=False)
        return f"hit ratio{at}: passes down to {high}; fails at {low}{why}"

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "failed": list(self.failed)}


def _apart(low: float, high: float, at_least: int = 2, exact: bool = True) -> tuple[str, str]:
    """The two points a bisection ran, each as it ran to within a part in 10,000 (five
    figures: 1.1796875 is 1.1797, not 1.18, which may pass where 1.1797 failed), shorter
    where that is exact, and never the same figure for both."""
    for digits in range(at_least, 8):
        a, b = f"{low:.{digits}f}", f"{high:.{digits}f}"
        close = abs(float(a) - low) <= 5e-5 * low and abs(float(b) - high) <= 5e-5 * high
        if a != b and (close or not exact):
            return a, b
    return f"{low:g}", f"{high:g}"


@dataclass
class Headroom(JsonText):
    """The margins of a passing run, and the flow runs they took; ``skipped`` says why
    there are none when they would cost more than the budget asked."""

    margins: list[Margin] = field(default_factory=list)
    cost: int = 0  # flow runs
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "margins": [m.to_dict() for m in self.margins],
            "runs": self.cost,
            "skipped": self.skipped,
        }


class _Runs:
    def __init__(self, result: Result) -> None:
        self.result = result
        self.count = 0

    def fails(self, design: Design | GraphDesign, scenario: Scenario) -> tuple[str, ...] | None:
        """The SLOs that fail (None when it passes)."""
        from gym.api import simulate

        self.count += 1
        r = simulate(design, scenario, seed=self.result.seed, tick_ms=self.result.tick_ms)
        failed = tuple(c.name for c in r.checks if not c.passed)
        return failed or None


#: ``gym run``'s budget for the margins, in ticks of the run (about 20 flow runs of as
#: many ticks each): a longer run skips them unless asked for (--headroom). The chaos
#: scenario has 4,000; the budget, five times that. Counted, not timed: the same inputs
#: always decide the same way.
AUTO_TICKS = 20_000

#: What a tick of a run with feedback costs against one without: a link-discovery loop
#: or a retry policy makes the flow engine advance tick by tick, not in one pass
#: (measured: seen-set-8 under the chaos scenario, 0.58 s a run against the reference's
#: 7 ms for the same 4,000 ticks, about 80x; retry-storm under freshness about 60x).
STEP_WEIGHT = 50


def weighted_ticks(result: Result) -> int:
    """The run's ticks as the budget counts them: times :data:`STEP_WEIGHT` when its
    topology has a delayed edge (a loop back) or a retry policy."""
    from gym.system import compiled

    ticks = int(result.metrics.record.timeline.n_ticks)
    graph = compiled.system_topology(result.design, result.scenario)
    stepped = any(e.delay_s > 0 for e in graph.edges) or any(
        n.retry is not None for n in graph.nodes
    )
    return ticks * (STEP_WEIGHT if stepped else 1)


def headroom(result: Result, max_ticks: int | None = None) -> Headroom | None:
    """The margins of ``result`` (None when it fails: a failing design has none). With
    ``max_ticks``: a run of more ticks gets no margin, and ``skipped`` says so."""
    if not result.passed:
        return None
    ticks = result.metrics.record.timeline.n_ticks
    if max_ticks is not None and (cost := weighted_ticks(result)) > max_ticks:
        each = f"{ticks:,} ticks each" + (
            f", stepped tick by tick (a loop or retries: counted {STEP_WEIGHT}x)"
            if cost != ticks
            else ""
        )
        return Headroom(
            skipped=f"about 20 flow runs of {each}, over the {max_ticks:,} gym run takes on "
            "by itself; gym run --headroom works them out"
        )
    runs = _Runs(result)
    out = Headroom()
    first = runs.fails(result.design, _scaled(result.scenario, 2.0))
    out.margins.append(_load(runs, first))
    crash = _crash(runs)
    if crash is not None:
        out.margins.append(crash)
    # each node's hit ratio (a crawler's cache is the design's one: not named)
    named = addons(result.design) is None
    for node, path in parameter_paths(result.design, "hit_ratio").items():
        out.margins.append(_hit_ratio(runs, path, node if named else None))
    out.cost = runs.count
    return out


def _scaled(scenario: Scenario, factor: float) -> Scenario:
    stages = [s.model_copy(update={"multiplier": s.multiplier * factor}) for s in scenario.load]
    return scenario.model_copy(update={"load": stages})


def _load(runs: _Runs, at_two: tuple[str, ...] | None) -> Margin:
    """``at_two``: what failed at twice the load (the first run)."""
    design, scenario = runs.result.design, runs.result.scenario
    low, high, failed = 1.0, 2.0, at_two
    while failed is None and high < MAX_LOAD:
        low, high = high, high * 2
        failed = runs.fails(design, _scaled(scenario, high))
    surge = max(s.multiplier for s in scenario.load) > scenario.load[0].multiplier
    if failed is None:
        return Margin("load", high, None, surge=surge)
    while high - low > LOAD_PRECISION * low:
        mid = (low + high) / 2
        got = runs.fails(design, _scaled(scenario, mid))
        if got is None:
            low = mid
        else:
            high, failed = mid, got
    return Margin("load", low, high, failed, surge=surge)


def _crash(runs: _Runs) -> Margin | None:
    design, scenario = runs.result.design, runs.result.scenario
    crashes = [(i, f) for i, f in enumerate(scenario.faults) if isinstance(f, CrashFault)]
    if not crashes:
        return None
    # The crash that takes the most replicas (the first of those): the one to vary.
    i, crash = max(crashes, key=lambda c: (c[1].replicas, -c[0]))
    fleet = _fleet(runs.result, crash.target)
    if fleet is None:
        return None
    at = crash.at_s if len(crashes) > 1 else None  # named when there is more than one

    def with_lost(n: int) -> tuple[str, ...] | None:
        faults = list(scenario.faults)
        faults[i] = crash.model_copy(update={"replicas": n})
        return runs.fails(design, scenario.model_copy(update={"faults": faults}))

    # Bisected between the scenario's count (it passes) and the whole fleet.
    low = min(crash.replicas, fleet)
    failed = with_lost(fleet) if fleet > low else None
    if failed is None:
        return Margin("crash", fleet, None, (), fleet, at)
    high = fleet
    while high - low > 1:
        mid = (low + high) // 2
        got = with_lost(mid)
        if got is None:
            low = mid
        else:
            high, failed = mid, got
    return Margin("crash", low, high, failed, fleet, at)


def _fleet(result: Result, target: str) -> int | None:
    """The replicas of the fleet a crash hits, as the run had them."""
    topology = result.metrics.record.topology
    if topology is None or target not in topology.names:
        return None
    replicas = getattr(topology.node(target).params, "replicas", None)
    return replicas if isinstance(replicas, int) else None


def _hit_ratio(runs: _Runs, path: str, node: str | None) -> Margin:
    """The hit ratio at ``path`` in the design file (of the cache ``node``, None for the
    crawler's own)."""
    design, scenario = runs.result.design, runs.result.scenario

    def at(hit: float) -> Design | GraphDesign:
        return with_field(design, path, hit)

    high = float(read(mapping(design), path))
    failed = runs.fails(at(0.0), scenario)
    if failed is None:
        return Margin("hit_ratio", 0.0, None, node=node)
    low = 0.0  # fails
    while high - low > HIT_PRECISION:
        mid = round((low + high) / 2, 6)
        got = runs.fails(at(mid), scenario)
        if got is None:
            high = mid
        else:
            low, failed = mid, got
    return Margin("hit_ratio", high, low, failed, node=node)
