"""``gym serve``: the playground, a Bokeh server app on loopback.

Each browser tab gets its own Bokeh document and its own :class:`~gym.playground.Session`
(concurrent users never see each other's state). A field's slider or number box sets the
field, the design is checked as a file would be (a bad value shows the same one-line
message as the command line and changes nothing), and the flow engine runs again: the
verdict, the SLO table, the plots, "why it fails" and the error budget follow within a
run's time. The suggested fix is searched once the fields have been still for
``FIX_AFTER_MS``, in a worker thread; the request engine runs on demand, in a worker
thread, with its progress shown. BokehJS is served by this server: the page needs no
internet.

Bursts of changes are folded: a change only records the newest value of its field and
asks for one update, at most every ``UPDATE_EVERY_S``, so a page sending 20 changes a
second is updated as often as a browser can draw it and always ends on the last value.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import logging
import math
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gym.core.errors import GymError
from gym.core.limits import DEFAULT_MAX_URLS
from gym.models import Design, Scenario
from gym.playground import FieldSpec, Session, View, messages
from gym.system.graph import GraphDesign

if TYPE_CHECKING:
    from bokeh.document import Document
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure as Figure

log = logging.getLogger(__name__)

#: The page is updated at most this often (s): changes that come meanwhile are folded
#: into the next update, so a slider dragged fast never queues work in the browser, whose
#: redraw of four plots is the slowest step (about 0.1 s in headless Chromium on 2 cores).
UPDATE_EVERY_S = 0.15
#: The fix is searched once no field has changed for this long (ms).
FIX_AFTER_MS = 600

_VERDICT_STYLE = {
    "PASS": "background:#1a7f37;color:white",
    "FAIL": "background:#b42318;color:white",
}


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (for tests and ``--port 0``)."""
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def check_port(host: str, port: int) -> None:
    """Refuse, before any work, an address the server could not listen on: the port when
    it is taken or not allowed, the host otherwise."""
    if not host.strip():
        raise GymError.single(None, "--host", "an address is needed, e.g. 127.0.0.1")
    if ":" in host:  # Bokeh's check of the page's origin takes no IPv6 address
        raise GymError.single(
            None,
            "--host",
            f"{host}: an IPv6 address; the playground listens on IPv4 addresses and host "
            "names (127.0.0.1, 0.0.0.0 for every interface, localhost)",
        )
    try:
        with socket.socket(socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except (OSError, UnicodeError) as exc:
        option = "--port" if getattr(exc, "errno", None) in _PORT_ERRORS else "--host"
        reason = getattr(exc, "strerror", None) or str(exc)
        raise GymError.single(None, option, f"cannot listen on {host}:{port}: {reason}") from None


#: Why a bind fails because of the port (taken, or reserved for root) and not the host.
_PORT_ERRORS = (errno.EADDRINUSE, errno.EACCES)


class Page:
    """One browser tab: its session, widgets and plots."""

    def __init__(self, doc: Document, session: Session) -> None:
        self.doc = doc
        self.session = session
        self.pending: dict[str, Any] = {}
        self.update_queued = False
        self.shown_at = 0.0  # when the page was last updated (time.monotonic)
        self.generation = 0  # bumped by every run shown: stale fixes are dropped
        self.version = 0  # bumped by every change of the design: stale runs are dropped
        self.fix_timer: Any = None
        self.busy = False  # a request-engine run in progress
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gym-page")
        self.widgets: dict[str, Any] = {}
        self.view: View | None = None
        self.sources: dict[str, ColumnDataSource] = {}
        self._build()  # runs the design once, for the plots' first figures
        assert self.view is not None
        self._show(self.view)
        self._schedule_fix()
        doc.on_session_destroyed(self._closed)

    def _closed(self, _context: Any) -> None:
        """The tab is gone: drop the fix or run it waits for, free its worker thread."""
        self.pool.shutdown(wait=False, cancel_futures=True)

    # -- layout -----------------------------------------------------------------------------
    def _build(self) -> None:
        from bokeh.layouts import column, row
        from bokeh.models import (
            Button,
            CheckboxGroup,
            ColumnDataSource,
            CustomJS,
            Div,
            FileInput,
            RadioButtonGroup,
        )

        s = self.session
        self.title = Div(name="title")
        self.verdict = Div(name="verdict", width=180)
        self.cost = Div(name="cost")
        self.error = Div(name="error", styles={"color": "#b42318"}, text="")
        self.status = Div(name="status", text="")
        self.slos = Div(name="slos")
        self.why = Div(name="why")
        self.budget = Div(name="budget")
        self.fix = Div(name="fix")
        self.yaml_source = ColumnDataSource(data={"text": [""], "file": [""]}, name="yaml_source")
        download = Button(
            label="Download design (YAML)", name="download", css_classes=["gym-download"]
        )
        download.js_on_click(
            CustomJS(
                args={"src": self.yaml_source},
                code="""
const blob = new Blob([src.data.text[0]], {type: 'application/x-yaml'});
const a = document.createElement('a');
a.href = URL.createObjectURL(blob);
a.download = src.data.file[0];
document.body.appendChild(a); a.click(); a.remove();
""",
            )
        )
        self.upload = FileInput(
            accept=".yaml,.yml", name="open", title="Open a design file", css_classes=["gym-open"]
        )
        # The browser sends a file's contents and its name as two changes: read both
        # once the two have arrived (a file of the same name sends only the first).
        self.upload.on_change("value", self._upload_changed)
        self.upload.on_change("filename", self._upload_changed)
        self.upload_queued = False
        self.engine = RadioButtonGroup(
            labels=["flow (live)", "request"], active=0, name="engine", css_classes=["gym-engine"]
        )
        self.engine.on_change("active", lambda attr, old, new: self._engine_changed())
        self.run_button = Button(
            label="Run the request engine", name="run", disabled=True, css_classes=["gym-run"]
        )
        self.run_button.on_click(self._run_request)
        self.sections = CheckboxGroup(name="sections", css_classes=["gym-sections"])
        self.sections_title = Div(text="<b>Optional sections</b>")
        self.syncing = False
        self._sync_sections()
        self.sections.on_change("active", self._sections_changed)
        self.fields_box = column(name="fields", sizing_mode="stretch_width")
        self._fill_fields()
        controls = column(
            self.upload,
            download,
            self.engine,
            self.run_button,
            self.status,
            self.error,
            self.sections_title,
            self.sections,
            self.fields_box,
            width=430,
            name="controls",
        )
        plots = self._plots()
        results = column(
            row(self.verdict, self.cost),
            self.slos,
            *plots,
            self.why,
            self.budget,
            self.fix,
            sizing_mode="stretch_width",
        )
        self.doc.add_root(column(self.title, row(controls, results), name="page"))
        self.doc.title = f"gym playground: {s.design.name}"

    def _fill_fields(self) -> None:
        from bokeh.layouts import row
        from bokeh.models import Div, NumericInput, Select, Slider

        s = self.session
        children: list[Any] = []
        self.widgets = {}
        part = None
        for spec in s.fields():
            value = s.value(spec.path)
            if spec.part != part:
                part = spec.part
                header = Div(text=f"<b>{_esc(part)}</b>", name=f"part:{part}")
                self.widgets[f"part:{part}"] = header
                children.append(header)
            graph = spec.path.startswith("graph.nodes.")
            label = spec.path.removeprefix(f"graph.nodes.{part}." if graph else f"{part}.")
            tip = _esc(spec.description)
            if spec.kind == "choice":
                options = [_shown(o) for o in spec.options]
                select = Select(
                    title=label,
                    value=_shown(value),
                    options=options,
                    name=f"field:{spec.path}",
                    css_classes=[_css("select", spec.path)],
                    description=tip or None,
                )
                select.on_change("value", partial(self._choice_changed, spec))
                self.widgets[spec.path] = select
                children.append(select)
                continue
            box = NumericInput(
                title=f"{label}{f' ({spec.unit})' if spec.unit else ''}",
                value=value,
                mode="int" if spec.kind == "int" else "float",
                name=f"input:{spec.path}",
                css_classes=[_css("input", spec.path)],
                placeholder="default" if spec.optional else "",
                width=150,
            )
            box.on_change("value", partial(self._typed, spec))
            widgets: list[Any] = []
            if value is not None:
                start, end, step = spec.slider(float(value))
                slider = Slider(
                    start=start,
                    end=max(end, float(value)),
                    value=value,
                    step=step,
                    title=None,
                    name=f"slider:{spec.path}",
                    css_classes=[_css("slider", spec.path)],
                    width=250,
                    show_value=False,
                )
                slider.on_change("value", partial(self._slid, spec))
                widgets.append(slider)
                self.widgets[f"slider:{spec.path}"] = slider
            self.widgets[f"input:{spec.path}"] = box
            children.append(row(*widgets, box))
        self.fields_box.children = children

    def _plots(self) -> list[Figure]:
        from bokeh.models import ColumnDataSource, Range1d, Span
        from bokeh.plotting import figure

        from gym.report.plots import COMPONENT_COLORS

        view = self.session.run()
        self.view = view
        x_range = Range1d(0, view.duration_s)
        timeline = figure(
            height=40 + 24 * max(1, len(view.events)),
            x_range=x_range,
            y_range=list(reversed(_events(view)["label"])) or ["(no events)"],
            title="Scenario timeline",
            name="timeline",
            css_classes=["gym-plot-timeline"],
            tools="",
            toolbar_location=None,
            sizing_mode="stretch_width",
        )
        self.sources["events"] = ColumnDataSource(_events(view), name="events")
        timeline.hbar(
            y="label",
            left="start",
            right="end",
            height=0.7,
            color="color",
            source=self.sources["events"],
        )
        timeline.xaxis.visible = False

        sat = _figure(240, x_range, "Saturation per component (demand / capacity)", "saturation")
        self.sources["saturation"] = ColumnDataSource(_saturation(view), name="saturation_data")
        self.sat_fig = sat
        self.sat_components: list[str] = []
        self._draw_saturation(view)
        self.ceiling = Span(
            location=view.ceiling or 0,
            dimension="width",
            line_dash="dashed",
            line_color="black",
            visible=view.ceiling is not None,
        )
        sat.add_layout(self.ceiling)
        sat.y_range = Range1d(0, _top(view))
        self.sat_range = sat.y_range
        sat.yaxis.axis_label = "saturation"

        out = _figure(220, x_range, "Offered, served and failed (URLs per second)", "outcomes")
        self.sources["outcomes"] = ColumnDataSource(_outcomes(view), name="outcomes_data")
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

        back = _figure(200, x_range, f"{view.entry} backlog (URLs waiting)", "backlog")
        self.sources["backlog"] = ColumnDataSource(_backlog(view), name="backlog_data")
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
        back.y_range.start = 0
        back.add_layout(back.legend[0], "right")
        return [timeline, sat, out, back]

    def _draw_saturation(self, view: View) -> None:
        """A line per component the run has (a section added or removed changes them)."""
        from bokeh.models import GlyphRenderer, Legend
        from bokeh.palettes import Category10_10

        from gym.report.plots import COMPONENT_COLORS

        fig = self.sat_fig
        fig.renderers = [r for r in fig.renderers if not isinstance(r, GlyphRenderer)]
        self.sources["saturation"].data = _saturation(view)
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

    # -- changes ----------------------------------------------------------------------------
    def _slid(self, spec: FieldSpec, attr: str, old: Any, new: Any) -> None:
        if not isinstance(new, int | float) or not math.isfinite(new):
            return  # a slider holds numbers; anything else did not come from one
        value = round(new) if spec.kind == "int" else float(new)
        box = self.widgets.get(f"input:{spec.path}")
        if box is not None and box.value != value:
            box.value = value  # its own callback sees the same value: no second change
        self._change(spec.path, value)

    def _typed(self, spec: FieldSpec, attr: str, old: Any, new: Any) -> None:
        self._change(spec.path, new)  # the slider follows once the value holds

    def _follow(self, path: str) -> None:
        """Bring a field's slider to its value, once the design has taken it."""
        slider = self.widgets.get(f"slider:{path}")
        value = self.session.value(path)
        if slider is None or not isinstance(value, int | float) or not math.isfinite(value):
            return
        if slider.value != value:
            if value > slider.end:
                slider.end = value
            if value < slider.start:
                slider.start = value
            slider.value = value

    def _choice_changed(self, spec: FieldSpec, attr: str, old: Any, new: Any) -> None:
        value: Any = new
        for option in spec.options:
            if _shown(option) == new:
                value = option
        self._change(spec.path, value)

    def _change(self, path: str, value: Any) -> None:
        if self.session.value(path) == value and path not in self.pending:
            return
        self.pending[path] = value
        if not self.update_queued:
            self.update_queued = True
            wait_ms = (self.shown_at + UPDATE_EVERY_S - time.monotonic()) * 1000
            if wait_ms <= 0:
                self.doc.add_next_tick_callback(self._apply)
            else:  # the page showed an update a moment ago: fold what comes meanwhile
                self.doc.add_timeout_callback(self._apply, wait_ms)

    def _apply(self) -> None:
        """Set every pending field (the newest value of each), then run once. The message
        shown is the whole draft's: it stays until every field holds again."""
        self.update_queued = False
        self.shown_at = time.monotonic()
        if self._take_pending():
            self.update()

    def _take_pending(self) -> bool:
        """Put the pending values in the draft; whether the design changed."""
        pending, self.pending = self.pending, {}
        before = self.session.design
        problems: list[str] = []
        for path, value in pending.items():
            try:
                self.session.set(path, value)
                problems = []
            except GymError as err:
                problems = messages(err)
        self._problems(problems)
        if self.session.design is not before:
            for path in self.widgets:
                if path.startswith("slider:"):
                    self._follow(path.removeprefix("slider:"))
            self.version += 1
        return self.session.design is not before

    def update(self) -> None:
        """Run the design (flow engine) and show it."""
        self.generation += 1
        self.fix.text = ""
        if self.engine.active == 1:
            self._show_yaml()
            self.status.text = "The design changed: <i>Run the request engine</i> to see it."
            return
        try:
            view = self.session.run()
        except GymError as err:
            self._problems(messages(err))
            return
        except Exception as exc:  # the page stays up; the message says what broke
            self.error.text = _esc(f"internal error: {type(exc).__name__}: {exc}")
            log.exception("the playground's run failed")
            return
        self._show(view)
        self._schedule_fix()

    def _show(self, view: View) -> None:
        s = self.session
        self.view = view
        self.doc.title = f"gym playground: {s.design.name}"
        if list(view.saturation) != self.sat_components:
            self._draw_saturation(view)
        self.title.text = (
            f"<h2 style='margin:4px 0'>{_esc(str(s.design.name))} "
            f"<small>under {_esc(str(s.scenario.name))}, seed {s.seed}</small></h2>"
        )
        self.verdict.text = (
            f"<div style='{_VERDICT_STYLE.get(view.verdict, '')};font-size:28px;"
            f"padding:6px 18px;border-radius:6px;text-align:center' "
            f"data-verdict='{view.verdict}'>{view.verdict}</div>"
        )
        slo = s.scenario.slos.cost_units
        limit = f" (SLO: at most {slo.max:g})" if slo is not None else ""
        parts = ", ".join(f"{_esc(k)} {v}" for k, v in view.units.items() if v)
        self.cost.text = (
            f"<div style='padding:8px' data-cost='{view.cost_units}'>{view.engine} engine &middot; "
            f"<b>{view.cost_units} units</b>{limit}: {parts}</div>"
        )
        for part, units in view.units.items():
            header = self.widgets.get(f"part:{part}")
            if header is not None:
                header.text = f"<b>{_esc(part)}</b> &mdash; {units} unit{'s' * (units != 1)}"
        self.slos.text = view.slo_html
        self.why.text = (
            "<h3>Why it fails</h3>" + view.explanations_html if view.verdict != "PASS" else ""
        )
        self.budget.text = "<h3>Error budget</h3>" + view.budget_html
        self.sources["saturation"].data = _saturation(view)
        self.sources["outcomes"].data = _outcomes(view)
        self.sources["backlog"].data = _backlog(view)
        self.sources["events"].data = _events(view)
        self.ceiling.location = view.ceiling or 0
        self.sat_range.end = _top(view)
        self.buffer.location = view.buffer or 0
        self.buffer.visible = view.buffer is not None
        self._show_yaml()

    def _show_yaml(self) -> None:
        name = self.session.design.name or "design"
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "design"
        self.yaml_source.data = {"text": [self.session.yaml()], "file": [f"{safe}.yaml"]}

    # -- the fix ----------------------------------------------------------------------------
    def _schedule_fix(self) -> None:
        if self.fix_timer is not None:
            with contextlib.suppress(ValueError):  # it ran already
                self.doc.remove_timeout_callback(self.fix_timer)
        self.fix_timer = None
        if self.view is None or self.view.verdict == "PASS":
            return
        self.fix.text = "<h3>Suggested fix</h3><p><i>searching once the fields are still...</i></p>"
        self.fix_timer = self.doc.add_timeout_callback(self._search_fix, FIX_AFTER_MS)

    def _search_fix(self) -> None:
        self.fix_timer = None
        if self.view is None:
            return
        generation, result = self.generation, self.view.result
        session = self.session

        def work() -> None:
            try:
                text = _fix_html(session.fix(result))
            except Exception as exc:  # shown on the page, not raised
                text = f"<p>internal error: {_esc(type(exc).__name__)}: {_esc(str(exc))}</p>"
            self._later(partial(self._fix_found, generation, text))

        self.pool.submit(work)

    def _fix_found(self, generation: int, text: str) -> None:
        if generation == self.generation:
            self.fix.text = "<h3>Suggested fix</h3>" + text

    # -- the request engine -----------------------------------------------------------------
    def _engine_changed(self) -> None:
        request = self.engine.active == 1
        self.run_button.disabled = not request or self.busy
        if not request:
            self.status.text = ""
            self.update()
        else:
            self.status.text = (
                "Press <i>Run the request engine</i> (every URL, one event at a time)."
            )

    def _run_request(self) -> None:
        if self.busy:
            return
        self.busy = True
        self.run_button.disabled = True
        version = self.version
        session = Session(
            self.session.design,
            self.session.scenario,
            self.session.design_file,
            self.session.seed,
            self.session.max_urls,
        )
        duration = self.session.scenario.duration_s
        self.status.text = "request engine: starting..."

        def progress(now: float) -> None:
            self._later(partial(self._progress, now, duration))

        def work() -> None:
            try:
                view: View | str = session.run("request", progress=progress)
            except GymError as err:
                view = "\n".join(messages(err))
            except Exception as exc:  # shown on the page
                view = f"internal error: {type(exc).__name__}: {exc}"
            self._later(partial(self._request_done, version, view))

        self.pool.submit(work)

    def _progress(self, now: float, duration: float) -> None:
        if self.busy and self.engine.active == 1:
            share = min(1.0, now / duration) if duration else 1.0
            self.status.text = (
                f"request engine: {share:.0%} ({now:,.0f} of {duration:,.0f} simulated s)"
                f"<div style='background:#ddd;width:300px;height:8px'>"
                f"<div style='background:#1f77b4;width:{300 * share:.0f}px;height:8px'></div>"
                "</div>"
            )

    def _request_done(self, version: int, view: View | str) -> None:
        self.busy = False
        self.run_button.disabled = self.engine.active != 1
        if isinstance(view, str):
            self.status.text = ""
            self._problems(view.splitlines())
            return
        if self.engine.active != 1:
            return  # back on the flow engine meanwhile: its figures stay
        if version != self.version:
            self.status.text = "request engine: done, but the design changed since; run again."
            return
        self.status.text = "request engine: done."
        self._show(view)

    def _sections_changed(self, attr: str, old: list[int], new: list[int]) -> None:
        if self.syncing:
            return
        self._take_pending()  # a slider moved just before is not lost
        labels = self.sections.labels
        for i in set(old) ^ set(new):
            try:
                self.session.toggle(labels[i], i in new)
            except GymError as err:
                self._problems(messages(err))
                return
        self.error.text = ""
        self.version += 1
        self._fill_fields()
        self.update()

    def _problems(self, lines: list[str]) -> None:
        """Show ``lines`` (the command line's messages) where the page shows errors."""
        self.error.text = "<br>".join(_esc(line) for line in lines)

    # -- opening a file ---------------------------------------------------------------------
    def _upload_changed(self, attr: str, old: Any, new: Any) -> None:
        if not self.upload_queued:
            self.upload_queued = True
            self.doc.add_next_tick_callback(self._opened)

    def _opened(self) -> None:
        self.upload_queued = False
        name = _unset_or(self.upload, "filename", "") or "uploaded.yaml"
        if isinstance(name, list):
            name = name[0] if name else "uploaded.yaml"
        name = Path(str(name)).name
        value = _unset_or(self.upload, "value", "")
        value = value[0] if isinstance(value, list) and value else value
        if not value:
            return  # the box was cleared (after the last file was read)
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            self.error.text = _esc(f"error: {name}: not a file the page could read")
            return
        try:
            self.session.open(raw, name)  # the size limit, UTF-8, YAML: as gym run reads
        except GymError as err:
            self._problems(messages(err))
            return
        self.error.text = ""
        self.pending = {}
        self.version += 1
        # Cleared, so that opening the same file again (to go back to it) reads it again.
        self.upload.clear()
        self._sync_sections()
        self._fill_fields()
        self.update()

    def _sync_sections(self) -> None:
        """The optional sections' boxes as the design has them (none for a graph)."""
        sections = self.session.sections()
        self.syncing = True  # set here, not by the user: no toggle
        try:
            self.sections.labels = list(sections)
            self.sections.active = [i for i, on in enumerate(sections.values()) if on]
        finally:
            self.syncing = False
        self.sections.visible = self.sections_title.visible = bool(sections)

    def _later(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the page's own turn of the server loop (from a thread)."""
        with contextlib.suppress(Exception):  # the tab was closed meanwhile
            self.doc.add_next_tick_callback(callback)


def _unset_or(model: Any, attr: str, default: Any) -> Any:
    """A Bokeh property's value, or ``default`` while the browser has not set it."""
    from bokeh.core.property.descriptors import UnsetValueError

    try:
        return getattr(model, attr)
    except UnsetValueError:
        return default


def _css(what: str, path: str) -> str:
    """A CSS class naming a field's widget (for tests and user styles)."""
    return f"gym-{what}-" + "".join(c if c.isalnum() else "-" for c in path)


def _esc(text: str) -> str:
    """User text for the page, as the HTML report writes it (markup escaped, control
    characters shown); imported on use, so that refusing bad options stays quick."""
    from gym.report.html import escape

    return escape(text)


def _shown(value: Any) -> str:
    """A choice's value as a design file writes it (``true``, ``global_fifo``)."""
    from gym.explore.compare import shown

    return shown(value)


def _figure(height: int, x_range: Any, title: str, name: str) -> Figure:
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


def _top(view: View) -> float:
    """The saturation plot's top: the highest figure, the SLO's ceiling and 1, with room."""
    highest = max(
        (x for xs in view.saturation.values() for x in xs if x == x and x != float("inf")),
        default=0.0,
    )
    return 1.08 * max(1.0, highest, view.ceiling or 0.0)


def _saturation(view: View) -> dict[str, Any]:
    data: dict[str, Any] = {"t": view.t}
    data.update(view.saturation)
    return data


def _outcomes(view: View) -> dict[str, Any]:
    return {"t": view.t, "offered": view.offered, "served": view.served, "failed": view.failed}


def _backlog(view: View) -> dict[str, Any]:
    return {"t": view.t, "backlog": view.backlog}


def _events(view: View) -> dict[str, Any]:
    """The timeline's bars. Each event's row is numbered: two events may have one label
    (two stalls of one target), and a row's name must be unique."""
    from gym.report.plots import EVENT_STYLE

    return {
        "label": [f"{i}. {e[2]}" for i, e in enumerate(view.events, 1)],
        "start": [e[0] for e in view.events],
        "end": [e[1] for e in view.events],
        "color": [EVENT_STYLE.get(e[3], EVENT_STYLE["load"])["color"] for e in view.events],
    }


def _fix_html(fix: Any) -> str:
    from gym.report import html

    if fix is None:
        return "<p>The design passes: nothing to fix.</p>"
    return html.fix_section(fix)


def app(
    design: Design | GraphDesign,
    scenario: Scenario,
    design_file: str,
    seed: int = 0,
    max_urls: int = DEFAULT_MAX_URLS,
) -> Any:
    """The Bokeh application: every document (browser tab) gets a fresh session."""
    from bokeh.application import Application
    from bokeh.application.handlers.function import FunctionHandler

    def make(doc: Document) -> None:
        Page(doc, Session(design, scenario, design_file, seed, max_urls))

    return Application(FunctionHandler(make))


def serve(
    design: Design | GraphDesign,
    scenario: Scenario,
    design_file: str,
    *,
    host: str = "127.0.0.1",
    port: int = 5006,
    seed: int = 0,
    max_urls: int = DEFAULT_MAX_URLS,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the playground until interrupted; ``ready`` gets the address once the server
    listens."""
    from bokeh.server.server import Server

    origins = [f"{host}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"]
    server = Server(
        {"/": app(design, scenario, design_file, seed, max_urls)},
        address=host,
        port=port,
        allow_websocket_origin=origins,
        num_procs=1,
    )
    server.start()
    if ready is not None:
        ready(f"http://{host}:{port}/")
    try:
        server.io_loop.start()
    finally:
        server.stop()
