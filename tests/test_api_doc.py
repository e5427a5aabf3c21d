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


def test_an_optimum_and_no_fix_show_themselves_in_a_notebook() -> None:
    """The optimizer's answer: the cheapest passing design and a row per design tried
    (or that none passes); a fix search that found nothing: how far it looked and a row
    per SLO the closest design still fails. Text from the inputs is escaped."""
    import gym
    from gym.explore.fix import NoFix
    from gym.explore.montecarlo import run_many
    from gym.explore.optimize import Candidate, Optimum

    r = gym.simulate(ROOT / "designs" / "starter.yaml")
    many = run_many(r.design, r.scenario, runs=4, confidence=0.5)
    tried = Candidate({"fetchers": 2, "<i>part</i>": 1}, r.design, many)
    page = Optimum(best=None, cheaper=[tried], evaluated=3, simulations=5)._repr_html_()
    assert "FAIL" in page and "no design passes (3 designs evaluated, 5 runs)" in page
    assert page.count("<tr>") == 2 and "&lt;i&gt;part&lt;/i&gt; 1" in page
    assert "<i>" not in page and "0/4 [0.00, " in page
    ok = gym.simulate(ROOT / "designs" / "reference.yaml")
    good = Candidate(
        {"fetchers": 4}, ok.design, run_many(ok.design, ok.scenario, runs=4, confidence=0.5)
    )
    page = Optimum(best=good, cheaper=[tried], evaluated=3, simulations=5)._repr_html_()
    assert "Cheapest passing design: <b>4 units</b> (fetchers 4)" in page
    assert page.count("<tr>") == 3 and page.count(">PASS<") == 2 and "4/4 [" in page
    failing = [c for c in r.checks if not c.passed]
    page = NoFix(runs=12, limit=7, closest=r, closest_units={"fetchers": 3})._repr_html_()
    assert "within the limit of 7 units passes (12 designs run)" in page
    assert "(fetchers 3: 3 units)" in page and page.count("<tr>") == 1 + len(failing)
    assert page.count(">FAIL<") == len(failing)
    page = NoFix(runs=0, limit=0, reason="a <b>graph</b> design")._repr_html_()
    assert page == "<p>No fix: a &lt;b&gt;graph&lt;/b&gt; design</p>"


def test_every_result_gives_its_json_as_an_object_and_as_text() -> None:
    """to_dict() the object, to_json() its text (as pandas and pydantic name the two):
    the text reads back as the object, for a run, many runs, a fix and a diff; and a run's
    text is what `gym run --json --no-fix` prints."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    import gym
    from gym.explore.diff import diff
    from gym.explore.montecarlo import run_many

    starter = gym.load_design(ROOT / "designs" / "starter.yaml")
    reference = gym.load_design(ROOT / "designs" / "reference.yaml")
    scenario = gym.load_scenario(ROOT / "scenarios" / "crawler-chaos.yaml")
    result = gym.simulate(starter, scenario)
    fix = gym.suggest_fix(result)
    values = [result, run_many(starter, scenario, runs=16), fix]
    values.append(diff(starter, reference, scenario, runs=16))
    for value in values:
        text = value.to_json()
        assert text == json.dumps(value.to_dict(), indent=2), type(value)
        assert json.loads(value.to_json(indent=None)) == json.loads(text)
    out = subprocess.run(
        [sys.executable, "-m", "gym", "run", "designs/starter.yaml", "--json", "--no-fix"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    printed = json.loads(out.stdout)
    assert (printed.pop("fix"), printed.pop("headroom")) == (None, None)  # --no-fix's
    ours = json.loads(result.to_json())
    for key in ("design_file", "scenario_file"):  # given relative there, absolute here
        assert Path(ours.pop(key)) == ROOT / printed.pop(key)
    assert printed == ours
