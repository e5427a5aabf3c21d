"""Suggest a fix: the cheapest change to a failing design that passes, found by a small
local search and checked by its own run.

The search moves in the optimizer's units (:mod:`gym.explore.optimize`): a candidate is a number
of units per part (frontier, fetchers, cache, page store, async writer, seen-set shards;
a graph design's nodes bought in units), and its design is the user's with each part made
as large as its units allow (the free upgrades first: a hit ratio or a replica's rate
that the units already pay for). It starts from the design's own units and goes up in
cost, one unit at a time, on the parts the failing run implicates:

- a part that lost URLs, or whose peak saturation is over the SLO's limit (or over 1);
- for an overflowing queue, the stage after it too (the frontier fills because the
  fetchers are slow);
- the parts that shield another: the cache for the external resolver (a higher hit ratio
  sends fewer lookups), the async writer for the page store (it holds writes through a
  stall), the fetchers for a crash;
- when the cost SLO fails, any part may also lose a unit.

It is a uniform-cost search: the cheapest candidate not yet run is run next (ties: the
one whose parent missed its SLOs by the least), so the first that passes is the cheapest
on the paths the runs implicate. When the design was over the cost SLO, each part in turn
then gives up a unit while the design still passes (the search stops at the first
candidate under the limit, which may hold more than it needs).

It assumes that more units of a part never hurt, which is not always so (a faster fleet
sends more writes to a saturated store); where it does not hold, the search may suggest a
costlier fix than the cheapest, never one that fails: the fix is the run that passed.
Last, each changed field gets the user's own value back where the design still passes
with it, so the change shown is as small as the runs allow.

Beside unit counts, the structural moves of :mod:`gym.explore.moves` (a choice switched, a
retry policy or a graph's write buffer added: each a teaching design's lesson) each get a
unit search of their own, from the design the move makes, of at most :data:`MOVE_RUNS`
runs (each pair of moves, when none passes alone, :data:`PAIR_RUNS`). The cheapest
passing change wins (a unit change at equal cost, unless the move takes the design out
of a rubric trap it takes), with its lesson when it is a move; a move that passes at no
more cost than a unit change that won is named beside it (:attr:`Fix.alternative`, its
own changes given back where it still passes), unless it holds every change of the
winner and more, or none of its own is left.

Every candidate runs once, on the flow engine, with the failing run's seed and tick.
Deterministic: same design, scenario and seed, same suggestion.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from gym.core.errors import GymError
from gym.core.jsontext import JsonText
from gym.explore import moves as structural
from gym.explore.changes import Change, Effect, changes, exact, flow, leaves, mapping, put
from gym.explore.unit_search import Found, Search, clamp, uniform
from gym.models import Design, Scenario
from gym.system.graph import GraphDesign

if TYPE_CHECKING:
    from gym.analysis.result import Result
    from gym.explore.unit_space import Space

#: Runs the search may spend (each a flow run of a few ms to tens of ms).
MAX_RUNS = 120

#: Runs each structural move's own unit search may spend (gym.explore.moves).
MOVE_RUNS = 30

#: Runs each pair of moves may spend, tried only when no move passes alone.
PAIR_RUNS = 15

#: How many units above the design's the search looks when the scenario has no cost SLO.
REACH_UNITS = 8


@dataclass
class Fix(JsonText):
    """The cheapest change found, the design it makes, and that design's run."""

    changes: list[Change]
    design: Design | GraphDesign
    result: Result
    units: dict[str, int]
    runs: int  # simulations the search spent
    #: The user's own ``--set`` options of the design the fix changes (kept by sets()).
    user_sets: tuple[str, ...] = ()
    #: The lesson of the structural change the fix makes (gym.explore.moves), if any.
    lesson: str | None = None
    #: A structural change that also passes at no more cost, when the fix is another.
    alternative: Fix | None = None
    #: Each change made alone: which failing SLOs it fixes, what it costs.
    effects: list[Effect] = field(default_factory=list)
    found: ClassVar[bool] = True

    @property
    def cost_units(self) -> int:
        return sum(self.units.values())

    def __repr__(self) -> str:
        return f"<Fix {self.summary()}>"

    def _repr_html_(self) -> str:
        """A notebook's view: the changes, what each does alone, the verdict, the sets."""
        from html import escape

        from gym.analysis.reprs import table_html, verdict_span

        effects = {e.path: e.words() for e in self.effects}
        rows = [
            [escape(c.path), escape(c.words()), escape(effects.get(c.path, ""))]
            for c in self.changes
        ]
        sets = " ".join(f"--set {s}" for s in self.sets())
        lesson = f"<p>The lesson: {escape(self.lesson)}</p>" if self.lesson else ""
        return (
            f"<p>Suggested fix: {verdict_span(self.result.passed)} at {self.cost_units} units"
            f"</p>{table_html(['field', 'change', 'alone'], rows)}{lesson}"
            f"<p><code>{escape(sets)}</code></p>"
        )

    def summary(self) -> str:
        """One line: what to change, and how the changed design does."""
        m = self.result.metrics
        peak = m.peak_saturation
        what = " and ".join(str(c) for c in self.changes) or "no change"
        return (
            f"{what}: {self.result.verdict.upper()} at {self.cost_units} units "
            f"(throughput {m.throughput_rps:,.0f}/s, availability {m.availability:.4f}, "
            f"peak saturation {peak:.2f})"
        )

    def sets(self) -> list[str]:
        """The ``--set PATH=VALUE`` options that apply the fix to the design file: the
        user's own ``--set`` options of the fields it does not change, then its changes
        (a section it adds, field by field; one it removes, as null)."""
        from gym.inputs.loading import parse_override

        mine: list[tuple[str, Any]] = []
        for c in self.changes:
            if isinstance(c.new, dict):  # a section added: each of its fields
                mine += leaves(c.new, c.path)
            else:
                mine.append((c.path, c.new))
        changed = {p for p, _ in mine} | {c.path for c in self.changes}
        kept = []
        for option in self.user_sets:
            keys, value = parse_override(option)
            at = ".".join(keys)
            if any(at == c or at.startswith(c + ".") for c in changed):
                continue  # the fix sets it
            inside = [(p, v) for p, v in mine if p.startswith(at + ".")]
            if not inside:
                kept.append(option)
            elif isinstance(value, dict):  # the user's whole section, the fix's fields in it
                for p, v in inside:
                    put(value, p[len(at) + 1 :], v, make=True)
                mine = [(p, v) for p, v in mine if (p, v) not in inside]
                kept.append(f"{at}={flow(value)}")
            # else the user set the section to a value (null) that the fix's fields replace
        return kept + [f"{p}={exact(v)}" for p, v in mine]

    def design_mapping(self) -> dict[str, Any]:
        """The design the fix makes, as a design file's mapping, named ``<name>-fixed``
        (not the failing design's name): what ``--json`` gives and ``fixed-design.yaml``
        holds."""
        from gym.explore.unit_space import design_mapping

        data = design_mapping(self.design)
        data["name"] = f"{self.design.name or 'design'}-fixed"  # (a design made unnamed)
        return data

    def to_dict(self) -> dict[str, Any]:
        m = self.result.metrics
        return {
            "found": True,
            "changes": [c.to_dict() for c in self.changes],
            "summary": self.summary(),
            "sets": self.sets(),
            "design": self.design_mapping(),
            "units": self.units,
            "cost_units": self.cost_units,
            "verdict": self.result.verdict,
            "engine": self.result.engine,
            "seed": self.result.seed,
            "metrics": {
                "throughput_rps": m.throughput_rps,
                "availability": m.availability,
                "peak_saturation": m.peak_saturation,
                "failed": m.failed,
            },
            "slos": [c.to_dict() for c in self.result.checks],
            "runs": self.runs,
            "lesson": self.lesson,
            "alternative": None if self.alternative is None else self.alternative.to_dict(),
            "effects": [e.to_dict() for e in self.effects],
        }


@dataclass
class NoFix(JsonText):
    """What the search tried when no change passed: how far it looked, and the closest
    design it ran (the one that missed its SLOs by the least)."""

    runs: int
    limit: int  # the most units it looked at
    closest: Result | None = None
    closest_units: dict[str, int] = field(default_factory=dict)
    reason: str | None = None  # why no search was made
    found: ClassVar[bool] = False

    def __repr__(self) -> str:
        return f"<NoFix {self.summary()}>"

    def _repr_html_(self) -> str:
        """A notebook's view: how far the search looked, and what the closest design it
        ran still fails."""
        from html import escape

        from gym.analysis.reprs import table_html, verdict_span

        if self.reason is not None or self.closest is None:
            return f"<p>No fix: {escape(self.summary())}</p>"
        units = ", ".join(f"{k} {v}" for k, v in self.closest_units.items() if v)
        rows = [
            [
                escape(c.name),
                f"{escape(c.op)} {c.target:g}",
                _measured(c.measured),
                verdict_span(c.passed),
            ]
            for c in self.closest.checks
            if not c.passed
        ]
        return (
            f"<p>No fix: no change within the limit of {self.limit} units passes "
            f"({self.runs} designs run). The closest ({escape(units)}: "
            f"{sum(self.closest_units.values())} units) still fails:</p>"
            + table_html(["SLO", "target", "measured", ""], rows)
        )

    def summary(self) -> str:
        if self.reason is not None:
            return self.reason
        if self.closest is None:
            return f"no change of units within {self.limit} units could be built"
        failing = "; ".join(
            f"{c.name} {_measured(c.measured)} (target {c.op} {c.target:g})"
            for c in self.closest.checks
            if not c.passed
        )
        units = ", ".join(f"{k} {v}" for k, v in self.closest_units.items() if v)
        cost = sum(self.closest_units.values())
        return (
            f"no change within the limit of {self.limit} units passes ({self.runs} designs "
            f"run); the closest ({units}: {cost} units) still fails {failing}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "found": False,
            "summary": self.summary(),
            "runs": self.runs,
            "limit_units": self.limit,
            "closest_units": self.closest_units,
        }


def suggest(
    result: Result,
    *,
    max_runs: int = MAX_RUNS,
    max_cost: int | None = None,
    user_sets: Sequence[str] = (),
    progress: Callable[[int], None] | None = None,
) -> Fix | NoFix | None:
    """The cheapest change to ``result``'s design that passes its scenario (see the module
    docstring); :class:`NoFix` when no candidate within ``max_runs`` runs and the cost
    limit (``max_cost``, else the cost SLO, else the design's units plus
    :data:`REACH_UNITS`) passes; None when the run passed. ``user_sets``: the ``--set``
    options the design was loaded with, for the fix's own (:meth:`Fix.sets`)."""
    from gym.explore.unit_space import space_for

    if result.passed:
        return None
    design, scenario = result.design, result.scenario
    try:
        space = space_for(scenario, design)
    except GymError as err:  # a graph with no node bought in units: nothing to change
        return NoFix(runs=0, limit=0, reason=f"nothing to search: {err.problems[0].message}")
    start = _own_units(design, space, scenario)
    limit = max_cost
    if limit is None:
        slo = scenario.slos.cost_units
        limit = int(slo.max) if slo is not None else sum(start) + REACH_UNITS
    start = clamp(start, space, limit)
    search = Search(
        design, scenario, space, result.seed, result.tick_ms, max_runs, progress=progress
    )
    found, closest = uniform(search, start, limit)
    state = _Suggestion(result, limit, search, found, spent=search.runs)
    state.try_moves()
    if state.found is None:
        return NoFix(
            runs=state.spent,
            limit=limit,
            closest=None if closest is None else closest[2],
            closest_units={}
            if closest is None
            else dict(zip(space.parts, closest[1], strict=True)),
        )
    return state.fix(max_runs, tuple(user_sets))


@dataclass
class _Suggestion:
    """A suggestion's search: the cheapest passing change so far, the search that found it
    and its move, the cheapest other move that passes (cost, move, change, search), and
    the runs spent."""

    result: Result
    limit: int
    search: Search
    found: Found | None
    move: structural.Move | None = None
    alternative: tuple[int, structural.Move, Found, Search] | None = None
    spent: int = 0

    def try_moves(self) -> None:
        """Each structural move's unit search, from the design it makes; then each pair's (a
        relational store under a deep crawl needs its layout split and a seen-URL set both;
        a canonicalized crawl without links, its seen-URL set taken out too). The cheapest
        passing change wins (:meth:`offer`)."""
        singles = structural.moves(self.result)
        taken = {t.item for t in self.result.traps}  # the rubric's traps the design takes
        pairs = itertools.combinations(singles, 2)
        for mv, budget in itertools.chain(
            ((mv, MOVE_RUNS) for mv in singles),
            ((structural.both(a, b), PAIR_RUNS) for a, b in pairs),
        ):
            ran = self.move_search(mv, budget)
            if ran is None:
                continue
            sub, got = ran
            self.spent += sub.runs
            if got is not None:
                self.offer(mv, got, sub, taken)

    def move_search(self, mv: structural.Move, budget: int) -> tuple[Search, Found | None] | None:
        """``mv``'s unit search of ``budget`` runs, and what passed in it; None if not run."""
        from gym.explore.unit_space import space_for

        result, found, limit = self.result, self.found, self.limit
        try:
            based = mv.apply(result.design)
            space = space_for(result.scenario, based)
        except (GymError, ValueError):  # the move makes no design the catalog allows
            return None
        start = _own_units(based, space, result.scenario)
        # Only a move at no more cost than the best change so far can win or be named
        # beside it: its search stops there, and one that starts above it is not run.
        bound = limit if found is None else min(limit, sum(found[0]))
        if found is None:
            start = clamp(start, space, limit)
        elif sum(start) > bound:
            # Above it (a design over the cost SLO, come down to the fix): from the fix's
            # units where the move's are higher, the move's search is one near the fix.
            theirs = dict(zip(self.search.space.parts, found[0], strict=True))
            start = tuple(
                max(m, min(u, theirs.get(p, u)))
                for p, u, m in zip(space.parts, start, space.mins, strict=True)
            )
            if sum(start) > bound:
                return None
        sub = Search(based, result.scenario, space, result.seed, result.tick_ms, budget)
        sub.spent, sub.progress = self.search.spent, self.search.progress
        return sub, uniform(sub, start, bound, strict=found is not None)[0]

    def offer(self, mv: structural.Move, got: Found, sub: Search, taken: set[str]) -> None:
        """``mv``'s passing change: the best if cheaper (the best it beats, if a move's, the
        alternative), else the alternative if cheaper than that."""
        found, cost = self.found, sum(got[0])
        # A move out of a trap the design takes wins a tie with a change of units: the
        # lesson is the fix, not its alternative (a relational store's split layout).
        tie = found is not None and cost == sum(found[0])
        if (
            found is None
            or cost < sum(found[0])
            or (tie and self.move is None and mv.trap in taken)
        ):
            if (
                found is not None
                and self.move is not None
                and (self.alternative is None or sum(found[0]) <= self.alternative[0])
            ):
                self.alternative = (sum(found[0]), self.move, found, self.search)
            self.found, self.search, self.move = got, sub, mv
        elif self.alternative is None or cost < self.alternative[0]:
            self.alternative = (cost, mv, got, sub)

    def fix(self, max_runs: int, user_sets: tuple[str, ...]) -> Fix | NoFix:
        """The best change trimmed, its alternative, each change's effect alone."""
        result, search, move = self.result, self.search, self.move
        assert self.found is not None
        units, fixed, r = self.found
        before = search.runs
        search.max_runs = max(search.max_runs, search.runs + max_runs // 3)  # to trim it
        if any(c.name == "cost_units" and not c.passed for c in result.checks):
            units, fixed, r = _lower(search, units, fixed, r)
        fixed, r = _smallest(search, fixed, r, result.design)
        made = changes(result.design, fixed)
        if move is not None and not _makes(move, result.design, made):
            move = None  # its own fields went back too: a change of units after all
        runs = self.spent + search.runs - before
        if not made:  # the flow engine passes what the request engine failed
            return NoFix(
                runs=runs,
                limit=self.limit,
                reason=f"the flow engine passes this design as it is (seed {result.seed}), "
                f"so there is no change to suggest; the {result.engine} engine's run fails it",
            )
        other, alt_runs = self.other(made, sum(units), max_runs, user_sets)
        effects = _effects(search, result, made, fixed)
        return Fix(
            changes=made,
            design=fixed,
            result=r,
            units={p: n for p, n in zip(search.space.parts, units, strict=True) if n},
            runs=runs + alt_runs + len(effects),
            user_sets=user_sets,
            lesson=None if move is None else move.lesson,
            alternative=other,
            effects=effects,
        )

    def other(
        self, made: list[Change], cost: int, max_runs: int, user_sets: tuple[str, ...]
    ) -> tuple[Fix | None, int]:
        """The alternative, trimmed, and the runs its search spent: None if over ``cost``,
        holding the fix's changes (``made``) and more, or no structural change."""
        if self.alternative is None or self.alternative[0] > cost:
            return None, 0
        base = self.result.design
        _, alt_move, (units, design, r), alt = self.alternative
        alt.max_runs = alt.runs + max_runs // 3
        design, r = _smallest(alt, design, r, base)
        mine = {c.path for c in made}
        alt_made = changes(base, design)
        if mine <= {c.path for c in alt_made} or not _makes(alt_move, base, alt_made):
            return None, alt.runs
        held = {p: n for p, n in zip(alt.space.parts, units, strict=True) if n}
        alt_fix = Fix(alt_made, design, r, held, 0, user_sets, lesson=alt_move.lesson)
        return alt_fix, alt.runs


def _lower(search: Search, units: tuple[int, ...], fixed: Design | GraphDesign, r: Result) -> Found:
    """A unit less of a part in turn, while the design passes: coming down from a design
    over the cost SLO, the first pass can hold more than the design needs."""
    lower = True
    while lower and search.runs < search.max_runs:
        lower = False
        for i, least in enumerate(search.space.mins):
            down = tuple(u - (j == i) for j, u in enumerate(units))
            if down[i] < least or (candidate := search.build(down)) is None:
                continue
            trial = search.run(candidate)
            if trial.passed:
                units, fixed, r, lower = down, candidate, trial, True
                break
    return units, fixed, r


def _own_units(design: Design | GraphDesign, space: Space, scenario: Scenario) -> tuple[int, ...]:
    """The units ``design`` has of each part of ``space``, at least each part's least."""
    from gym.system.compiled import units_of

    have = units_of(design, scenario.catalog)
    return tuple(max(have.get(p, 0), m) for p, m in zip(space.parts, space.mins, strict=True))


def _effects(
    search: Search, failing: Result, made: list[Change], fixed: Design | GraphDesign
) -> list[Effect]:
    """Each change of a fix made alone to the failing design: one run each (a fix of a
    single change needs none: it fixes what failed, at its own cost). A change that
    makes no design alone (a graph's new node, without its edges) says what it costs in
    the fixed design (a write buffer's unit)."""
    from gym.system.compiled import units_of

    design, scenario = failing.design, failing.scenario
    failed = [c.name for c in failing.checks if not c.passed]
    have = sum(units_of(design, scenario.catalog).values())
    out = []
    for change in made:
        data = mapping(design)
        put(data, change.path, change.new)
        try:
            alone = type(design).model_validate(data)
        except ValueError:
            node = change.path.removeprefix("graph.nodes.")
            added = change.old is None and node != change.path and "." not in node
            units = units_of(fixed, scenario.catalog).get(node, 0) if added else 0
            out.append(Effect(change.path, (), units, alone=False))
            continue
        cost = sum(units_of(alone, scenario.catalog).values()) - have
        if len(made) == 1:
            out.append(Effect(change.path, tuple(failed), cost))
            continue
        r = search.run(alone)
        fixes = tuple(c.name for c in r.checks if c.name in failed and c.passed)
        breaks = tuple(c.name for c in r.checks if c.name not in failed and not c.passed)
        out.append(Effect(change.path, fixes, cost, breaks=breaks))
    return out


def _makes(move: structural.Move, design: Design | GraphDesign, made: list[Change]) -> bool:
    """Whether ``made`` still holds a field the structural ``move`` changes in ``design``."""
    its = {c.path for c in changes(design, move.apply(design))}
    return any(c.path in its for c in made)


def _smallest(
    search: Search, fixed: Design | GraphDesign, r: Result, base: Design | GraphDesign
) -> tuple[Design | GraphDesign, Result]:
    """The passing design with the fewest fields changed from ``base`` (the user's, so a
    structural move's own fields may go back too): each changed field in turn gets
    the user's own value back where the design still passes with it at no more units
    (one run each, in the order the design file lists them); again, while a pass gives
    one back (a field may go back only once another has: a frontier's back queues once
    its structure is the user's again)."""
    from gym.system.compiled import units_of

    catalog = search.scenario.catalog
    cost = sum(units_of(fixed, catalog).values())
    tried: set[tuple[str, str]] = set()  # (field, the design it was tried on) that failed
    again = True
    while again:
        again = False
        for change in changes(base, fixed):
            if search.runs >= search.max_runs:
                return fixed, r
            data = mapping(fixed)
            put(data, change.path, change.old)
            try:
                candidate = type(search.base).model_validate(data)
            except ValueError:  # the field cannot go back alone (a writer's own limits)
                continue
            key = (change.path, repr(mapping(candidate)))
            if key in tried or sum(units_of(candidate, catalog).values()) > cost:
                continue
            tried.add(key)
            try:
                trial = search.run(candidate)
            except GymError:  # a graph it leaves broken (a buffer node without its edges)
                continue
            if trial.passed:
                fixed, r, again = candidate, trial, True
    return fixed, r


def _measured(value: float | None) -> str:
    return "undefined" if value is None else f"{value:,.4g}"
