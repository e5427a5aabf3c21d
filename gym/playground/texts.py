"""The playground page's texts: user text escaped as the HTML report escapes it, and the
HTML of the title, the verdict, the cost, a run's progress and the suggested fix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gym.analysis.result import Result
    from gym.explore.montecarlo import MonteCarloResult
    from gym.playground.state import Session, View

_VERDICT_STYLE = {
    "PASS": "background:#1a7f37;color:white",
    "FAIL": "background:#b42318;color:white",
}


def esc(text: str) -> str:
    """User text for the page, as the HTML report writes it (markup escaped, control
    characters shown); imported on use, so that refusing bad options stays quick."""
    from gym.report.html import escape

    return escape(text)


def shown(value: Any) -> str:
    """A choice's value as a design file writes it (``true``, ``global_fifo``)."""
    from gym.explore.compare import shown

    return shown(value)


def title_html(s: Session) -> str:
    """The design's name, and how many fields the page has changed since it was opened
    (the name alone read as the file's design after edits)."""
    from gym.playground.links import LINK

    n = s.edits()
    edited = f" <small>edited: {n} field{'s' if n != 1 else ''}</small>" if n else ""
    return (
        f"<h2 style='margin:4px 0;overflow-wrap:anywhere'>{esc(str(s.design.name))}"
        f"{' <small>(from a share link)</small>' if s.design_file == LINK else ''}{edited} "
        f"<small>under {esc(str(s.scenario.name))}, seed {s.seed}</small></h2>"
    )


def verdict_html(verdict: str) -> str:
    return (
        f"<div style='{_VERDICT_STYLE.get(verdict, '')};font-size:28px;"
        f"padding:6px 18px;border-radius:6px;text-align:center' "
        f"data-verdict='{verdict}'>{verdict}</div>"
    )


def slo_cards_html(r: Result) -> str:
    """One card per SLO: its name, the figure measured, the target, and PASS or FAIL in
    the report's colours (``data-slo`` and ``data-passed`` say which, for tests and
    user styles)."""
    from gym.analysis.reprs import FAIL_COLOUR, PASS_COLOUR
    from gym.analysis.scoring import format_measured

    if not r.checks:
        return "<p>The scenario lists no SLOs.</p>"
    cards = []
    for c in r.checks:
        colour = PASS_COLOUR if c.passed else FAIL_COLOUR
        word = "PASS" if c.passed else "FAIL"
        cards.append(
            f"<div data-slo='{esc(c.name)}' data-passed='{str(c.passed).lower()}' "
            f"style='border:1px solid #d0d7de;border-top:4px solid {colour};"
            "border-radius:6px;padding:6px 10px;min-width:120px;background:white'>"
            f"<div style='font-size:12px;color:#57606a'>{esc(c.name)}</div>"
            f"<div style='font-size:22px;font-weight:600'>"
            f"{esc(format_measured(c.name, c.measured, c.target))}</div>"
            f"<div style='font-size:12px'>target {esc(c.op)} {c.target:g} "
            f"<b style='color:{colour}'>{word}</b></div></div>"
        )
    return (
        "<div class='gym-slo-cards' style='display:flex;flex-wrap:wrap;gap:8px'>"
        + "".join(cards)
        + "</div>"
    )


def warnings_html(warnings: tuple[str, ...]) -> str:
    """The run's warnings, as ``gym run`` prints them ("" when none)."""
    return "".join(f"<div>warning: {esc(w)}</div>" for w in warnings)


def first_paint_html(r: Result) -> str:
    """What the page shows before its script has drawn it (the server's HTML alone, for
    a browser that has not run the page's script yet, or a crawler of pages): the run's
    verdict, SLOs and busiest component, as a notebook shows a result."""
    from gym.analysis.reprs import result_html

    return (
        "<div id='gym-first-paint' style='font-family:sans-serif;padding:8px 16px'>"
        f"{result_html(r)}<p><i>Drawing the playground's fields and plots...</i></p></div>"
    )


def odds_html(mc: MonteCarloResult, seed: int) -> str:
    """The pass probability over many seeds, its 95% interval and the verdict it gives
    (``gym run --runs``'s rule)."""
    low, high = mc.ci
    verdict = mc.verdict.upper()
    last = seed + mc.n - 1
    return (
        f"<div style='padding:4px 8px' data-passes='{mc.passes}' data-runs='{mc.n}' "
        f"data-odds-verdict='{verdict}' data-units='{mc.cost_units}'>"
        f"<b>P(pass) {mc.pass_probability:.2f}</b> [{low:.2f}, {high:.2f}] "
        f"<span style='{_VERDICT_STYLE.get(verdict, '')};padding:0 6px;border-radius:4px'>"
        f"{verdict}</span><br><small>{mc.passes} of {mc.n} seeds pass ({seed}-{last}, flow "
        f"engine; 95% Wilson interval; PASS if its lower bound &ge; {mc.confidence:g}: "
        f"<code>gym run --runs {mc.n}</code>)</small></div>"
    )


def stale_odds_html(shown: str) -> str:
    """The odds shown, marked as an earlier design's while the design's own are worked
    out (faded, and without the data attributes that say whose they are)."""
    if "data-stale" in shown:
        return shown
    return (
        "<div style='opacity:0.4' data-stale='1'><small><i>P(pass) of the design before, "
        "until this one's seeds have run:</i></small>"
        + shown.replace("data-odds-verdict=", "data-was-verdict=")
        + "</div>"
    )


def cost_html(s: Session, view: View) -> str:
    slo = s.scenario.slos.cost_units
    limit = f" (SLO: at most {slo.max:g})" if slo is not None else ""
    parts = ", ".join(f"{esc(k)} {v}" for k, v in view.units.items() if v)
    return (
        f"<div style='padding:8px' data-cost='{view.cost_units}'>{view.engine} engine &middot; "
        f"<b>{view.cost_units} units</b>{limit}: {parts}</div>"
    )


def progress_html(now: float, duration: float) -> str:
    """The request engine's progress: the share of the scenario simulated, and a bar."""
    share = min(1.0, now / duration) if duration else 1.0
    return (
        f"request engine: {share:.0%} ({now:,.0f} of {duration:,.0f} simulated s)"
        f"<div style='background:#ddd;width:300px;height:8px'>"
        f"<div style='background:#1f77b4;width:{300 * share:.0f}px;height:8px'></div>"
        "</div>"
    )


def fix_html(fix: Any) -> str:
    from gym.report import html

    if fix is None:
        return "<p>The design passes: nothing to fix.</p>"
    return html.fix_section(fix)


def headroom_section(room: Any) -> str:
    from gym.report import html

    if room is None:
        return "<p>The design fails: no headroom.</p>"
    return html.headroom_section(room)


def yaml_name(design_name: str | None) -> str:
    """The file name the page's download of the design gets."""
    name = design_name or "design"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "design"
    return f"{safe}.yaml"
