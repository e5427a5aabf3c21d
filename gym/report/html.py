"""A self-contained HTML report of one run: opens in a browser, no server, no network.

Plots are embedded as base64 PNGs and the style is inline, so the file stands alone.
"""

from __future__ import annotations

import base64
import io
import shlex
from html import escape as _html_escape
from typing import TYPE_CHECKING

from gym.analysis.budget import format_fraction
from gym.analysis.explain import Explanation
from gym.analysis.result import Result
from gym.analysis.scoring import format_measured
from gym.report import plots
from gym.system.compiled import addons

if TYPE_CHECKING:
    from gym.explore.fix import Fix, NoFix
    from gym.explore.headroom import Headroom


def escape(text: str) -> str:
    """User text for HTML: markup escaped, control characters shown as escapes."""
    from gym.core.text import printable

    return _html_escape(printable(str(text)))


_STYLE = """
body { font-family: system-ui, -apple-system, Segoe UI, sans-serif; margin: 2em auto;
       max-width: 1100px; color: #222; line-height: 1.45; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.15em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3em 0.8em; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #1a7f37; font-weight: 600; } .fail { color: #c62828; font-weight: 600; }
.verdict { font-size: 1.4em; } .muted { color: #666; font-size: 0.9em; }
img { max-width: 100%; margin: 0.5em 0; } ul { padding-left: 1.2em; }
li ul { margin: 0.2em 0 0.5em; color: #444; }
pre { background: #f6f8fa; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
summary { cursor: pointer; margin: 0.4em 0; }
"""


def render(result: Result, fix: Fix | NoFix | None = None, headroom: Headroom | None = None) -> str:
    """The report as one HTML string; with ``fix`` (:mod:`gym.explore.fix`), its suggested
    fix; with ``headroom`` (:mod:`gym.explore.headroom`), a passing design's margins."""
    r, m = result, result.metrics
    head = (
        f"<h1>{escape(str(r.design.name))} under {escape(str(r.scenario.name))}</h1>"
        f"<p class='muted'>design {escape(str(r.design._source))}, scenario "
        f"{escape(str(r.scenario._source))}, {r.engine} engine, seed {r.seed}</p>"
        f"<p class='verdict'>Verdict: {_mark(r.passed)}</p>"
    )
    # The verdict and why first, then the pictures, then the detail (issue 30: the plots
    # came after a long wall of text).
    parts = [head, "<h2>SLOs</h2>", slo_table(r), _totals(r)]
    why = [e for e in r.explanations if e.kind == "slo"]
    rest = [e for e in r.explanations if e.kind != "slo"]
    if why:
        parts += ["<h2>Why it fails</h2>", explanation_list(why)]
    if fix is not None:
        parts += ["<h2>Suggested fix</h2>", fix_section(fix)]
    if headroom is not None:
        parts += ["<h2>Headroom</h2>", headroom_section(headroom)]
    if r.traps:
        parts += ["<h2>Traps the design takes</h2>", traps_section(r)]
    parts += ["<h2>Plots</h2>", _plots(r), "<h2>Timeline</h2>", _timeline(r)]
    parts += ["<h2>Components</h2>", _components(r)]
    if rest:
        parts += [
            f"<h2>Where {r.unit.many} were lost</h2>" if m.failed else "<h2>Notes</h2>",
            explanation_list(rest),
        ]
    parts += ["<h2>Error budget</h2>", budget_section(r)]
    if r.alerts is not None:
        parts += ["<h2>Alerts</h2>", alerts_section(r)]
    if r.latency:
        parts += ["<h2>Latency (ms)</h2>", _latency(r)]
    parts += ["<h2>Inputs</h2>", _inputs(r)]
    body = "\n".join(parts)
    title = escape(f"{r.design.name}: {r.verdict.upper()} - crawler SLO gym")
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{title}</title><style>{_STYLE}</style></head><body>\n{body}\n</body></html>\n"
    )


def fix_section(fix: Fix | NoFix) -> str:
    """The suggested fix (or why none was found), as the report and the playground show it."""
    from gym.explore.fix import Fix

    if not isinstance(fix, Fix):
        return f"<p>No fix found: {escape(fix.summary())}</p>"
    effects = {e.path: e.words() if len(fix.changes) > 1 else e.cost() for e in fix.effects}
    rows = [
        [escape(c.path), escape(c.shown_old), escape(c.shown_new), escape(effects.get(c.path, ""))]
        for c in fix.changes
    ]
    m = fix.result.metrics
    sets = " ".join(f"--set {shlex.quote(s)}" for s in fix.sets())
    return (
        f"<p>The cheapest change found ({_mark(fix.result.passed)} at {fix.cost_units} "
        f"units; flow engine, seed {fix.result.seed}):</p>"
        + _table(["field", "now", "fixed", "alone"], rows, {1, 2})
        + f"<p>Then: throughput {m.throughput_rps:,.0f}/s, availability "
        f"{m.availability:.4f}, peak saturation {m.peak_saturation:.2f}.</p>"
        + (f"<p class='muted'>Apply it with <code>{escape(sets)}</code></p>" if sets else "")
        + (f"<p>The lesson: {escape(fix.lesson)}.</p>" if fix.lesson else "")
        + (
            f"<p>Also passes at {fix.alternative.cost_units} units, a structural change: "
            f"{escape(fix.alternative.lesson or '')} (<code>"
            + escape(" ".join(f"--set {shlex.quote(s)}" for s in fix.alternative.sets()))
            + "</code>).</p>"
            if fix.alternative is not None
            else ""
        )
    )


def _inputs(r: Result) -> str:
    """The design and scenario as the run used them, every default written out."""
    from gym.report.files import resolved_yaml

    return "".join(
        f"<details><summary>{what} ({escape(str(model._source))})</summary>"
        f"<pre>{escape_block(resolved_yaml(model))}</pre></details>"
        for what, model in (("Design", r.design), ("Scenario", r.scenario))
    )


def escape_block(text: str) -> str:
    """A block of user text (YAML) for a <pre>: markup escaped, newlines kept."""
    from gym.core.text import printable

    return _html_escape(printable(text, keep_newlines=True))


def _mark(ok: bool) -> str:
    """PASS or FAIL, coloured also where the report's style sheet is not (the playground)."""
    from gym.analysis.reprs import FAIL_COLOUR, PASS_COLOUR

    if ok:
        return f"<span class='pass' style='color:{PASS_COLOUR};font-weight:600'>PASS</span>"
    return f"<span class='fail' style='color:{FAIL_COLOUR};font-weight:600'>FAIL</span>"


def _table(header: list[str], rows: list[list[str]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    th = "".join(
        f"<th class='{'num' if i in numeric else ''}'>{h}</th>" for i, h in enumerate(header)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td class='{'num' if i in numeric else ''}'>{cell}</td>" for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def slo_table(r: Result) -> str:
    """The SLOs: target, measured, pass or fail."""
    rows = [
        [
            c.name,
            f"{escape(c.op)} {c.target:g}",
            format_measured(c.name, c.measured, c.target),
            _mark(c.passed),
        ]
        for c in r.checks
    ]
    if not rows:
        return "<p>The scenario lists no SLOs.</p>"
    return _table(["SLO", "target", "measured", ""], rows, {1, 2})


def _totals(r: Result) -> str:
    m = r.metrics
    crawler = addons(r.design)
    crash = (
        f" Fetches in flight on a crashed replica: {escape(crawler.on_crash)}."
        if crawler is not None
        else ""
    )
    return (
        f"<p>{m.offered:,} {r.unit.many} offered = {m.served:,} served + {m.failed:,} failed + "
        f"{m.in_flight_end:,} in flight at the end.{crash}</p>"
    )


def _components(r: Result) -> str:
    m = r.metrics
    rows = []
    for name, cw in m.components.items():
        value, w = cw.peak
        peak = "-" if value is None or w is None else f"{value:.2f} at t={m.window_s[w]:g}s"
        down = int(cw.outage.sum())
        rows.append(
            [
                name,
                str(m.units.get(name, 0)),
                peak,
                f"{down} s" if down else "",
                f"{int(cw.failed_total.sum()):,}",
            ]
        )
    return _table(["component", "units", "peak saturation", "down", "failed"], rows, {1, 4})


def explanation_list(items: list[Explanation]) -> str:
    """Explanations as a list, each with its details."""
    lis = []
    for e in items:
        sub = "".join(f"<li>{escape(d)}</li>" for d in e.details)
        lis.append(f"<li>{escape(e.text)}" + (f"<ul>{sub}</ul>" if sub else "") + "</li>")
    return "<ul>" + "".join(lis) + "</ul>"


def budget_section(r: Result) -> str:
    """The error budget: allowed, spent, and by which event and cause."""
    b = r.budget
    if b.target is None:
        return "<p>The scenario has no availability SLO, so no error budget.</p>"
    share = format_fraction(b.fraction_spent) if b.allowed > 0 else "over: none allowed"
    intro = (
        f"<p>Allowed: {b.allowed:,.0f} failed {r.unit.many} ({1 - b.target:.1%} of the "
        f"{r.metrics.finished:,} that finished). Spent: {b.spent:,} ({share}).</p>"
    )
    rows = [
        [
            escape(e.name),
            f"t={e.start_s:g}-{e.end_s:g}s",
            f"{e.urls:,}",
            f"{e.urls / b.allowed:.0%}" if b.allowed else "-",
            escape(", ".join(f"{c} {n:,}" for c, n in e.by_cause.items() if n)),
        ]
        for e in b.by_event
    ]
    return intro + (
        _table(["spent by", "when", r.unit.many, "of budget", "causes"], rows, {2, 3})
        if rows
        else ""
    )


def headroom_section(room: Headroom) -> str:
    """How far a passing design is from failing, and the runs it took."""
    if room.skipped:
        return f"<p>Skipped: {escape(room.skipped)}.</p>"
    items = "".join(f"<li>{escape(m.sentence())}</li>" for m in room.margins)
    return f"<ul>{items}</ul><p class='muted'>{room.cost} flow runs.</p>"


def traps_section(r: Result) -> str:
    """The rubric's traps the design took, each with what the run measured."""
    items = "".join(
        f"<li><b>{escape(str(t.trap))}</b>. The run: {escape(t.measured)}</li>" for t in r.traps
    )
    head = "It passes its SLOs, but" if r.passed else "Besides its SLOs,"
    return f"<p>{head} the rubric (<code>gym grade</code>) marks these down:</p><ul>{items}</ul>"


def alerts_section(r: Result) -> str:
    """The burn-rate alerts replayed on the run: when each fired, and after which event."""
    a = r.alerts
    if a is None:
        return ""
    intro = (
        f"<p>Burn rate of the availability SLO's error budget: {escape(a.conditions())}. "
        f"<span class='muted'>{escape(a.scale_rule)}.</span></p>"
    )
    rows = [
        [
            escape(f"{f.alert} ({f.severity})"),
            f"{f.start_s:.2f} s",
            "still firing" if f.end_s is None else f"{f.end_s:.2f} s",
            f"{f.peak_burn:.1f}x",
            format_fraction(f.budget_spent),
        ]
        for f in a.firings
    ]
    table = (
        _table(
            ["alert", "fired at", "resolved at", "peak burn", "budget spent"], rows, {1, 2, 3, 4}
        )
        if rows
        else "<p>No alert fired.</p>"
    )
    lines = "".join(f"<li>{escape(line)}</li>" for line in a.detection_lines())
    return intro + table + (f"<ul>{lines}</ul>" if lines else "")


def _latency(r: Result) -> str:
    rows = [
        [name, f"{s.mean:,.1f}", f"{s.p50:,.1f}", f"{s.p95:,.1f}", f"{s.p99:,.1f}", f"{s.count:,}"]
        for name, s in r.latency.items()
    ]
    how = f"measured per {r.unit.one}" if r.engine == "request" else "estimated by the flow engine"
    return f"<p class='muted'>{how}</p>" + _table(
        ["", "mean", "p50", "p95", "p99", r.unit.many], rows, {1, 2, 3, 4, 5}
    )


def _timeline(r: Result) -> str:
    """The scenario's events, and the alerts that fired, in time order."""
    tl = r.metrics.record.timeline
    rows = [(e.start_s, 0, f"{e.end_s:g}", escape(e.kind), escape(e.name)) for e in tl.events]
    for f in r.alerts.firings if r.alerts is not None else ():
        end = f"{tl.n_ticks * tl.tick_s:g}" if f.end_s is None else f"{f.end_s:g}"
        what = f"{f.alert} ({f.severity}) fires: burn up to {f.peak_burn:.1f}x"
        rows.append((f.start_s, 1, end, "alert", escape(what)))
    rows.sort(key=lambda row: (row[0], row[1]))
    cells = [[f"{start:g}", end, kind, what] for start, _, end, kind, what in rows]
    return _table(["from (s)", "to (s)", "kind", "event"], cells, {0, 1})


def _plots(r: Result) -> str:
    df = r.windows()
    ctx = plots.context(r)
    out = []
    for name, draw in plots.PLOTS.items():
        fig = draw(df, ctx)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        out.append(f"<img alt='{escape(name)}' src='data:image/png;base64,{data}'>")
    return "\n".join(out)
