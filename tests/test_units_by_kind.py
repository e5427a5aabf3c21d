"""Units by kind (issue 30): a run says what its system counts. The crawler counts URLs;
a graph design (designs/systems/*.yaml) counts requests, in its run's text, explanations,
error budget, HTML report, plots and the playground's figures. One rule: the design's
``unit`` (:class:`gym.core.text.Unit`), which a result passes on."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import gym
from gym.cli import app
from gym.core.text import REQUESTS, URLS
from tests.conftest import CHAOS, ROOT, STARTER

runner = CliRunner()
SHORTENER = ROOT / "designs" / "systems" / "url-shortener-undersized.yaml"
SHORTENER_SCENARIO = ROOT / "scenarios" / "systems" / "url-shortener.yaml"


@pytest.fixture(scope="module")
def graph_run() -> Any:
    """The undersized URL shortener under its scenario: it fails, so it explains."""
    return gym.simulate(SHORTENER, SHORTENER_SCENARIO, seed=0)


def _words(html: str) -> str:
    """The report's text without its embedded images (base64 can spell anything)."""
    return re.sub(r"data:[^\"')]+", "", html)


def test_each_system_names_its_unit(graph_run: Any) -> None:
    assert gym.load_design(STARTER).unit == URLS == ("URL", "URLs")
    assert gym.load_design(SHORTENER).unit == REQUESTS == ("request", "requests")
    assert graph_run.unit == REQUESTS
    assert (URLS.heading, REQUESTS.heading) == ("URLs", "Requests")  # not "Urls"


def test_a_graph_run_prints_requests_and_no_url() -> None:
    res = runner.invoke(app, ["run", str(SHORTENER), "-s", str(SHORTENER_SCENARIO), "--no-fix"])
    assert res.exit_code == 1, res.output
    out = res.stdout
    assert "URL" not in out
    assert "Requests: " in out and " offered = " in out
    assert "failed requests allowed" in out  # the error budget
    assert "Where requests were lost" in out
    assert re.search(r"[\d,]+ requests lost at cache", out)
    assert "requests that\n" in out or "requests that finished" in out  # availability's


def test_a_request_engine_run_measures_per_request(tmp_path: Path) -> None:
    res = runner.invoke(
        app,
        [
            "run",
            str(SHORTENER),
            "-s",
            str(SHORTENER_SCENARIO),
            "--no-fix",
            "--engine",
            "request",
            "--warmup",
            "1",
        ],
    )
    assert res.exit_code == 1, res.output
    assert "Latency, measured per request, requests arriving after t=1s:" in res.stdout
    assert "URL" not in res.stdout


def test_a_graph_runs_explanations_count_requests(graph_run: Any) -> None:
    texts = [e.text for e in graph_run.explanations] + [
        d for e in graph_run.explanations for d in e.details
    ]
    assert not any("URL" in t for t in texts)
    assert any("requests that finished failed" in t for t in texts)
    assert any("requests in that second" in t for t in texts)


def test_a_graph_runs_report_says_requests(graph_run: Any) -> None:
    from gym.report import html

    page = _words(html.render(graph_run))
    assert "Where requests were lost" in page
    assert "requests offered = " in page
    assert "failed requests (" in page  # the error budget
    assert "<th>requests</th>" in page or ">requests</th>" in page
    assert "URLs" not in page


def test_a_graph_runs_plots_label_requests(graph_run: Any) -> None:
    from gym.report import plots

    df = graph_run.windows()
    ctx = plots.context(graph_run)
    assert ctx.unit == REQUESTS
    assert plots.plot_outcomes(df, ctx).axes[0].get_ylabel() == "requests per second"
    assert plots.plot_backlog(df, ctx).axes[0].get_ylabel() == "requests waiting"
    ax = plots.plot_budget(graph_run).axes[0]
    assert ax.get_xlabel() == "failed requests"
    assert "failed requests" in ax.get_title() and "URL" not in ax.get_title()
    fig = plots.overlay([graph_run])
    labels = [a.get_ylabel() for a in fig.axes]
    assert "served requests per second" in labels
    assert not any("URL" in label for label in labels)


def test_the_playground_figures_of_a_graph_say_requests() -> None:
    from gym.playground.figures import Figures
    from gym.playground.state import Session

    session = Session(gym.load_design(SHORTENER), gym.load_scenario(SHORTENER_SCENARIO), "u.yaml")
    titles = [p.title.text for p in Figures(session.run()).plots]
    assert "Offered, served and failed (requests per second)" in titles
    assert any("backlog (requests waiting)" in t for t in titles)
    assert not any("URL" in t for t in titles)


def test_a_crawler_run_still_says_urls(chaos_results: dict[str, Any]) -> None:
    from gym.report import html, plots

    starter = chaos_results["starter"]
    assert starter.unit == URLS
    res = runner.invoke(app, ["run", str(STARTER), "-s", str(CHAOS), "--no-fix"])
    assert "URLs: " in res.stdout and "Where URLs were lost" in res.stdout
    assert "failed URLs allowed" in res.stdout and "Where requests" not in res.stdout
    page = _words(html.render(starter))
    assert "Where URLs were lost" in page and "URLs offered = " in page
    ctx = plots.context(starter)
    assert plots.plot_outcomes(starter.windows(), ctx).axes[0].get_ylabel() == "URLs per second"
    assert plots.plot_budget(starter).axes[0].get_xlabel() == "failed URLs"


def test_a_comparison_of_graphs_and_their_request_limit_count_requests() -> None:
    from gym.api import url_budget

    res = runner.invoke(
        app,
        [
            "compare",
            str(ROOT / "designs" / "systems" / "url-shortener.yaml"),
            str(SHORTENER),
            "-s",
            str(SHORTENER_SCENARIO),
        ],
    )
    assert "failed requests" in res.stdout
    assert "loses most to cache_overload: " in res.stdout and "URL" not in res.stdout
    scenario = gym.load_scenario(SHORTENER_SCENARIO)
    over = url_budget(scenario, 1, 1, designs=[gym.load_design(SHORTENER)])
    assert over is not None and " requests, more than the limit" in over.message
    crawler = url_budget(gym.load_scenario(CHAOS), 1, 1, designs=[gym.load_design(STARTER)])
    assert crawler is not None and " URLs, more than the limit" in crawler.message


def test_one_of_a_unit_is_singular() -> None:
    """ "1 URL lost", not "1 URLs lost": the count says its own number."""
    assert (URLS.counted(1), URLS.counted(2_000)) == ("1 URL", "2,000 URLs")
    assert (REQUESTS.counted(1), REQUESTS.counted(0)) == ("1 request", "0 requests")
