"""Plots of a run, drawn from the per-window table alone (``Result.windows()``).

Each plot shades the scenario's load stages and faults where they happened, so a reader
sees which event did what. Figures are built without pyplot, so writing files needs no
display and leaves a notebook's backend alone; pass ``ax=`` to draw into your own axes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import matplotlib as mpl
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from gym.system.compiled import addons
from gym.system.crawler import CAUSES

if TYPE_CHECKING:
    import pandas as pd

    from gym.analysis.result import Result
    from gym.core.text import Unit

COMPONENT_COLORS = {
    "frontier": "#1f77b4",
    "fetchers": "#d62728",
    "cache": "#2ca02c",
    "resolver": "#9467bd",
    "async_writer": "#8c564b",
    "page_store": "#ff7f0e",
    "seen_set": "#17becf",
}
#: Colours for the causes of a graph design's nodes, in turn.
_SPARE_COLORS = ("#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
CAUSE_COLORS = dict(
    zip(
        CAUSES,
        [
            "#d62728",
            "#7f0000",
            "#2ca02c",
            "#98df8a",
            "#9467bd",
            "#c5b0d5",
            "#8c564b",
            "#ff7f0e",
            "#ffbb78",
        ],
        strict=True,
    )
)
# The link-discovery loop's seen set (a crawler design with discovery).
CAUSE_COLORS.update({"seen_set_overload": "#17becf", "seen_set_unavailable": "#9edae5"})
#: Events are drawn in greys, olive and violet with hatches: no event shares a colour with
#: a component's line or a cause's fill, whatever the design.
EVENT_STYLE: dict[str, dict[str, Any]] = {
    "load": {"color": "#8c8c8c", "hatch": None},
    "crash": {"color": "#404040", "hatch": "//"},
    "stall": {"color": "#8a7a00", "hatch": "xx"},
    "slowdown": {"color": "#b5517f", "hatch": ".."},
}
#: The height of one event's lane at the top of a plot, as a share of the axes.
LANE = 0.065


@dataclass(frozen=True)
class Shade:
    """A stretch of the timeline to shade: a load stage above base, or a fault."""

    start_s: float
    end_s: float
    label: str
    kind: str


@dataclass(frozen=True)
class PlotContext:
    """What a plot needs besides the table: the title, the events, the ceiling, buffers."""

    title: str
    shades: tuple[Shade, ...]
    duration_s: float
    ceiling: float | None
    frontier_buffer: int | None  # the entry queue's buffer, if it is a queue
    unit: Unit  # what the run counts (the design's: URLs, a graph's requests)
    entry: str = "frontier"  # the component the load enters (the crawler's frontier)
    causes: tuple[str, ...] = CAUSES
    #: What was offered per window, where it is not the entry's demand (a graph whose load is
    #: split at the source); None: the entry's demand (the crawler: less what dedup skips).
    offered: tuple[float, ...] | None = None
    offered_label: str = "offered"  # its legend ("new URLs" with the link-discovery loop)


#: The outline and hatch of the outcomes plot's bands that are not outcomes.
NEUTRAL_EDGE = "#8c8c8c"
#: The legend of what finished in a second above what was offered in it.
EARLIER_LABEL = "finished, offered in an earlier second"


def literal(text: object) -> str:
    """User text (a design, scenario or event name) drawn as written: ``$`` does not start
    math text, a leading ``_`` does not hide a legend entry, control characters show as
    escapes."""
    from gym.core.text import printable

    shown = printable(str(text)).replace("$", r"\$")
    return " " + shown if shown.startswith("_") else shown


def context(result: Result) -> PlotContext:
    tl = result.metrics.record.timeline
    shades = tuple(
        Shade(e.start_s, e.end_s, literal(e.name), e.kind) for e in tl.events if not e.is_base_load
    )
    slo = result.scenario.slos.peak_saturation
    verdict = result.verdict.upper()
    m = result.metrics
    crawler = addons(result.design)
    if crawler is not None and crawler.follows_links:
        # The link-discovery loop: the new URLs, seeds and links, that reached the frontier
        # or were lost at the seen set (the seen ones are skipped, and not drawn).
        seen_set = m.components["seen_set"]
        lost = sum(seen_set.failed.values(), np.zeros(len(m.window_s)))
        offered: tuple[float, ...] | None = tuple(
            # arrived, not demand: the frontier's demand with the loop counts the links
            # each fetch is expected to find (a rate), not the URLs that reached it
            float(x)
            for x in m.components["frontier"].arrived + lost
        )
        label = "new URLs"
    elif crawler is not None:
        offered, label = None, "offered"
    else:
        offered, label = tuple(float(x) for x in m.offered_w), "offered"
    # the crawler's frontier (after the seen set, with the link-discovery loop), or a
    # graph's first node
    entry = "frontier" if crawler is not None else next(iter(m.components))
    return PlotContext(
        title=f"{literal(result.design.name)} under {literal(result.scenario.name)} "
        f"({result.engine} engine, "
        f"seed {result.seed}): {verdict}",
        shades=shades,
        duration_s=tl.duration_s,
        ceiling=slo.max if slo else None,
        frontier_buffer=_buffer(result, entry),
        unit=result.unit,
        entry=entry,
        causes=result.metrics.record.causes,
        offered=offered,
        offered_label=label,
    )


def _buffer(result: Result, entry: str) -> int | None:
    """The buffer of the node the load enters (the crawler's frontier, a graph's first
    node), as the run had it; None if it has none (not a queue)."""
    topology = result.metrics.record.topology
    params = topology.node(entry).params if topology is not None else None
    buffer = getattr(params, "buffer", None)
    return buffer if isinstance(buffer, int) else None


def shade_events(ax: Axes, shades: Sequence[Shade], labels: bool = True) -> float:
    """Draw each event as a bar in its own lane along the top of the axes, with its label
    inside, and thin lines where it starts and ends: bars never overlap, so their colours
    never blend and their labels never collide. Returns the share of the axes height the
    lanes take, for the plot to leave free (with ``labels=False``, only the lines)."""
    for s in shades:
        style = EVENT_STYLE.get(s.kind, EVENT_STYLE["load"])
        for x in (s.start_s, s.end_s):
            ax.axvline(x, color=style["color"], linewidth=0.7, alpha=0.5, zorder=1)
    if not labels:
        return 0.0
    for i, s in enumerate(shades):
        style = EVENT_STYLE.get(s.kind, EVENT_STYLE["load"])
        top = 1.0 - i * LANE
        ax.axvspan(
            s.start_s,
            s.end_s,
            ymin=top - LANE * 0.9,
            ymax=top,
            facecolor=style["color"],
            alpha=0.22,
            hatch=style["hatch"],
            edgecolor=style["color"],
            linewidth=0,
            zorder=2,
        )
        ax.text(
            s.start_s,
            top - LANE * 0.45,
            f" {s.label}",
            transform=ax.get_xaxis_transform(),
            fontsize=7.5,
            va="center",
            ha="left",
            color="black",
            clip_on=True,
            zorder=5,
        )
    return len(shades) * LANE


def _headroom(ax: Axes, data_top: float, lanes: float) -> None:
    """A y-range whose data stays below the event lanes."""
    ax.set_ylim(0, max(data_top, 1e-9) * 1.08 / max(0.25, 1.0 - lanes))


def plot_utilization(df: pd.DataFrame, ctx: PlotContext, ax: Axes | None = None) -> Figure:
    """Saturation (demand / capacity) per component over time, with the SLO ceiling."""
    fig, ax = _axes(ax)
    lanes = shade_events(ax, ctx.shades)
    top = 1.0
    for name, rows in df.groupby("component", sort=False):
        color = COMPONENT_COLORS.get(str(name))
        sat = rows["saturation"]
        ax.step(
            *_extend(rows["t_s"], sat, ctx.duration_s),
            where="post",
            label=str(name),
            color=color,
            linewidth=1.6,
        )
        top = max(top, float(rows["saturation"].max(skipna=True) or 0))
        down = rows[rows["outage"]]
        if not down.empty:
            ax.scatter(
                down["t_s"] + 0.5,
                [0.02] * len(down),
                marker="x",
                color=color,
                s=18,
                label=f"{name} down (capacity 0)",
            )
    if ctx.ceiling is not None:
        ax.axhline(
            ctx.ceiling,
            color="black",
            linestyle="--",
            linewidth=1,
            label=f"SLO ceiling {ctx.ceiling:.2f}",
        )
    ax.axhline(1.0, color="gray", linestyle=":", linewidth=0.8)
    _headroom(ax, top, lanes)
    _finish(ax, ctx, "saturation: demand / capacity", "Saturation per component")
    return fig


def plot_outcomes(df: pd.DataFrame, ctx: PlotContext, ax: Axes | None = None) -> Figure:
    """What was offered, served and failed (stacked by cause) per second, in the run's
    unit (URLs, a graph's requests)."""
    fig, ax = _axes(ax)
    lanes = shade_events(ax, ctx.shades)
    per_window = df.groupby("window", sort=True)
    t = per_window["t_s"].first()
    offered = df[df["component"] == ctx.entry].set_index("window")["demand"]
    if ctx.offered is not None:
        offered = offered.copy()
        offered[:] = ctx.offered
    served = per_window["served"].sum()
    tx, served_x = _extend(t, served, ctx.duration_s)
    ax.fill_between(tx, 0, served_x, step="post", color="#2ca02c", alpha=0.55, label="served")
    bottom = served_x
    spare = iter(_SPARE_COLORS)
    for cause in ctx.causes:
        failed = per_window[f"failed_{cause}"].sum()
        if failed.sum() == 0:
            continue
        _, failed_x = _extend(t, failed, ctx.duration_s)
        ax.fill_between(
            tx,
            bottom,
            bottom + failed_x,
            step="post",
            color=CAUSE_COLORS.get(cause) or next(spare, None),
            alpha=0.75,
            linewidth=0,  # no outline: a band of no height would draw one along the stack
            label=f"failed: {cause}",
        )
        bottom = bottom + failed_x
    _, offered_x = _extend(t, offered, ctx.duration_s)
    # What was offered and had neither been served nor failed by then: queued or in flight.
    ax.fill_between(
        tx,
        bottom,
        np.maximum(offered_x, bottom),
        step="post",
        facecolor="none",
        edgecolor=NEUTRAL_EDGE,
        hatch="///",
        linewidth=0.6,
        label="queued or in flight",
    )
    # URLs are counted served or failed in the second they finish, offered in the second
    # they arrive: a stack above the offered line is URLs offered in an earlier second
    # (a backlog drained, the fetches in flight lost at a crash), marked as such.
    earlier = np.maximum(bottom - offered_x, 0.0)
    if earlier.any():
        ax.fill_between(
            tx,
            offered_x,
            offered_x + earlier,
            step="post",
            facecolor="none",  # dots over the outcomes' own colours, which stay as they are
            edgecolor=NEUTRAL_EDGE,
            hatch="...",
            linewidth=0.6,
            label=EARLIER_LABEL,
        )
    ax.step(tx, offered_x, where="post", color="black", linewidth=1.4, label=ctx.offered_label)
    _headroom(ax, max(float(offered.max()), float(bottom.max())), lanes)
    _finish(ax, ctx, f"{ctx.unit.many} per second", "Offered, served and failed")
    return fig


def plot_backlog(df: pd.DataFrame, ctx: PlotContext, ax: Axes | None = None) -> Figure:
    """What waits in the entry queue (the crawler's frontier) at the end of each second, against
    its buffer."""
    fig, ax = _axes(ax)
    lanes = shade_events(ax, ctx.shades)
    rows = df[df["component"] == ctx.entry]
    ax.step(
        *_extend(rows["t_s"], rows["backlog"], ctx.duration_s),
        where="post",
        color=COMPONENT_COLORS.get(ctx.entry, COMPONENT_COLORS["frontier"]),
        linewidth=1.6,
        label=f"{literal(ctx.entry)} backlog",
    )
    if ctx.frontier_buffer is not None:
        ax.axhline(
            ctx.frontier_buffer,
            color="black",
            linestyle="--",
            linewidth=1,
            label=f"buffer {ctx.frontier_buffer:,} {ctx.unit.many}",
        )
    _headroom(ax, max(float(rows["backlog"].max()), ctx.frontier_buffer or 1), lanes)
    _zero_shows(ax, float(rows["backlog"].max()), ctx.unit)
    _finish(ax, ctx, f"{ctx.unit.many} waiting", f"{literal(ctx.entry).capitalize()} backlog")
    return fig


def _zero_shows(ax: Axes, most: float, unit: Unit) -> None:
    """A line at 0 drawn above the time axis, not hidden on it; "no backlog" said."""
    low, high = ax.get_ylim()
    ax.set_ylim(-0.03 * (high - low), high)
    if most <= 0:
        ax.text(
            0.5,
            0.08,
            f"no backlog: 0 {unit.many} waiting all along",
            transform=ax.transAxes,
            ha="center",
            fontsize=8,
            color="#555555",
        )


PLOTS = {
    "utilization": plot_utilization,
    "outcomes": plot_outcomes,
    "backlog": plot_backlog,
}


def plot_budget(result: Result, ax: Axes | None = None) -> Figure:
    """The error budget as bars: the failed URLs (requests) each scenario event explains, stacked
    by cause, against what the availability SLO allows (a dashed line); the title says
    how much of it was spent, so a budget 13 times over reads as such."""
    import textwrap

    from gym.analysis.budget import format_fraction

    fig, ax = _axes(ax)
    b = result.budget
    unit = result.unit.many
    events = [e for e in b.by_event if e.urls]
    causes = [c for c in CAUSES if any(e.by_cause.get(c) for e in events)]
    causes += sorted({c for e in events for c in e.by_cause if e.by_cause[c]} - set(causes))
    spare = iter(_SPARE_COLORS)
    left = np.zeros(len(events))
    rows = np.arange(len(events))
    for cause in causes:
        counts = np.array([e.by_cause.get(cause, 0) for e in events], dtype=float)
        ax.barh(
            rows,
            counts,
            left=left,
            color=CAUSE_COLORS.get(cause) or next(spare, None),
            label=cause,
        )
        left += counts
    ax.set_yticks(rows, [textwrap.fill(literal(e.name), 28) for e in events], fontsize=8)
    ax.invert_yaxis()
    if b.allowed > 0:
        ax.axvline(b.allowed, color="black", linestyle="--", label="error budget")
    spent = b.fraction_spent
    share = (
        "none allowed"
        if b.allowed <= 0 or spent is None
        else f"{spent:.1f}x"
        if spent >= 2
        else format_fraction(spent) + " of"
    )
    ax.set_title(
        f"{literal(result.design.name)}: {b.spent:,} failed {unit}, {share} the budget\n"
        f"({b.allowed:,.0f} allowed: {1 - (b.target or 1):.1%} of the {unit} that finished)",
        fontsize=9,
    )
    ax.set_xlabel(f"failed {unit}")
    ax.legend(fontsize=7.5, loc="lower right")
    return fig


def save_all(result: Result, directory: Path, df: pd.DataFrame | None = None) -> list[Path]:
    """Write every plot of ``result`` as a PNG in ``directory``; returns the paths."""
    df = result.windows() if df is None else df
    ctx = context(result)
    paths = []
    for name, draw in PLOTS.items():
        fig = draw(df, ctx)
        path = directory / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        paths.append(path)
    return paths


def overlay(results: Sequence[Result]) -> Figure:
    """Several designs on one figure: peak saturation, served and frontier backlog."""
    fig = Figure(figsize=(11, 10))
    axes = fig.subplots(3, 1, sharex=True)
    ctx = context(results[0])
    lanes = [shade_events(ax, ctx.shades, labels=ax is axes[0]) for ax in axes]
    colors = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    frames = [r.windows() for r in results]
    for i, (r, df) in enumerate(zip(results, frames, strict=True)):
        color = colors[i % len(colors)]
        label = f"{literal(r.design.name)} ({r.verdict.upper()}, {r.metrics.cost_units} units)"
        peak = r.metrics.peak
        top = f"{label}: peak {peak.value:.2f}, {literal(peak.component)} at t={peak.at_s:g}s"
        highest = df.groupby("window")["saturation"].max()
        t = df.groupby("window")["t_s"].first()
        end = ctx.duration_s
        axes[0].step(*_extend(t, highest, end), where="post", color=color, linewidth=1.6, label=top)
        served = df.groupby("window")["served"].sum()
        axes[1].step(
            *_extend(t, served, end), where="post", color=color, linewidth=1.6, label=label
        )
        entry = next(iter(r.metrics.components))
        backlog = df[df["component"] == entry]["backlog"]
        axes[2].step(
            *_extend(t, backlog, end), where="post", color=color, linewidth=1.6, label=label
        )
    first = frames[0]
    offered = first[first["component"] == ctx.entry]["demand"]
    if ctx.offered is not None:
        offered = offered.copy()
        offered[:] = ctx.offered
    axes[1].step(
        *_extend(t, offered, ctx.duration_s),
        where="post",
        color="black",
        linestyle=":",
        label=ctx.offered_label,
    )
    if ctx.ceiling is not None:
        axes[0].axhline(
            ctx.ceiling,
            color="black",
            linestyle="--",
            linewidth=1,
            label=f"SLO ceiling {ctx.ceiling:.2f}",
        )
    axes[0].set_ylabel("highest saturation\n(of any component)")
    axes[1].set_ylabel(f"served {ctx.unit.many} per second")
    entries = {next(iter(r.metrics.components)) for r in results}
    shown = literal(ctx.entry) if len(entries) == 1 else "entry queue"
    axes[2].set_ylabel(f"{shown} backlog ({ctx.unit.many})")
    axes[2].set_xlabel("time (s)")
    axes[0].set_title(
        f"{len(results)} designs under {literal(results[0].scenario.name)} "
        f"({results[0].engine} engine, seed {results[0].seed})",
        fontsize=10,
    )
    for ax, lane in zip(axes, lanes, strict=True):
        ax.set_xlim(0, ctx.duration_s)
        # The data's top: its step lines (the event lines are in axes units).
        tops = [float(np.nanmax(np.asarray(ln.get_ydata(), dtype=float))) for ln in ax.lines]
        _headroom(ax, max([t for t in tops if np.isfinite(t)], default=1.0), lane)
        if ax is axes[2]:
            _zero_shows(ax, max([t for t in tops if np.isfinite(t)], default=0.0), ctx.unit)
        ax.legend(fontsize=7.5, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def _finish(ax: Axes, ctx: PlotContext, ylabel: str, what: str) -> None:
    """What every single-run plot ends with: the time axis, labels, title, legend."""
    ax.set_xlim(0, ctx.duration_s)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("time (s)")
    ax.set_title(f"{what}: {ctx.title}", fontsize=10)
    ax.legend(fontsize=7.5, loc="center left", bbox_to_anchor=(1.0, 0.5))


def _extend(t: Any, y: Any, end_s: float) -> tuple[Any, Any]:
    """Window starts and values, with the last value held to the end of the run, so a
    step plot covers the last window too."""
    import numpy as np

    t_arr, y_arr = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    return np.append(t_arr, end_s), np.append(y_arr, y_arr[-1] if len(y_arr) else 0.0)


def _axes(ax: Axes | None) -> tuple[Figure, Axes]:
    if ax is not None:
        return cast(Figure, ax.get_figure()), ax
    fig = Figure(figsize=(11, 4.2))
    return fig, fig.subplots()
