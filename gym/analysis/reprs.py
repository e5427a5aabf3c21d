"""How a result shows itself in a Python session and a notebook: a one-line ``repr`` (the
verdict and the headline figures, never arrays) and an HTML one (the verdict, the SLO
table and a small plot of the busiest component's saturation, an inline SVG: no
matplotlib, no files)."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from gym.analysis.metrics import ComponentWindows, Metrics
    from gym.analysis.result import Result


def result_repr(r: Result) -> str:
    """``<Result 'starter' under 'crawler-chaos': FAIL (availability, cost_units fail); ...>``"""
    m = r.metrics
    failing = [c.name for c in r.checks if not c.passed]
    why = f" ({', '.join(failing)} fail)" if failing else ""
    return (
        f"<Result {r.design.name!r} under {r.scenario.name!r}: {r.verdict.upper()}{why}; "
        f"{r.engine} engine, seed {r.seed}; {_figures(m)}>"
    )


def metrics_repr(m: Metrics) -> str:
    return f"<Metrics {_figures(m)}; components {', '.join(m.components)}>"


def component_repr(cw: ComponentWindows) -> str:
    value, w = cw.peak
    peak = "no figure" if value is None else f"peak saturation {value:.2f} in window {w}"
    return (
        f"<ComponentWindows {cw.name!r}: {len(cw.arrived)} windows, {peak}, "
        f"{int(cw.failed_total.sum()):,} failed>"
    )


def _figures(m: Metrics) -> str:
    peak = m.peak
    where = f" ({peak.component}, t={peak.at_s:g}s)" if peak.component is not None else ""
    avail = "undefined" if m.availability is None else f"{m.availability:.4f}"
    return (
        f"throughput {m.throughput_rps:,.0f}/s, availability {avail}, peak saturation "
        f"{peak.value:.2f}{where}, cost {m.cost_units} units"
    )


#: The colours of PASS and FAIL (the HTML report's too).
PASS_COLOUR, FAIL_COLOUR = "#1a7f37", "#c62828"


def result_html(r: Result) -> str:
    """The verdict, the SLO table and the busiest component's saturation, as HTML."""
    m = r.metrics
    rows = [
        [
            escape(c.name),
            f"{escape(c.op)} {c.target:g}",
            _measured(c.measured),
            verdict_span(c.passed),
        ]
        for c in r.checks
    ]
    peak = m.peak
    plot = ""
    if peak.component is not None:
        plot = _sparkline(m.components[peak.component], r.scenario.slos.peak_saturation)
    return (
        "<div class='gym-result'>"
        f"<p><b>{escape(str(r.design.name))}</b> under <b>{escape(str(r.scenario.name))}</b> "
        f"({escape(r.engine)} engine, seed {r.seed}): {verdict_span(r.passed)}</p>"
        f"{table_html(['SLO', 'target', 'measured', ''], rows)}"
        f"<p>{escape(_figures(m))}</p>{plot}</div>"
    )


def _measured(value: float | None) -> str:
    # Not scoring.format_measured: scoring imports metrics, whose repr is this module's.
    return "undefined" if value is None else f"{value:,.4g}"


def _sparkline(cw: ComponentWindows, slo: object, width: int = 360, height: int = 80) -> str:
    """The saturation of ``cw`` per window as an SVG line, the SLO's limit dashed."""
    sat = np.nan_to_num(np.asarray(cw.saturation, dtype=float), nan=0.0)
    if len(sat) < 2:
        return ""
    limit = getattr(slo, "max", None)
    top = max(float(sat.max()), float(limit or 0.0), 1.0) * 1.05
    xs = np.linspace(0, width, len(sat))
    ys = height - sat / top * height
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys, strict=True))
    line = ""
    if limit is not None:
        y = height - float(limit) / top * height
        line = (
            f"<line x1='0' x2='{width}' y1='{y:.1f}' y2='{y:.1f}' stroke='{FAIL_COLOUR}' "
            "stroke-dasharray='4 3'/>"
        )
    return (
        f"<figure style='margin:0'><svg width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' role='img'>"
        f"<polyline fill='none' stroke='#0969da' stroke-width='1.5' points='{points}'/>{line}"
        f"</svg><figcaption>saturation of {escape(cw.name)}, the busiest component, per "
        "second"
        + (f" (dashed: the SLO's {float(limit):g})" if limit is not None else "")
        + "</figcaption></figure>"
    )


def verdict_span(passed: bool) -> str:
    """PASS or FAIL, coloured and bold."""
    colour = PASS_COLOUR if passed else FAIL_COLOUR
    return f"<span style='color:{colour};font-weight:bold'>{'PASS' if passed else 'FAIL'}</span>"


def table_html(header: list[str], rows: list[list[str]]) -> str:
    """A plain HTML table of cells already escaped (or markup of this module's)."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
