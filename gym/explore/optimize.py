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
whose kind is bought in units (:data:`gym.system.kinds.Kind.scale`: a queue, a fleet, a cache, a
write buffer, a store) gets at least one, sized by its kind's rule; the base design gives
the graph, the edges and everything the units do not set.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from gym.core.errors import GymError, Problem
from gym.core.jsontext import JsonText
from gym.core.limits import DEFAULT_CONFIDENCE, DEFAULT_MAX_RUNS
from gym.explore.montecarlo import MonteCarloResult, run_tasks, tasks_for
from gym.explore.parallel import Executor, Progress, Serial
from gym.explore.unit_space import (
    Space,
    crawler_space,
    described,
    design_mapping,
    designs_up_to,
    space_for,
    unit_sets,
)
from gym.models import Design, Scenario
from gym.system.graph import GraphDesign


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
        return described(self.units)

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
class Optimum(JsonText):
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

    def __repr__(self) -> str:
        if self.best is None:
            return f"<Optimum: no design passes ({self.evaluated:,} designs evaluated)>"
        b = self.best
        return (
            f"<Optimum: {b.cost} units ({b.describe()}), passes {b.result.passes}/"
            f"{b.result.n} runs; {self.evaluated:,} designs evaluated>"
        )

    def _repr_html_(self) -> str:
        """A notebook's view: the cheapest passing design, and a row per design tried at
        each cost (the runners-up above it, the best try at each cheaper cost below)."""
        from html import escape

        from gym.analysis.reprs import table_html, verdict_span

        def row(c: Candidate, what: str) -> list[str]:
            low, high = c.result.ci
            return [
                what,
                str(c.cost),
                escape(c.describe()),
                f"{c.result.passes}/{c.result.n} [{low:.2f}, {high:.2f}]",
                verdict_span(c.passed),
            ]

        tried = f"{self.evaluated:,} designs evaluated, {self.simulations:,} runs"
        if self.best is None:
            head = f"<p>{verdict_span(False)}: no design passes ({tried})</p>"
        else:
            b = self.best
            head = (
                f"<p>Cheapest passing design: <b>{b.cost} units</b> "
                f"({escape(b.describe())}), {verdict_span(True)} ({tried})</p>"
            )
        rows = [row(self.best, "cheapest")] if self.best is not None else []
        rows += [row(c, "runner-up") for c in self.runner_ups]
        rows += [row(c, "cheaper") for c in self.cheaper]
        header = ["", "units", "design", "passes (95% interval)", ""]
        return head + (table_html(header, rows) if rows else "")

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
        from gym.core.text import printable
        from gym.inputs.strict_yaml import dump_yaml

        best = self.best
        low, high = best.result.ci
        header = (
            f"# The cheapest design found by `gym optimize` for scenario "
            f"{printable(str(scenario))}: {best.cost} units.\n# Passes every SLO in "
            f"{best.result.passes}/{best.result.n} runs (seeds {seed}..{seed + runs - 1}); "
            f"pass probability 95% interval [{low:.2f}, {high:.2f}].\n"
        )
        return header + dump_yaml(design_mapping(best.design))

    def to_dict(self) -> dict[str, Any]:
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


def _first_run_rank(run: dict[str, Any]) -> tuple[bool, int, float]:
    """How close one run came to passing: passed, fewer SLOs failed, more margin."""
    failed = sum(1 for v in run["slos"].values() if not v["passed"])
    margin = slo_margin(MonteCarloResult([run]))
    return run["verdict"] == "pass", -failed, margin


def _failures(runs: list[dict[str, Any]]) -> int:
    return sum(1 for r in runs if r["verdict"] != "pass")


#: Simulations an optimization may run at most, unless allowed more (``--max-runs``).


def cost_limit(scenario: Scenario, max_cost: int | None) -> int:
    """The most units the search goes to: ``max_cost``, else the cost SLO, else 20."""
    if max_cost is not None:
        return max_cost
    slo = scenario.slos.cost_units
    return int(slo.max) if slo is not None else 20


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
    from gym.explore.montecarlo import too_few_runs

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
    if (few := too_few_runs(runs, confidence)) is not None:
        problems.append(Problem(None, "--confidence" if confidence >= 1 else "--runs", few))
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
    from gym.explore.montecarlo import wilson

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
    space = space_for(scenario, base)
    limit = check(
        scenario,
        runs=runs,
        confidence=confidence,
        max_cost=max_cost,
        max_runs=max_runs,
        space=space,
    )
    climb = _Climb(
        scenario=scenario,
        space=space,
        opt=Optimum(best=None, runs=runs, confidence=confidence, space=space),
        seed=seed,
        runs=runs,
        confidence=confidence,
        most_failed=allowed_failures(runs, confidence),
        executor=executor or Serial(),
        progress=progress,
        plan=plan,
    )
    passing = climb.levels(limit, beyond)
    opt = climb.opt
    if opt.best is not None:
        opt.runner_ups = _runner_ups(opt.best, passing)
    return opt


@dataclass
class _Climb:
    """One search's inputs and its answer so far: runs the designs of each cost in turn,
    from the cheapest."""

    scenario: Scenario
    space: Space
    opt: Optimum
    seed: int
    runs: int
    confidence: float
    most_failed: int  # the most failed runs a passing design may have
    executor: Executor
    progress: Progress | None
    plan: Progress | None

    def levels(self, limit: int, beyond: int) -> list[Candidate]:
        """Each cost from the least up to ``limit``, stopping ``beyond`` units past the
        first where a design passes: every passing design."""
        space, plan, opt = self.space, self.plan, self.opt
        # Every design's first run is planned at once (the bar moves forward only); the
        # runs of later stages as they are known, and what is not needed is taken back.
        screens = {cost: _at_cost(space, cost) for cost in range(space.min_cost, limit + 1)}
        if plan:
            plan(sum(screens.values()))
        passing: list[Candidate] = []
        stop_at = limit
        for cost in range(space.min_cost, limit + 1):
            if cost > stop_at:
                if plan:  # the levels left: not run
                    plan(-sum(n for c, n in screens.items() if c >= cost))
                break
            good = self.level(cost, screens[cost])
            passing += good
            if good and opt.best is None:
                opt.best = max(good, key=lambda c: c.margin())
                stop_at = min(limit, cost + beyond)
        return passing

    def level(self, cost: int, planned: int) -> list[Candidate]:
        """The designs of one cost (``planned`` first runs planned for them), each run in
        stages while it may pass: those that pass. When none does and none has yet, the
        best try of the cost goes in :attr:`Optimum.cheaper`."""
        sets, designs = self.designs(cost, planned)
        if not designs:
            return []
        done: list[list[dict[str, Any]]] = [[] for _ in designs]
        alive = list(range(len(designs)))
        for stage in _stages(self.runs):
            if not alive:
                break
            for i, got in zip(alive, self.run([designs[i] for i in alive], stage), strict=True):
                done[i] += got
            alive = [i for i in alive if _failures(done[i]) <= self.most_failed]
        self.opt.evaluated += len(designs)
        level = [
            Candidate(sets[i], designs[i], MonteCarloResult(done[i], self.confidence))
            for i in alive
        ]
        good = [c for c in level if c.passed]
        if not good and self.opt.best is None:
            self.best_try(sets, designs, done)
        return good

    def designs(
        self, cost: int, planned: int
    ) -> tuple[list[dict[str, int]], list[Design | GraphDesign]]:
        """The unit sets of ``cost`` and their designs, but for those no design file can
        say (counted as skipped, and taken back from the runs planned)."""
        name = f"cheapest-for-{self.scenario.name}"
        sets, designs = [], []
        for u in unit_sets(cost, self.space):
            try:
                designs.append(self.space.build(u, self.scenario, name))
            except GymError:
                self.opt.skipped += 1
                continue
            sets.append(u)
        if self.plan and len(designs) < planned:  # unit sets no design file can say
            self.plan(len(designs) - planned)
        return sets, designs

    def best_try(
        self,
        sets: list[dict[str, int]],
        designs: list[Design | GraphDesign],
        done: list[list[dict[str, Any]]],
    ) -> None:
        """The best try of a cost where no design passes, by its first run (every design
        made it): passed, then the fewest SLOs failed, then the least short of them; it
        runs every seed, for :attr:`Optimum.cheaper`."""
        i = max(range(len(designs)), key=lambda i: _first_run_rank(done[i][0]))
        rest = range(len(done[i]), self.runs)
        if len(rest):
            done[i] += self.run([designs[i]], rest)[0]
        self.opt.cheaper.append(
            Candidate(sets[i], designs[i], MonteCarloResult(done[i], self.confidence))
        )

    def run(self, designs: list[Design | GraphDesign], seeds: range) -> list[list[dict[str, Any]]]:
        """Each design's results for ``seeds`` (offsets from the search's seed)."""
        if self.plan and seeds.start > 0:
            self.plan(len(designs) * len(seeds))
        picked = range(self.seed + seeds.start, self.seed + seeds.stop)
        tasks = [t for d in designs for t in tasks_for(d, self.scenario, picked)]
        results = run_tasks(tasks, self.executor, self.progress)
        self.opt.simulations += len(tasks)
        k = len(seeds)
        return [results[i * k : (i + 1) * k] for i in range(len(designs))]


def _at_cost(space: Space, cost: int) -> int:
    """How many unit sets a cost has: its spare units over the parts."""
    k = len(space.parts)
    spare = cost - space.min_cost
    return math.comb(spare + k - 1, k - 1) if spare >= 0 else 0


def _runner_ups(best: Candidate, passing: list[Candidate]) -> list[Candidate]:
    """The passing designs above the best, cheapest first, each with more margin than the
    best and every runner-up before it."""
    frontier: list[Candidate] = []
    for c in sorted(passing, key=lambda c: (c.cost, -c.margin())):
        if c is best:
            continue
        if all(c.margin() > f.margin() for f in [best, *frontier]):
            frontier.append(c)
    return frontier
