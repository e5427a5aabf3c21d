"""The playground's plots: the scenario's timeline, saturation per component, offered /
served / failed per second and the entry queue's backlog, drawn from a run's view."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gym.playground.state import View

if TYPE_CHECKING:
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure as Figure


class Figures:
    """The four plots of one page and the data they show; :meth:`show` redraws them from
    another run's view."""

    def __init__(self, view: View) -> None:
        from bokeh.models import Range1d

        self.sources: dict[str, ColumnDataSource] = {}
        x_range = Range1d(0, view.duration_s)
        self.timeline = self._timeline(view, x_range)
        self.x_range = x_range
        sat = self._saturation_plot(view, x_range)
        out = self._outcomes_plot(view, x_range)
        back = self._backlog_plot(view, x_range)
        self.plots: list[Figure] = [self.timeline, sat, out, back]

    def _timeline(self, view: View, x_range: Any) -> Figure:
        """The scenario's events as bars over the run's seconds (its axis is the plots'
        below it)."""
        from bokeh.models import ColumnDataSource
        from bokeh.plotting import figure

        timeline = figure(
            height=40 + 24 * max(1, len(view.events)),
            x_range=x_range,
            y_range=list(reversed(events(view)["label"])) or ["(no events)"],
            title="Scenario timeline",
            name="timeline",
            css_classes=["gym-plot-timeline"],
            tools="",
            toolbar_location=None,
            sizing_mode="stretch_width",
        )
        self.sources["events"] = ColumnDataSource(events(view), name="events")
        timeline.hbar(
            y="label",
            left="start",
            right="end",
            height=0.7,
            color="color",
            source=self.sources["events"],
        )
        timeline.xaxis.visible = False
        return timeline

    def _saturation_plot(self, view: View, x_range: Any) -> Figure:
        """Saturation per component, with the SLO's ceiling as a dashed line."""
        from bokeh.models import ColumnDataSource, Range1d, Span

        sat = time_figure(
            240, x_range, "Saturation per component (demand / capacity)", "saturation"
        )
        self.sources["saturation"] = ColumnDataSource(saturation(view), name="saturation_data")
        self.sat_fig = sat
        self.sat_components: list[str] = []
        self.draw_saturation(view)
        self.ceiling = Span(
            location=view.ceiling or 0,
            dimension="width",
            line_dash="dashed",
            line_color="black",
            visible=view.ceiling is not None,
        )
        sat.add_layout(self.ceiling)
        sat.y_range = Range1d(0, top(view))
        self.sat_range = sat.y_range
        sat.yaxis.axis_label = "saturation"
        return sat

    def _outcomes_plot(self, view: View, x_range: Any) -> Figure:
        """Offered, served and failed per second, a line each."""
        from bokeh.models import ColumnDataSource

        unit = view.result.unit.many  # what the run counts: URLs, a graph's requests
        out = time_figure(
            220, x_range, f"Offered, served and failed ({unit} per second)", "outcomes"
        )
        self.sources["outcomes"] = ColumnDataSource(outcomes(view), name="outcomes_data")
        for key, color in (("offered", "black"), ("served", "#2ca02c"), ("failed", "#d62728")):
            out.step(
                "t",
                key,
                source=self.sources["outcomes"],
                mode="after",
                line_width=2,
                color=color,
                legend_label=key,
            )
        out.y_range.start = 0
        out.add_layout(out.legend[0], "right")
        return out

    def _backlog_plot(self, view: View, x_range: Any) -> Figure:
        """The entry queue's backlog, with its buffer as a dashed line."""
        from bokeh.models import ColumnDataSource, Range1d, Span

        from gym.report.plots import COMPONENT_COLORS

        back = time_figure(200, x_range, backlog_title(view), "backlog")
        self.sources["backlog"] = ColumnDataSource(backlog(view), name="backlog_data")
        back.step(
            "t",
            "backlog",
            source=self.sources["backlog"],
            mode="after",
            line_width=2,
            color=COMPONENT_COLORS["frontier"],
            legend_label="backlog",
        )
        self.buffer = Span(
            location=view.buffer or 0,
            dimension="width",
            line_dash="dashed",
            line_color="black",
            visible=view.buffer is not None,
        )
        back.add_layout(self.buffer)
        back.y_range = Range1d(*backlog_range(view))
        self.back = back
        back.add_layout(back.legend[0], "right")
        return back

    def draw_saturation(self, view: View) -> None:
        """A line per component the run has (a section added or removed changes them)."""
        from bokeh.models import GlyphRenderer, Legend
        from bokeh.palettes import Category10_10

        from gym.report.plots import COMPONENT_COLORS

        fig = self.sat_fig
        fig.renderers = [r for r in fig.renderers if not isinstance(r, GlyphRenderer)]
        self.sources["saturation"].data = saturation(view)
        spare = iter(Category10_10)
        items = []
        for name in view.saturation:
            line = fig.step(
                "t",
                name,
                source=self.sources["saturation"],
                mode="after",
                line_width=2,
                color=COMPONENT_COLORS.get(name) or next(spare),
            )
            items.append((name, [line]))
        if not self.sat_components:
            fig.add_layout(Legend(items=items), "right")
        else:
            fig.select_one(Legend).items = Legend(items=items).items
        self.sat_components = list(view.saturation)

    def show(self, view: View) -> None:
        """Show ``view``'s figures (after the page's texts: the order the page had)."""
        self.sources["saturation"].data = saturation(view)
        self.sources["outcomes"].data = outcomes(view)
        self.sources["backlog"].data = backlog(view)
        shown = events(view)
        labels = list(reversed(shown["label"])) or ["(no events)"]
        if list(self.timeline.y_range.factors) != labels:  # another scenario's events
            self.timeline.y_range.factors = labels
            self.timeline.height = 40 + 24 * max(1, len(view.events))
        self.sources["events"].data = shown
        if self.x_range.end != view.duration_s:
            self.x_range.start, self.x_range.end = 0, view.duration_s
        self.ceiling.location = view.ceiling or 0
        self.sat_range.end = top(view)
        self.buffer.location = view.buffer or 0
        self.buffer.visible = view.buffer is not None
        self.back.y_range.start, self.back.y_range.end = backlog_range(view)
        self.back.title.text = backlog_title(view)


def time_figure(height: int, x_range: Any, title: str, name: str) -> Figure:
    """A plot over the run's seconds, panned and zoomed along time, as wide as the page."""
    from bokeh.plotting import figure

    return figure(
        height=height,
        x_range=x_range,
        title=title,
        name=name,
        css_classes=[f"gym-plot-{name}"],
        tools="xpan,xwheel_zoom,reset,hover",
        sizing_mode="stretch_width",
    )


def backlog_title(view: View) -> str:
    """The backlog plot's title; it says so when the queue stayed empty (a line on the
    axis is easy to miss)."""
    empty = not any(x > 0 for x in view.backlog)
    unit = view.result.unit.many  # what the run counts: URLs, a graph's requests
    return f"{view.entry} backlog ({unit} waiting)" + (": none, 0 all along" if empty else "")


def backlog_range(view: View) -> tuple[float, float]:
    """The backlog plot's range: from a little below 0 (a backlog of 0 is drawn above
    the axis, not on it) to above the highest backlog and the buffer."""
    high = max([1.0, float(view.buffer or 0), *(x for x in view.backlog if x == x)])
    return -0.04 * high, 1.06 * high


def top(view: View) -> float:
    """The saturation plot's top: the highest figure, the SLO's ceiling and 1, with room."""
    highest = max(
        (x for xs in view.saturation.values() for x in xs if x == x and x != float("inf")),
        default=0.0,
    )
    return 1.08 * max(1.0, highest, view.ceiling or 0.0)


def saturation(view: View) -> dict[str, Any]:
    data: dict[str, Any] = {"t": view.t}
    data.update(view.saturation)
    return data


def outcomes(view: View) -> dict[str, Any]:
    return {"t": view.t, "offered": view.offered, "served": view.served, "failed": view.failed}


def backlog(view: View) -> dict[str, Any]:
    return {"t": view.t, "backlog": view.backlog}


def events(view: View) -> dict[str, Any]:
    """The timeline's bars. Each event's row is numbered: two events may have one label
    (two stalls of one target), and a row's name must be unique."""
    from gym.report.plots import EVENT_STYLE

    return {
        "label": [f"{i}. {e[2]}" for i, e in enumerate(view.events, 1)],
        "start": [e[0] for e in view.events],
        "end": [e[1] for e in view.events],
        "color": [EVENT_STYLE.get(e[3], EVENT_STYLE["load"])["color"] for e in view.events],
    }
