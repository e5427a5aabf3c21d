"""The cheapest design that passes every SLO, and why nothing cheaper does.

The search space is unit-aligned designs: each component as large as its units allow
under the scenario's catalog (a frontier unit drains 30,000/s and holds 100,000 URLs, a
replica fetches 4,000/s, the cache reaches the hit ratio its units buy, a store unit
writes 25,000/s, a writer unit holds 100,000 writes). Buying part of a unit costs the
whole unit, so nothing cheaper hides between these points. The search goes up in cost
from the least a design can cost (one unit each of frontier, fetchers, cache and page
store), runs every design of that cost over the same seeds, and stops at the first cost
where some design passes at the chosen confidence; it then looks a few units further for
designs that buy more margin. Deterministic for a seed: same scenario, same answer.

A graph design (``system: graph``) is searched the same way over its own nodes: each node
whose kind is bought in units (:data:`gym.kinds.Kind.scale`: a queue, a fleet, a cache, a
write buffer, a store) gets at least one, sized by its kind's rule; the base design gives
the graph, the edges and everything the units do not set.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import ValidationError

from gym.costing import cache_hit_ratio, cache_units, units_of
from gym.costing import check as check_units
from gym.costing import units as costing_units
from gym.errors import GymError, Problem
from gym.limits import DEFAULT_CONFIDENCE
from gym.models import Design, GraphDesign, Scenario
from gym.montecarlo import MonteCarloResult, evaluate, tasks_for
from gym.parallel import Executor, Progress, Serial

COMPONENTS = ("frontier", "fetchers", "cache", "page_store", "async_writer")

M = TypeVar("M", Design, GraphDesign)


def slo_margin(result: MonteCarloResult) -> float:
    """The smallest relative slack over the SLOs (mean measured vs target)."""
    slack = []
    for s in result.slos:
        if s.mean is None:  # undefined in every run: no slack at all
            slack.append(-1.0)
            continue
        if s.target == 0:
            continue
        gap = (s.mean - s.target) if s.op == ">=" else (s.target - s.mean)
        slack.append(gap / abs(s.target))
    return min(slack) if slack else 0.0


@dataclass(frozen=True)
class Candidate:
    """A unit-aligned design and how it did."""

    units: dict[str, int]
    design: Design | GraphDesign
    result: MonteCarloResult

    @property
    def cost(self) -> int:
        return sum(self.units.values())

    @property
    def passed(self) -> bool:
        return self.result.verdict == "pass"

    def margin(self) -> float:
        """The smallest relative slack over the SLOs (mean measured vs target)."""
        return slo_margin(self.result)

    def describe(self) -> str:
        return _described(self.units)

    def failing(self) -> list[str]:
        out = []
        for s in self.result.slos:
            if s.pass_rate < 1.0:
                mean = "undefined" if s.mean is None else f"{s.mean:,.4g}"
                out.append(
                    f"{s.name} {mean} (target {s.op} {s.target:g}) passes in "
                    f"{s.pass_rate:.0%} of runs"
                )
        return out


@dataclass
class Optimum:
    """The answer: the cheapest passing design, the trade-offs above it, what fails below."""

    best: Candidate | None
    runner_ups: list[Candidate] = field(default_factory=list)
    cheaper: list[Candidate] = field(default_factory=list)  # the best try at each lower cost
    evaluated: int = 0
    simulations: int = 0  # runs made: a design that fails early stops running
    skipped: int = 0  # unit sets no design file can say (beyond a field's limit)
    runs: int = 0
    confidence: float = DEFAULT_CONFIDENCE
    space: Space | None = None

    def why_nothing_cheaper(self) -> list[str]:
        space = self.space or crawler_space(None)
        lines = [f"fewer than {space.min_cost} units cannot build a design: {space.needs}"]
        for c in self.cheaper:
            reason = "; ".join(c.failing()) or "passes too rarely for the confidence asked"
            lines.append(
                f"{c.cost} units: the best of them ({c.describe()}) passes "
                f"{c.result.passes}/{c.result.n} runs: {reason}"
            )
        return lines

    def design_file(self, scenario: str | None, seed: int, runs: int) -> str | None:
        """The cheapest passing design as a file ``gym run`` loads, headed by a comment on
        how it was found (``scenario``'s name, the seeds from ``seed``); None if none."""
        if self.best is None:
            return None
        from gym.loading import dump_yaml
        from gym.outputs import printable

        best = self.best
        low, high = best.result.ci
        header = (
            f"# The cheapest design found by `gym optimize` for scenario "
            f"{printable(str(scenario))}: {best.cost} units.\n# Passes every SLO in "
            f"{best.result.passes}/{best.result.n} runs (seeds {seed}..{seed + runs - 1}); "
            f"pass probability 95% interval [{low:.2f}, {high:.2f}].\n"
        )
        return header + dump_yaml(design_mapping(best.design))

    def to_json(self) -> dict[str, Any]:
        def cand(c: Candidate) -> dict[str, Any]:
            low, high = c.result.ci
            return {
                "units": c.units,
                "cost_units": c.cost,
                "design": design_mapping(c.design),
                "pass_probability": c.result.pass_probability,
                "pass_probability_ci": [low, high],
                "margin": c.margin(),
            }

        out: dict[str, Any] = {
            "found": self.best is not None,
            "runs_per_design": self.runs,
            # one run per design: its own verdict, no confidence rule
            "confidence": self.confidence if self.runs > 1 else None,
            "designs_evaluated": self.evaluated,
            "simulations": self.simulations,
            "designs_skipped": self.skipped,
            "why_nothing_cheaper": self.why_nothing_cheaper(),
            "runner_ups": [cand(c) for c in self.runner_ups],
        }
        if self.best is not None:
            best = cand(self.best)
            out.update(
                design=best["design"],
                cost_units=best["cost_units"],
                pass_probability=best["pass_probability"],
                pass_probability_ci=best["pass_probability_ci"],
                margin=best["margin"],
                units=best["units"],
            )
        return out


#: The fields the search chooses for every candidate: a base design's values for them are
#: replaced, so a ``--set`` of one of them would be silently dropped. (The writer's buffer
#: is replaced too, but a base needs one to state a writer's flush ceiling.)
SEARCHED = (
    "frontier.drain_rps",
    "frontier.buffer",
    "frontier.back_queues",
    "fetchers.replicas",
    "fetchers.rps_per_replica",
    "cache.hit_ratio",
    "page_store.rps",
)


def check_sets(sets: list[str], searched: tuple[str, ...] = SEARCHED) -> None:
    """Refuse a ``--set`` on a field the search chooses (or a section holding one): the
    search would replace it, so it would do nothing. Service times, the crash policy,
    dedup and the writer's flush ceiling are kept from the base, and may be set."""
    from gym.loading import parse_override

    for text in sets:
        path = ".".join(parse_override(text)[0])
        for chosen in searched:
            if path == chosen or chosen.startswith(path + ".") or path.startswith(chosen + "."):
                raise GymError.single(
                    None,
                    "--set",
                    f"{text}: the optimizer chooses {chosen} for every candidate, "
                    "so this would be dropped; --set only what the base design keeps "
                    "(service times, a crash policy, what its units do not buy)",
                )


def unit_design(
    units: dict[str, int], scenario: Scenario, base: Design | None, name: str | None
) -> Design:
    """The design that gets the most out of ``units`` under the scenario's catalog.

    Raises :class:`GymError` when no design file can say it: a figure beyond a field's
    limit (two frontier units of a catalog's 1e9 URLs/s), or a hit ratio so close to 1
    that it cannot be told from 1 or from the next number of cache units.
    """
    cat = scenario.catalog
    data: dict[str, Any] = base.model_dump(mode="json") if base is not None else {}
    data["name"] = name
    data["frontier"] = {
        "drain_rps": units["frontier"] * cat.frontier.drain_rps,
        "buffer": units["frontier"] * cat.frontier.buffer,
    }
    fetchers = data.get("fetchers", {})
    fetchers.update(replicas=units["fetchers"], rps_per_replica=cat.fetchers.max_rps_per_replica)
    data["fetchers"] = fetchers
    cache = data.get("cache", {})
    ratio = cache_hit_ratio(units["cache"], cat)
    shown = round(ratio, 12)  # 0.96, not 0.9600000000000001, when that is still exact
    cache["hit_ratio"] = shown if shown < 1 and cache_units(shown, cat) == units["cache"] else ratio
    data["cache"] = cache
    store = data.get("page_store", {})
    relational = store.get("layout") == "relational"  # a base's layout is kept
    per = cat.page_store.relational_rps if relational else cat.page_store.rps
    store["rps"] = units["page_store"] * per
    data["page_store"] = store
    if units.get("async_writer"):
        writer = data.get("async_writer") or {}
        writer["buffer"] = units["async_writer"] * cat.async_writer.buffer
        data["async_writer"] = writer
    else:
        data["async_writer"] = None
    if units.get("seen_set"):  # the link-discovery loop's seen set, a unit per shard
        discovery = data.get("discovery") or {}
        discovery["shards"] = units["seen_set"]
        data["discovery"] = discovery
    what = _described(units)
    design = _validated(Design, data, what)
    problems = check_units(design, cat)
    got = {k: v for k, v in costing_units(design, cat).items() if k != "resolver"}
    if problems or got != {k: v for k, v in units.items() if v}:
        raise GymError.single(
            None,
            "cache.hit_ratio",
            f"{what}: the hit ratio {ratio!r} cannot be told from that of another number "
            "of cache units",
        )
    return design


def _described(units: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in units.items() if v)


def _validated(model: type[M], data: dict[str, Any], what: str) -> M:
    """``data`` as a ``model``, or the GymError naming the field a unit set pushed past its
    limit (what no design file could say)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])
        raise GymError.single(
            None, where, f"{what}: beyond the field's limit under this catalog"
        ) from None


def design_mapping(design: Design | GraphDesign) -> dict[str, Any]:
    """A design as a mapping that loads as a design file: defaults left out (a graph's
    edges keep their ``from`` and ``to``)."""
    by_alias = isinstance(design, GraphDesign)
    data = design.model_dump(mode="json", exclude_defaults=True, by_alias=by_alias)
    if by_alias:  # each node's kind first, as a person writes it
        nodes = data["graph"]["nodes"]
        for name, node in nodes.items():
            nodes[name] = {"kind": node.pop("kind"), **node}
    return {k: v for k, v in data.items() if v is not None}


@dataclass(frozen=True)
class Space:
    """What the search buys: the parts in units (each at least its minimum), and how a
    set of units becomes a design."""

    parts: tuple[str, ...]
    mins: tuple[int, ...]
    needs: str  # why the least design costs what it does, for the messages
    build: Callable[[dict[str, int], Scenario, str | None], Design | GraphDesign]
    #: Fields the search sets on every candidate (a ``--set`` of one would be dropped).
    searched: tuple[str, ...] = ()

    @property
    def min_cost(self) -> int:
        return sum(self.mins)


def crawler_space(base: Design | None) -> Space:
    """The crawler's: frontier, fetchers, cache and page store one unit each at least, the
    async writer none or more; with a base running the link-discovery loop, its seen set's
    shards too (one at least)."""
    if base is not None and base.discovery is not None:
        return Space(
            parts=(*COMPONENTS, "seen_set"),
            mins=(1, 1, 1, 1, 0, 1),
            needs="frontier, fetchers, cache, page store and seen set need one unit each",
            build=lambda units, scenario, name: unit_design(units, scenario, base, name),
            searched=(*SEARCHED, "discovery.shards"),
        )
    return Space(
        parts=COMPONENTS,
        mins=(1, 1, 1, 1, 0),
        needs="frontier, fetchers, cache and page store need one unit each",
        build=lambda units, scenario, name: unit_design(units, scenario, base, name),
        searched=SEARCHED,
    )


def graph_space(base: GraphDesign, scenario: Scenario) -> Space:
    """A graph design's: every node whose kind is bought in units, one unit each at least.
    The base must run under the scenario (its faults name its nodes) before any search."""
    from gym import kinds
    from gym.api import validate

    wrong = [p for p in validate(base, scenario) if p.file == scenario._source]
    if wrong:
        raise GymError(wrong)

    parts = tuple(
        name
        for name, spec in base.graph.nodes.items()
        if kinds.kind(getattr(spec, "kind")).scale is not None  # noqa: B009
    )
    if not parts:
        raise GymError.single(
            base._source, "graph.nodes", "has no node bought in units: nothing to search"
        )
    searched = tuple(
        f"graph.nodes.{name}.{key}" for name in parts for key in _scaled(base, name, 1, scenario)
    )
    return Space(
        parts=parts,
        mins=(1,) * len(parts),
        needs=f"{', '.join(parts)} need one unit each",
        build=lambda units, sc, name: unit_graph(units, sc, base, name),
        searched=searched,
    )


def _scaled(base: GraphDesign, name: str, units: int, scenario: Scenario) -> dict[str, Any]:
    from gym import kinds

    spec = base.graph.nodes[name]
    scale = kinds.kind(getattr(spec, "kind")).scale  # noqa: B009
    assert scale is not None
    return scale(units, scenario.catalog)


def unit_graph(
    units: dict[str, int], scenario: Scenario, base: GraphDesign, name: str | None
) -> GraphDesign:
    """The base graph with each bought node as large as its units allow under the
    scenario's catalog. Raises :class:`GymError` when no design file can say it."""
    data = base.model_dump(mode="json", by_alias=True)
    data["name"] = name
    for node, count in units.items():
        data["graph"]["nodes"][node].update(_scaled(base, node, count, scenario))
    what = _described(units)
    design = _validated(GraphDesign, data, what)
    got = {k: v for k, v in units_of(design, scenario.catalog).items() if k in units}
    if got != units:
        raise GymError.single(
            None, "graph.nodes", f"{what}: the catalog prices this design at {got}, not {units}"
        )
    return design


def space_for(scenario: Scenario, base: Design | GraphDesign | None) -> Space:
    """What to search for ``scenario``: a graph scenario needs the graph to size."""
    if scenario.system == "graph":
        if not isinstance(base, GraphDesign):
            raise GymError.single(
                scenario._source,
                "system",
                "graph: give the graph design to size (gym optimize DESIGN --scenario ...); "
                "the search keeps its nodes and edges and buys each node's units",
            )
        return graph_space(base, scenario)
    if isinstance(base, GraphDesign):
        raise GymError.single(
            scenario._source,
            "system",
            f"{scenario.system}: {base.name or 'the design'} is a graph design; its scenario "
            "needs system: graph",
        )
    return crawler_space(base)


def _first_run_rank(run: dict[str, Any]) -> tuple[bool, int, float]:
    """How close one run came to passing: passed, fewer SLOs failed, more margin."""
    failed = sum(1 for v in run["slos"].values() if not v["passed"])
    margin = slo_margin(MonteCarloResult([run]))
    return run["verdict"] == "pass", -failed, margin


def _failures(runs: list[dict[str, Any]]) -> int:
    return sum(1 for r in runs if r["verdict"] != "pass")


def _unit_sets(cost: int, space: Space | None = None) -> list[dict[str, int]]:
    """Every split of ``cost`` units over the space's parts, each at least its minimum
    (the crawler's: one each of frontier, fetchers, cache and page store, the rest,
    possibly none, to the writer: C(cost, 4) of them)."""
    space = space or crawler_space(None)
    spare = cost - space.min_cost
    if spare < 0:
        return []
    out = []
    k = len(space.parts)
    # Stars and bars: the spare units over k parts, in lexicographic order.
    for bars in _compositions(spare, k):
        out.append({p: m + b for p, m, b in zip(space.parts, space.mins, bars, strict=True)})
    return out


def _compositions(total: int, k: int) -> list[tuple[int, ...]]:
    """Every k-tuple of whole numbers >= 0 adding up to ``total``, in order."""
    if k == 1:
        return [(total,)]
    return [
        (first, *rest) for first in range(total + 1) for rest in _compositions(total - first, k - 1)
    ]


#: Simulations an optimization may run at most, unless allowed more (``--max-runs``).
DEFAULT_MAX_RUNS = 500_000


def cost_limit(scenario: Scenario, max_cost: int | None) -> int:
    """The most units the search goes to: ``max_cost``, else the cost SLO, else 20."""
    if max_cost is not None:
        return max_cost
    slo = scenario.slos.cost_units
    return int(slo.max) if slo is not None else 20


def designs_up_to(limit: int, space: Space | None = None) -> int:
    """Unit-aligned designs of the least cost to ``limit`` units: the spare units over k
    parts, C(spare + k - 1, k - 1) at each cost, summing to C(limit - least + k, k) (the
    crawler's: C(limit + 1, 5))."""
    space = space or crawler_space(None)
    k = len(space.parts)
    spare = limit - space.min_cost
    return math.comb(spare + k, k) if spare >= 0 else 0


def check(
    scenario: Scenario,
    *,
    runs: int,
    confidence: float,
    max_cost: int | None,
    max_runs: int = DEFAULT_MAX_RUNS,
    space: Space | None = None,
) -> int:
    """Refuse, before anything runs, a search that cannot find anything or is too large;
    returns the cost limit. Computed, not tried: the worst case is every design up to
    the limit, each over ``runs`` seeds."""
    from gym.montecarlo import runs_needed, wilson

    space = space or crawler_space(None)
    least = space.min_cost
    problems = []
    slo = scenario.slos.cost_units
    limit = cost_limit(scenario, max_cost)
    if max_cost is None and limit < least:
        problems.append(
            Problem(
                scenario._source,
                "slos.cost_units.max",
                f"{slo.max if slo else limit:g}: no design costs less than {least} units "
                f"({space.needs}), so none can pass",
            )
        )
    elif limit < least:
        problems.append(
            Problem(None, "--max-cost", f"{limit}: a design needs at least {least} units")
        )
    elif max_cost is not None and slo is not None and max_cost > slo.max:
        problems.append(
            Problem(
                None,
                "--max-cost",
                f"{max_cost}: designs over the scenario's cost SLO ({slo.max:g} units) "
                f"cannot pass; use --max-cost {int(slo.max)} or less",
            )
        )
    if runs > 1:
        if confidence >= 1:
            problems.append(
                Problem(
                    None,
                    "--confidence",
                    f"{confidence:g}: no number of runs shows a pass probability of 1 with "
                    "95% confidence; use a value below 1",
                )
            )
        elif wilson(runs, runs)[0] < confidence:
            problems.append(
                Problem(
                    None,
                    "--runs",
                    f"{runs} runs cannot show a pass probability of {confidence:g} with 95% "
                    f"confidence even if every run passes, so nothing would be found; use "
                    f"--runs {runs_needed(confidence)} or more",
                )
            )
    if not problems and (total := designs_up_to(limit, space) * runs) > max_runs:
        problems.append(
            Problem(
                None,
                "--max-runs",
                f"up to {designs_up_to(limit, space):,} designs of {least} to {limit} units "
                f"x {runs} runs "
                f"= {total:,} simulations, more than the limit of {max_runs:,}; lower "
                f"--max-cost or --runs, or allow it with --max-runs {total}",
            )
        )
    if problems:
        raise GymError(problems)
    return limit


def allowed_failures(runs: int, confidence: float) -> int:
    """The most failed runs out of ``runs`` that still let a design pass at ``confidence``
    (one run: none; 20 runs at 0.8: none, since 19/20 has a Wilson lower bound of 0.76)."""
    from gym.montecarlo import wilson

    if runs == 1:
        return 0
    most = -1
    for failed in range(runs + 1):
        if wilson(runs - failed, runs)[0] < confidence:
            break
        most = failed
    return most


#: The seeds a candidate runs in turn, as shares of ``runs``: the first run screens every
#: design, the next few the survivors, the rest those still in the running.
_STAGES = (1, 4)


def _stages(runs: int) -> list[range]:
    """Seed offsets in stages: [0], [1, 4), [4, runs) (clipped to ``runs``)."""
    bounds = [0, *(b for b in _STAGES if b < runs), runs]
    return [range(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def search(
    scenario: Scenario,
    *,
    base: Design | GraphDesign | None = None,
    runs: int = 20,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    max_cost: int | None = None,
    beyond: int = 1,
    executor: Executor | None = None,
    progress: Progress | None = None,
    plan: Progress | None = None,
    max_runs: int = DEFAULT_MAX_RUNS,
) -> Optimum:
    """Search up in cost for the cheapest design that passes; see the module docstring.
    Refuses (GymError, before running anything) what :func:`check` refuses.

    Each design of a cost runs its seeds in stages (the first seed, the next three, the
    rest) and drops out as soon as it has failed more runs than the confidence allows
    (:func:`allowed_failures`): the verdicts are those of every design running every
    seed, for a fraction of the runs. The best design of a cost where none passes runs
    all its seeds, for the "why nothing cheaper" figures. ``progress`` is called with
    each batch of finished runs, ``plan`` with each change of the runs planned (every
    design's first run at the start, less what is not needed when the search stops)."""
    executor = executor or Serial()
    space = space_for(scenario, base)
    limit = check(
        scenario,
        runs=runs,
        confidence=confidence,
        max_cost=max_cost,
        max_runs=max_runs,
        space=space,
    )
    opt = Optimum(best=None, runs=runs, confidence=confidence, space=space)
    most_failed = allowed_failures(runs, confidence)
    passing: list[Candidate] = []
    stop_at = limit
    name = f"cheapest-for-{scenario.name}"

    k = len(space.parts)

    def at_cost(cost: int) -> int:
        """How many unit sets a cost has: its spare units over the parts."""
        spare = cost - space.min_cost
        return math.comb(spare + k - 1, k - 1) if spare >= 0 else 0

    # Every design's first run is planned at once (the bar moves forward only); the runs
    # of later stages as they are known, and what is not needed is taken back.
    screens = {cost: at_cost(cost) for cost in range(space.min_cost, limit + 1)}
    if plan:
        plan(sum(screens.values()))

    def run(designs: list[Design | GraphDesign], seeds: range) -> list[list[dict[str, Any]]]:
        """Each design's results for ``seeds`` (offsets from ``seed``)."""
        if plan and seeds.start > 0:
            plan(len(designs) * len(seeds))
        picked = range(seed + seeds.start, seed + seeds.stop)
        tasks = [t for d in designs for t in tasks_for(d, scenario, picked)]
        results = executor.map(evaluate, tasks, progress)
        opt.simulations += len(tasks)
        k = len(seeds)
        return [results[i * k : (i + 1) * k] for i in range(len(designs))]

    for cost in range(space.min_cost, limit + 1):
        if cost > stop_at:
            if plan:  # the levels left: not run
                plan(-sum(n for c, n in screens.items() if c >= cost))
            break
        sets, designs = [], []
        for u in _unit_sets(cost, space):
            try:
                designs.append(space.build(u, scenario, name))
            except GymError:
                opt.skipped += 1
                continue
            sets.append(u)
        if plan and len(designs) < screens[cost]:  # unit sets no design file can say
            plan(len(designs) - screens[cost])
        if not designs:
            continue
        done: list[list[dict[str, Any]]] = [[] for _ in designs]
        alive = list(range(len(designs)))
        for stage in _stages(runs):
            if not alive:
                break
            for i, got in zip(alive, run([designs[i] for i in alive], stage), strict=True):
                done[i] += got
            alive = [i for i in alive if _failures(done[i]) <= most_failed]
        opt.evaluated += len(designs)
        level = [
            Candidate(sets[i], designs[i], MonteCarloResult(done[i], confidence)) for i in alive
        ]
        good = [c for c in level if c.passed]
        if not good and opt.best is None:
            # The best try of this cost, by its first run (every design made it): passed,
            # then the fewest SLOs failed, then the least short of them; it runs every seed.
            i = max(range(len(designs)), key=lambda i: _first_run_rank(done[i][0]))
            rest = range(len(done[i]), runs)
            if len(rest):
                done[i] += run([designs[i]], rest)[0]
            opt.cheaper.append(
                Candidate(sets[i], designs[i], MonteCarloResult(done[i], confidence))
            )
        passing += good
        if good and opt.best is None:
            opt.best = max(good, key=lambda c: c.margin())
            stop_at = min(limit, cost + beyond)
    if opt.best is not None:
        frontier: list[Candidate] = []
        for c in sorted(passing, key=lambda c: (c.cost, -c.margin())):
            if c is opt.best:
                continue
            if all(c.margin() > f.margin() for f in [opt.best, *frontier]):
                frontier.append(c)
        opt.runner_ups = frontier
    return opt
