"""docs/api.md runs as a doctest, from the repository's root: every example on the page
is what the API returns (issue 30)."""

from __future__ import annotations

import doctest
import os

import matplotlib

from tests.conftest import ROOT

matplotlib.use("Agg")


def test_the_api_page_runs_as_written() -> None:
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        got = doctest.testfile(
            str(ROOT / "docs" / "api.md"),
            module_relative=False,
            optionflags=doctest.ELLIPSIS,
            verbose=False,
        )
    finally:
        os.chdir(here)
    assert got.attempted >= 15 and got.failed == 0, got


def test_a_result_repr_is_short_and_its_html_shows_the_verdict() -> None:
    """repr under 1,000 characters (it was 26,322: every array); the HTML has the
    verdict coloured, a row per SLO and the saturation plot."""
    import gym

    for design in ("starter", "reference"):
        r = gym.simulate(ROOT / "designs" / f"{design}.yaml")
        assert len(repr(r)) < 1_000 and len(repr(r.metrics)) < 1_000
        assert all(len(repr(cw)) < 200 for cw in r.metrics.components.values())
        page = r._repr_html_()
        assert r.verdict.upper() in page and page.count("<tr>") == 1 + len(r.checks)
        assert "<svg" in page and "polyline" in page


def test_the_budget_plot_says_how_far_over() -> None:
    """gym.plot(result, "budget"): a bar per scenario event that explains failures, the
    budget's line, and the title says the starter spent 13.5x its budget (113,345
    failed for 8,383 allowed: 3% of the URLs that finished), which a bar cut at the
    axis could hide."""
    import gym

    r = gym.simulate(ROOT / "designs" / "starter.yaml")
    fig = gym.plot(r, "budget")
    (ax,) = fig.axes
    title = ax.get_title()
    b = r.budget
    assert f"{b.spent:,} failed URLs, {b.spent / b.allowed:.1f}x the budget" in title
    assert len(ax.get_yticks()) == sum(1 for e in b.by_event if e.urls)


def test_the_verbs_take_what_simulate_takes() -> None:
    """gym.validate takes paths as gym.simulate does (a crawler design under a graph
    scenario: the problem named); gym.sweep takes one PATH=VALUES as a string, not as
    a list of its characters."""
    import gym

    reference = str(ROOT / "designs" / "reference.yaml")
    assert gym.validate(reference) == []
    (problem,) = gym.validate(reference, ROOT / "scenarios" / "systems" / "ingestion.yaml")
    assert problem.field == "system" and "crawler design" in problem.message
    table = gym.sweep(reference, "fetchers.replicas=3..4")
    assert list(table["fetchers.replicas"]) == [3, 4]


def test_a_fix_and_many_runs_show_themselves_in_a_notebook() -> None:
    """A fix's HTML: its verdict, a row per change with what it does alone, the --set
    options; many runs': the verdict by the rule and a row per SLO."""
    import gym
    from gym.explore.montecarlo import run_many

    r = gym.simulate(ROOT / "designs" / "starter.yaml")
    fix = gym.suggest_fix(r)
    assert fix is not None and fix.found
    page = fix._repr_html_()  # type: ignore[union-attr]
    assert page.count("<tr>") == 1 + len(fix.changes) and "--set fetchers.replicas=4" in page
    many = run_many(r.design, r.scenario, runs=16)
    page = many._repr_html_()
    assert "0/16 runs" in page and page.count("<tr>") == 1 + len(many.slos)
