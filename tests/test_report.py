"""Seeing a run: result directories, plots, comparisons, HTML reports, the error budget."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

import gym
from gym.cli import app
from gym.report import plots
from tests.conftest import CHAOS, REFERENCE, ROOT, STARTER

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


def _invoke(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def test_out_writes_table_summary_inputs_and_plots(tmp_path: Path) -> None:
    """--out DIR: the CSV has a row per window and component; the summary equals --json."""
    out = tmp_path / "run"
    res = _invoke("run", str(STARTER), "--out", str(out), "--json")
    assert res.exit_code == 1
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            "windows.csv",
            "summary.json",
            "design.resolved.yaml",
            "scenario.resolved.yaml",
            "utilization.png",
            "outcomes.png",
            "backlog.png",
            "fixed-design.yaml",  # the starter fails: its suggested fix
        ]
    )
    df = pd.read_csv(out / "windows.csv")
    assert len(df) == 40 * 5
    for col in (
        "demand",
        "capacity",
        "served",
        "failed_frontier_overflow",
        "backlog",
        "saturation",
        "latency_mean_ms",
    ):
        assert col in df.columns
    assert json.loads((out / "summary.json").read_text()) == json.loads(res.stdout)
    for name in ("utilization", "outcomes", "backlog"):
        assert (out / f"{name}.png").read_bytes().startswith(PNG)


def test_resolved_inputs_reproduce_the_run(tmp_path: Path) -> None:
    """The resolved design and scenario, every default written out, give the same result."""
    out = tmp_path / "run"
    _invoke("run", str(REFERENCE), "--out", str(out), "--seed", "3")
    text = (out / "design.resolved.yaml").read_text()
    assert "mean_ms: 250.0" in text and "on_crash: fail" in text
    again = gym.simulate(out / "design.resolved.yaml", out / "scenario.resolved.yaml", seed=3)
    first = gym.simulate(REFERENCE, CHAOS, seed=3)
    assert again.to_dict()["metrics"] == first.to_dict()["metrics"]


def test_out_never_overwrites_without_force(tmp_path: Path) -> None:
    """A directory holding other files is refused (exit 2) unless --force; the user's file
    stays."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    res = _invoke("run", str(REFERENCE), "--out", str(out))
    assert res.exit_code == 2 and "--force" in res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    res = _invoke("run", str(REFERENCE), "--out", str(out), "--force")
    assert res.exit_code == 0
    assert (out / "notes.txt").read_text() == "my notes"
    assert (out / "windows.csv").exists()


def test_utilization_plot_shows_every_event_and_the_starter_over_1() -> None:
    """The plot labels the surge, the crash, the stall and the slowdown where they happen,
    and the starter's frontier line passes saturation 1 during the surge (drawn as a
    ratio, as every table shows it)."""
    r = gym.simulate(STARTER, CHAOS, seed=0)
    df = r.windows()
    fig = plots.plot_utilization(df, plots.context(r))
    (ax,) = fig.axes
    labels = {t.get_text().strip() for t in ax.texts}
    assert {
        "deep-crawl surge (load x2)",
        "fetchers crash (1 replica down)",
        "page_store stall",
        "resolver slowdown x3",
    } <= labels
    spans = sorted((round(p.get_x(), 3), round(p.get_x() + p.get_width(), 3)) for p in ax.patches)
    assert (4.0, 10.0) in spans and (20.0, 30.0) in spans and (28.0, 36.0) in spans
    frontier = df[df["component"] == "frontier"].set_index("t_s")["saturation"]
    assert (frontier.loc[4.0:9.0] > 1.0).all()
    assert ax.get_ylabel() == "saturation: demand / capacity"
    line = next(ln for ln in ax.lines if ln.get_label() == "frontier")
    assert max(line.get_ydata()) == pytest.approx(frontier.max())  # a ratio, not a %
    assert any(ln.get_label() == "SLO ceiling 0.90" for ln in ax.lines)


def test_event_bands_never_overlap_or_share_a_colour_with_a_line() -> None:
    """Each event is a bar in its own lane: no two bars share any height, so overlapping
    events (the crash during the surge's second stage) never blend; every label sits in
    its own lane; no event colour is a component's line or a cause's fill; the data stays
    below the lanes."""
    r = gym.simulate(STARTER, CHAOS, seed=0)
    df = r.windows()
    for draw in plots.PLOTS.values():
        fig = draw(df, plots.context(r))
        ax = fig.axes[0]
        # The plots' only patches are the event bars (the fills are collections).
        lanes = sorted(
            (round(p.get_y(), 6), round(p.get_y() + p.get_height(), 6)) for p in ax.patches
        )
        assert len(lanes) == len(plots.context(r).shades) == 5
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(lanes))
        heights = sorted(t.get_position()[1] for t in ax.texts)
        assert len(set(heights)) == len(heights)
        lowest_lane = lanes[0][0]
        data_top = max(
            max(ln.get_ydata())
            for ln in ax.lines
            if not ln.get_label().startswith("_") and len(ln.get_ydata()) > 2
        )
        assert data_top <= ax.get_ylim()[1] * lowest_lane
    events = {style["color"] for style in plots.EVENT_STYLE.values()}
    assert not events & set(plots.COMPONENT_COLORS.values())
    assert not events & set(plots.CAUSE_COLORS.values())


def test_plot_overlays_designs(tmp_path: Path) -> None:
    """gym plot DESIGN DESIGN -o FILE.png writes one PNG (exit 1: the starter fails); it
    refuses to replace it."""
    out = tmp_path / "both.png"
    assert _invoke("plot", str(REFERENCE), str(STARTER), "-o", str(out)).exit_code == 1
    assert out.read_bytes().startswith(PNG)
    assert _invoke("plot", str(REFERENCE), "-o", str(out)).exit_code == 2
    assert _invoke("plot", str(REFERENCE), "-o", str(out), "--force").exit_code == 0


def test_compare_side_by_side() -> None:
    """gym compare: the verdicts, each SLO, and the differences that matter; exit 1 since
    the starter fails."""
    res = _invoke("compare", str(REFERENCE), str(STARTER))
    assert res.exit_code == 1
    assert "PASS" in res.stdout and "FAIL" in res.stdout
    assert "cheapest passing design: reference (7 units)" in res.stdout
    data = json.loads(_invoke("compare", str(REFERENCE), str(STARTER), "--json").stdout)
    assert [d["verdict"] for d in data["designs"]] == ["pass", "fail"]
    assert any(line.startswith("availability:") for line in data["differences"])


def test_html_report_is_self_contained(tmp_path: Path) -> None:
    """gym report: one HTML file with the verdict, tables, embedded plots, no network."""
    out = tmp_path / "report.html"
    assert _invoke("report", str(STARTER), "-o", str(out)).exit_code == 1
    html = out.read_text()
    assert "Verdict: <span class='fail' style='color:#c62828;font-weight:600'>FAIL</span>" in html
    assert html.count("data:image/png;base64,") == 3
    assert "http://" not in html and "https://" not in html and "<script" not in html
    for words in ("Why it fails", "Error budget", "Timeline", "deep-crawl surge"):
        assert words in html
    assert _invoke("report", str(STARTER), "-o", str(out)).exit_code == 2


def test_html_report_shows_the_resolved_inputs_and_the_fix(tmp_path: Path) -> None:
    """The report carries the design and scenario as run (every default written out, the
    YAML that reproduces the run) and, for a failing design, the suggested fix."""
    import html as html_lib
    import re

    import yaml

    out = tmp_path / "report.html"
    _invoke("report", str(STARTER), "-o", str(out))
    page = out.read_text()
    blocks = [html_lib.unescape(b) for b in re.findall(r"<pre>(.*?)</pre>", page, re.S)]
    design, scenario = (yaml.safe_load(b) for b in blocks)
    assert design["fetchers"]["replicas"] == 3
    assert design["fetchers"]["on_crash"] == "fail"  # a default, written out
    assert scenario["name"] == "crawler-chaos" and scenario["duration_s"] == 40
    assert gym.simulate(gym.Design.model_validate(design), CHAOS).metrics.failed == (
        gym.simulate(STARTER, CHAOS).metrics.failed
    )
    assert "<h2>Suggested fix</h2>" in page and "fetchers.replicas" in page
    _invoke("report", str(REFERENCE), "-o", str(tmp_path / "ref.html"))
    assert "Suggested fix" not in (tmp_path / "ref.html").read_text()


def test_error_budget_attribution() -> None:
    """Budget = 3% of the URLs that finished (served + failed). The starter's biggest
    spenders: the crash, then the surge, through frontier overflow; the reference's: the
    store stall, within budget."""
    sc = gym.load_scenario(CHAOS)
    starter = gym.simulate(STARTER, sc, seed=0).budget
    reference = gym.simulate(REFERENCE, sc, seed=0).budget
    m = gym.simulate(REFERENCE, sc, seed=0).metrics
    assert reference.allowed == pytest.approx(0.03 * (m.served + m.failed))
    assert [e.name for e in starter.by_event[:2]] == [
        "fetchers crash (1 replica down)",
        "deep-crawl surge (load x2)",
    ]
    assert starter.by_event[0].by_cause["frontier_overflow"] > 0.9 * starter.by_event[0].urls
    assert sum(e.urls for e in starter.by_event) == starter.spent
    assert reference.by_event[0].name == "page_store stall"
    assert reference.spent < reference.allowed
    assert set(reference.to_dict()["by_event"][0]["by_cause"]) == {"store_unavailable"}


def test_the_resolved_files_rerun_the_same_and_the_fix_has_its_own_name(tmp_path: Path) -> None:
    """--out's design.resolved.yaml writes every default out, the frontier's back queues
    as the run used them (the catalog's per-unit figure times its units, never null),
    and rerun with scenario.resolved.yaml gives the same figures;
    fixed-design.yaml is named after the design, -fixed; the CSV has no float noise."""
    import re

    out = tmp_path / "o"
    res = CliRunner().invoke(app, ["run", str(STARTER), "--out", str(out), "--json"])
    assert res.exit_code == 1
    resolved = (out / "design.resolved.yaml").read_text()
    assert "back_queues: null" not in resolved and re.search(r"back_queues: \d+", resolved)
    again = CliRunner().invoke(
        app,
        [
            "run",
            str(out / "design.resolved.yaml"),
            "-s",
            str(out / "scenario.resolved.yaml"),
            "--json",
            "--no-fix",
        ],
    )
    assert json.loads(again.stdout)["metrics"] == json.loads(res.stdout)["metrics"]
    assert "\nname: starter-fixed\n" in (out / "fixed-design.yaml").read_text()
    csv = (out / "windows.csv").read_text()
    assert not re.search(r"\d\.\d{13,}", csv)  # 12 significant digits at most


def test_the_report_shows_the_plots_before_the_detail() -> None:
    """The verdict, the SLOs, why it fails and the fix, then the plots: before the
    components, the losses, the budget and the inputs."""
    from gym.explore.fix import suggest
    from gym.report import html

    r = gym.simulate(STARTER, CHAOS)
    page = html.render(r, suggest(r))
    order = [
        page.index(f"<h2>{h}</h2>")
        for h in ("SLOs", "Why it fails", "Suggested fix", "Plots", "Timeline", "Components")
    ]
    assert order == sorted(order)
    assert page.index("<h2>Plots</h2>") < page.index("<h2>Where URLs were lost</h2>")
    assert page.index("<h2>Plots</h2>") < page.index("<h2>Error budget</h2>")


def test_the_report_takes_the_fix_and_headroom_options(tmp_path: Path) -> None:
    """gym report --no-fix leaves the fix out; --headroom works the margins out for a run
    gym run would skip them for (retries: stepped tick by tick); --no-headroom leaves
    them out."""
    retry = [str(ROOT / "designs" / "levers" / "retry-backoff.yaml")]
    brownout = ["-s", str(ROOT / "scenarios" / "levers" / "store-brownout.yaml")]
    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", *retry, *brownout, "-o", str(out), "--headroom"])
    assert res.exit_code == 0 and "load: passes up to" in out.read_text()
    res = CliRunner().invoke(app, ["report", *retry, *brownout, "-o", str(out), "--force"])
    assert "Skipped" in out.read_text() or "skipped" in out.read_text()
    res = CliRunner().invoke(app, ["report", str(STARTER), "-o", str(out), "--force", "--no-fix"])
    assert res.exit_code == 1 and "<h2>Suggested fix</h2>" not in out.read_text()


def test_a_measured_value_never_prints_as_its_target_when_it_fails() -> None:
    """A peak saturation of 0.9004 against <= 0.9 fails; printed to two decimals it read
    0.90, the target itself. With the target it gets the decimals that tell them apart."""
    from gym.analysis.scoring import format_measured

    assert format_measured("peak_saturation", 0.9004, 0.9) == "0.9004"
    assert format_measured("availability", 0.99896, 0.999) == "0.99896"
    assert format_measured("peak_saturation", 0.77, 0.9) == "0.77"


def test_the_outcomes_plot_never_stacks_past_what_was_offered_unsaid() -> None:
    """Outcomes count in the second a URL finishes, offers in the second it arrives: the
    reference's crash at t=12 s loses fetches in flight, offered in earlier seconds, and
    served plus crash_loss pass that second's offered line (9,057 against 9,029). What
    passes it is a band of its own ("offered in an earlier second"), never an outcome's
    colour above the line unexplained; the failed bands draw no outline (a band of no
    height drew a peach one along the whole stack, round the hatched band too), and the
    hatched band's outline is its legend's neutral grey."""
    import numpy as np
    from matplotlib.colors import to_hex

    r = gym.simulate(REFERENCE, CHAOS, seed=0)
    df = r.windows()
    fig = plots.plot_outcomes(df, plots.context(r))
    (ax,) = fig.axes
    bands = {c.get_label(): c for c in ax.collections}
    for label, band in bands.items():
        if label.startswith("failed: "):
            assert not np.any(band.get_linewidths()), label
    queued = bands["queued or in flight"]
    (handle,) = [
        h for h, t in zip(*ax.get_legend_handles_labels(), strict=True) if t == queued.get_label()
    ]
    assert to_hex(queued.get_edgecolor()[0]) == to_hex(handle.get_edgecolor()) == "#8c8c8c"
    assert queued.get_linewidths()[0] > 0
    per = df.groupby("window")
    stack = per["served"].sum() + sum(per[f"failed_{c}"].sum() for c in r.metrics.record.causes)
    offered = df[df["component"] == "frontier"].set_index("window")["demand"]
    assert stack[12] > offered[12] and per["failed_crash_loss"].sum()[12] > 0
    earlier = bands[plots.EARLIER_LABEL]
    (path,) = earlier.get_paths()
    corners = {(round(x, 3), round(y)) for x, y in path.vertices}
    for y in (offered[12], stack[12]):  # from the offered line up to the stack's top
        assert {(12.0, round(y)), (13.0, round(y))} <= corners
    assert stack[4] < offered[4] and (4.0, round(stack[4])) not in corners  # none below


def test_the_new_urls_line_counts_the_urls_that_came() -> None:
    """With the link-discovery loop the outcomes plot's "new URLs" are the URLs that
    reached the frontier or were lost at the seen set, counted (the frontier's demand
    there is the links expected of each fetch, a rate: it read 11,874 URLs too many on
    this run, drawn as queued or in flight). What finished never passes what came."""
    import numpy as np

    import gym
    from gym.report.plots import context

    result = gym.simulate(
        gym.load_design(ROOT / "designs" / "levers" / "seen-set-1.yaml"),
        gym.load_scenario(ROOT / "scenarios" / "levers" / "deep-crawl.yaml"),
    )
    m = result.metrics
    ctx = context(result)
    assert ctx.offered is not None and ctx.offered_label == "new URLs"
    lost = sum(m.components["seen_set"].failed.values())
    came = np.asarray(ctx.offered)
    assert came.sum() == m.components["frontier"].arrived.sum() + lost.sum()
    df = result.windows().groupby("window", sort=True)
    finished = (df["served"].sum() + df["failed"].sum()).to_numpy()
    assert (np.cumsum(finished) <= np.cumsum(came)).all()
    assert came.sum() - finished.sum() <= m.in_flight_end  # the rest is in flight
