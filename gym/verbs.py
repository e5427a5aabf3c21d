"""The gym's verbs for a Python session or a notebook, beside :func:`gym.simulate`: what
the ``gym`` command does, as functions that return values (a DataFrame, a figure, a
fix), with the command's checks and defaults (docs/api.md).

This module sits above the layers it calls (the explorers and the report), so nothing
below imports it; ``gym`` loads it on first use of one of its names.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from gym.core.limits import DEFAULT_CONFIDENCE, DEFAULT_MAX_RUNS

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from gym.analysis.result import Result
    from gym.explore.fix import Fix, NoFix
    from gym.explore.optimize import Optimum
    from gym.models import Design, Scenario
    from gym.system.graph import GraphDesign

PlotKind = Literal["utilization", "outcomes", "backlog", "budget"]


def _scenario(scenario: Scenario | str | Path | None) -> Scenario:
    from gym.api import default_scenario
    from gym.inputs.loading import load_scenario
    from gym.models import Scenario

    if isinstance(scenario, Scenario):
        return scenario
    return load_scenario(default_scenario() if scenario is None else scenario)


def sweep(
    design: str | Path,
    vary: Sequence[str],
    scenario: Scenario | str | Path | None = None,
    *,
    sets: Sequence[str] = (),
    runs: int = 1,
    seed: int = 0,
    engine: str = "flow",
    confidence: float = DEFAULT_CONFIDENCE,
    max_runs: int = DEFAULT_MAX_RUNS,
) -> pd.DataFrame:
    """``gym sweep``: one row per combination of the ``vary`` values (``PATH=a..b[:step]``
    or ``PATH=v1,v2``) over the design file, with its cost, each SLO's mean and pass rate
    and the pass probability; in this process, deterministic for a seed."""
    import pandas as pd

    from gym.explore import sweep as sweeping

    # one PATH=VALUES given as a string is one axis, not a list of its characters
    axes = [vary] if isinstance(vary, str) else list(vary)
    given = [sets] if isinstance(sets, str) else list(sets)
    points = sweeping.grid(Path(design), axes, given)
    rows = sweeping.run(
        points,
        _scenario(scenario),
        runs=runs,
        seed=seed,
        engine=engine,
        confidence=confidence,
        max_runs=max_runs,
    )
    return pd.DataFrame(rows)


def optimize(
    scenario: Scenario | str | Path | None = None,
    *,
    base: Design | GraphDesign | None = None,
    runs: int = 20,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    max_cost: int | None = None,
    max_runs: int = DEFAULT_MAX_RUNS,
) -> Optimum:
    """``gym optimize``: the cheapest unit-aligned design that passes every SLO of the
    scenario by the ``runs``/``confidence`` rule, the trade-offs above it and why
    nothing cheaper passes (``.best``, ``.to_dict()``)."""
    from gym.explore import optimize as optimizing

    return optimizing.search(
        _scenario(scenario),
        base=base,
        runs=runs,
        seed=seed,
        confidence=confidence,
        max_cost=max_cost,
        max_runs=max_runs,
    )


def suggest_fix(result: Result, *, max_cost: int | None = None) -> Fix | NoFix | None:
    """The cheapest change that makes a failing run pass (what ``gym run`` prints under
    "Suggested fix"); None when it passed."""
    from gym.explore.fix import suggest

    return suggest(result, max_cost=max_cost)


def plot(
    result: Result | Sequence[Result], kind: PlotKind = "utilization", ax: Axes | None = None
) -> Figure:
    """A figure of one run (``kind``: utilization, outcomes or backlog, as ``gym run
    --out`` draws them, or budget: the failures by event and cause against the error
    budget; on ``ax`` when given, a panel of a figure of yours) or of several overlaid
    (as ``gym plot``)."""
    from gym.analysis.result import Result
    from gym.report import plots

    if not isinstance(result, Result):
        return plots.overlay(list(result))
    if kind == "budget":
        return plots.plot_budget(result, ax=ax)
    draw = plots.PLOTS.get(kind)
    if draw is None:
        raise ValueError(f"kind {kind!r}: choose utilization, outcomes, backlog or budget")
    return draw(result.windows(), plots.context(result), ax=ax)
