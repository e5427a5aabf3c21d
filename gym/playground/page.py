"""The playground's page: one Bokeh document per browser tab, drawing its session.

Each browser tab gets its own Bokeh document and its own :class:`~gym.playground.state.Session`
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

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any

from gym.core.errors import GymError, Problem
from gym.playground.controls import NodeAdder, RunControls, message_div, say
from gym.playground.fields import Fields
from gym.playground.figures import Figures
from gym.playground.files import DesignFiles
from gym.playground.links import Scenarios
from gym.playground.state import Session, View, messages
from gym.playground.texts import (
    cost_html,
    esc,
    first_paint_html,
    fix_html,
    headroom_section,
    odds_html,
    progress_html,
    slo_cards_html,
    stale_odds_html,
    title_html,
    verdict_html,
    warnings_html,
)

if TYPE_CHECKING:
    from bokeh.document import Document

log = logging.getLogger(__name__)

#: The page is updated at most this often (s): changes that come meanwhile are folded
#: into the next update, so a slider dragged fast never queues work in the browser, whose
#: redraw of four plots is the slowest step (about 0.1 s in headless Chromium on 2 cores).
UPDATE_EVERY_S = 0.15
#: The fix is searched once no field has changed for this long (ms).
FIX_AFTER_MS = 600
#: The left panel's width (px): the fields; the plots take the rest of the page.
LEFT_PX = 420
#: A panel's frame.
_PANEL = {"background": "#f6f8fa", "border-radius": "8px", "padding": "8px"}
#: The page's HTML as the server sends it: the run drawn in plain HTML first
#: (:func:`~gym.playground.texts.first_paint_html`), then the page's roots.
_TEMPLATE = """{% block contents %}{{ first_paint }}{{ super() }}{% endblock %}"""
#: Removes the plain-HTML first paint once the page is drawn.
_DRAWN_JS = "const e = document.getElementById('gym-first-paint'); if (e) e.remove();"


class Page:
    """One browser tab: its session, widgets and plots."""

    def __init__(
        self,
        doc: Document,
        session: Session,
        scenarios: Scenarios | None = None,
        problems: Sequence[Problem] = (),
    ) -> None:
        self.doc = doc
        self.session = session
        self.scenarios = scenarios or Scenarios(session.scenario_file, {})
        self.pending: dict[str, Any] = {}
        self.update_queued = False
        self.shown_at = 0.0  # when the page was last updated (time.monotonic)
        self.generation = 0  # bumped by every run shown: stale fixes are dropped
        self.version = 0  # bumped by every change of the design: stale runs are dropped
        self.fix_timer: Any = None
        self.busy = False  # a request-engine run in progress
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gym-page")
        # The pass probability over many seeds, worked out in a thread of its own after
        # each change, one batch at a time (a change meanwhile asks for one more, for the
        # newest design): the run of one seed is shown at once, the odds a batch later.
        self.odds_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gym-odds")
        self.odds_running = False
        self.odds_wanted = False
        self.odds_version = -1  # the design version the odds shown are of
        self.odds_for = -1  # the design version the batch running is of
        self.view: View | None = None
        self._build()  # runs the design once, for the plots' first figures
        assert self.view is not None
        self._show(self.view)
        self._problems(list(problems))  # what was wrong with the link the page came from
        self._schedule_fix()
        self._want_odds()
        doc.on_session_destroyed(self._closed)

    def _closed(self, _context: Any) -> None:
        """The tab is gone: drop the fix or run it waits for, free its worker thread."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.odds_pool.shutdown(wait=False, cancel_futures=True)

    # -- layout -----------------------------------------------------------------------------
    def _build(self) -> None:
        from bokeh.layouts import column, row
        from bokeh.models import Button, CheckboxGroup, CustomJS, Div, RadioButtonGroup

        s = self.session
        self.title = Div(name="title", sizing_mode="stretch_width")
        self.verdict = Div(name="verdict", width=120)
        self.odds = Div(name="odds", width=300, text="<i>P(pass): running the seeds...</i>")
        self.cost = Div(name="cost", width=260)
        self.error = message_div("error")
        self.status = Div(name="status", text="", visible=False)
        self.slos = Div(name="slos", sizing_mode="stretch_width")
        self.warnings = Div(
            name="warnings",
            sizing_mode="stretch_width",
            visible=False,
            styles={"color": "#9a6700", "overflow-wrap": "anywhere"},
        )
        self.why = Div(name="why", sizing_mode="stretch_width")
        self.budget = Div(name="budget", sizing_mode="stretch_width")
        self.fix = Div(name="fix", sizing_mode="stretch_width")
        self.files = DesignFiles(self.doc, self._opened)
        self.engine = RadioButtonGroup(
            labels=["flow (live)", "request"], active=0, name="engine", css_classes=["gym-engine"]
        )
        self.engine.on_change("active", lambda attr, old, new: self._engine_changed())
        self.run_button = Button(
            label="Run the request engine", name="run", disabled=True, css_classes=["gym-run"]
        )
        self.run_button.on_click(self._run_request)
        self.runs = RunControls(s, self.scenarios.labels, self._scenario_chosen, self._seed_chosen)
        self.adder = NodeAdder(self._add_node)
        self.adder.show(s)
        self.sections = CheckboxGroup(name="sections", css_classes=["gym-sections"])
        self.sections_title = Div(text="<b>Optional sections</b>")
        self.syncing = False
        self._sync_sections()
        self.sections.on_change("active", self._sections_changed)
        self.fields = Fields(s, self._change)
        controls = column(
            self.files.upload,
            self.files.download,
            self.runs.box,
            row(self.engine, self.run_button),
            self.status,
            self.error,
            self.sections_title,
            self.sections,
            self.adder.box,
            self.fields.box,
            width=LEFT_PX,
            name="controls",
            styles=_PANEL,
        )
        view = self.session.run()
        self.view = view
        self.figures = Figures(view)
        cards = row(self.verdict, self.odds, self.cost, self.slos, sizing_mode="stretch_width")
        results = column(
            self.warnings,
            *self.figures.plots,
            self.why,
            self.budget,
            self.fix,
            sizing_mode="stretch_width",
            name="results",
        )
        top = column(self.title, cards, sizing_mode="stretch_width", styles=_PANEL)
        body = row(controls, results, sizing_mode="stretch_width")
        self.doc.add_root(column(top, body, name="page", sizing_mode="stretch_width"))
        self.doc.title = f"gym playground: {s.design.name}"
        # The server's HTML shows the run before the script draws the page; gone once the
        # page is drawn (and the address is the page's share link from then on).
        self.doc.template = _TEMPLATE
        self.doc.template_variables["first_paint"] = first_paint_html(view.result)
        self.doc.js_on_event(
            "document_ready",
            CustomJS(code=_DRAWN_JS),
            self.runs.address_js,
        )

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
        problems: list[Problem] = []
        for path, value in pending.items():
            try:
                self.session.set(path, value)
                problems = []
            except GymError as err:
                problems = err.problems
        self._problems(problems)
        if self.session.design is not before:
            if self.fields.paths() != [f.path for f in self.session.fields()]:
                # a section ticked while a field was bad came in with this value
                self._sync_sections()
                self.fields.fill()
            self.fields.follow_all()
            self.version += 1
        return self.session.design is not before

    def update(self) -> None:
        """Run the design (flow engine) and show it; its odds over many seeds follow."""
        self.generation += 1
        self.fix.text = ""
        self._want_odds()
        if self.engine.active == 1:
            self._show_yaml()
            say(self.status, "The design changed: <i>Run the request engine</i> to see it.")
            return
        try:
            view = self.session.run()
        except GymError as err:
            self._problems(err.problems)
            return
        except Exception as exc:  # the page stays up; the message says what broke
            say(self.error, esc(f"internal error: {type(exc).__name__}: {exc}"))
            log.exception("the playground's run failed")
            return
        self._show(view)
        self._schedule_fix()

    def _show(self, view: View) -> None:
        s = self.session
        self.view = view
        # The design's text first: the browser gets the changes in this order, so by the
        # time it shows the new figures a download already saves the new design (after
        # them, a click as the cost changed could save the design before the change).
        self._show_yaml()
        self.doc.title = f"gym playground: {s.design.name}"
        if list(view.saturation) != self.figures.sat_components:
            self.figures.draw_saturation(view)
        self.title.text = title_html(s)
        self.verdict.text = verdict_html(view.verdict)
        self.cost.text = cost_html(s, view)
        self.fields.show_units(view.units)
        self.slos.text = slo_cards_html(view.result)
        say(self.warnings, warnings_html(view.warnings))
        self.runs.show(s)
        self.why.text = (
            "<h3>Why it fails</h3>" + view.explanations_html if view.verdict != "PASS" else ""
        ) + ("<h3>Traps the design takes</h3>" + view.traps_html if view.traps_html else "")
        self.budget.text = "<h3>Error budget</h3>" + view.budget_html
        self.figures.show(view)

    def _show_yaml(self) -> None:
        self.files.show(self.session)

    # -- the fix ----------------------------------------------------------------------------
    def _schedule_fix(self) -> None:
        if self.fix_timer is not None:
            with contextlib.suppress(ValueError):  # it ran already
                self.doc.remove_timeout_callback(self.fix_timer)
        self.fix_timer = None
        if self.view is None:
            return
        head = "Headroom" if self.view.verdict == "PASS" else "Suggested fix"
        self.fix.text = f"<h3>{head}</h3><p><i>searching once the fields are still...</i></p>"
        self.fix_timer = self.doc.add_timeout_callback(self._search_fix, FIX_AFTER_MS)

    def _search_fix(self) -> None:
        self.fix_timer = None
        if self.view is None:
            return
        generation, result = self.generation, self.view.result
        session = self.session

        def work() -> None:
            try:
                if result.passed:  # how far from failing: the margins
                    text = "<h3>Headroom</h3>" + headroom_section(session.headroom(result))
                else:
                    text = "<h3>Suggested fix</h3>" + fix_html(session.fix(result))
            except Exception as exc:  # shown on the page, not raised
                text = f"<p>internal error: {esc(type(exc).__name__)}: {esc(str(exc))}</p>"
            self._later(partial(self._fix_found, generation, text))

        self.pool.submit(work)

    def _fix_found(self, generation: int, text: str) -> None:
        if generation == self.generation:
            self.fix.text = text

    # -- the pass probability over many seeds ------------------------------------------------
    def _want_odds(self) -> None:
        """Ask for the current design's odds (none if they are shown or on their way), and
        mark the odds shown as an earlier design's."""
        if self.version in (self.odds_version, self.odds_for if self.odds_running else None):
            return
        if self.odds_version >= 0 and not self.odds_wanted:
            self.odds.text = stale_odds_html(self.odds.text)
        self.odds_wanted = True
        if not self.odds_running:
            self._start_odds()

    def _start_odds(self) -> None:
        self.odds_wanted = False
        self.odds_running = True
        version, session = self.version, self.session
        self.odds_for = version
        design, seed = session.design, session.seed

        def work() -> None:
            try:
                text = odds_html(Session(design, session.scenario, "", seed).odds(), seed)
            except Exception as exc:  # shown on the page, not raised
                text = f"<small>P(pass): internal error: {esc(type(exc).__name__)}</small>"
                log.exception("the playground's odds failed")
            self._later(partial(self._odds_done, version, text))

        with contextlib.suppress(RuntimeError):  # the tab was closed meanwhile
            self.odds_pool.submit(work)

    def _odds_done(self, version: int, text: str) -> None:
        self.odds_running = False
        if version == self.version:
            self.odds.text = text
            self.odds_version = version
        else:  # the design changed meanwhile: the newest one's
            self._start_odds()

    # -- the request engine -----------------------------------------------------------------
    def _engine_changed(self) -> None:
        request = self.engine.active == 1
        self.run_button.disabled = not request or self.busy
        if not request:
            say(self.status, "")
            self.update()
        else:
            say(
                self.status,
                "Press <i>Run the request engine</i> "
                f"(every {self.session.design.unit.one}, one event at a time).",
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
        say(self.status, "request engine: starting...")

        def progress(now: float) -> None:
            self._later(partial(self._progress, now, duration))

        def work() -> None:
            try:
                view: View | list[Problem] = session.run("request", progress=progress)
            except GymError as err:
                view = err.problems
            except Exception as exc:  # shown on the page
                view = [Problem(None, None, f"internal error: {type(exc).__name__}: {exc}")]
            self._later(partial(self._request_done, version, view))

        self.pool.submit(work)

    def _progress(self, now: float, duration: float) -> None:
        if self.busy and self.engine.active == 1:
            say(self.status, progress_html(now, duration))

    def _request_done(self, version: int, view: View | list[Problem]) -> None:
        self.busy = False
        self.run_button.disabled = self.engine.active != 1
        if isinstance(view, list):
            say(self.status, "")
            self._problems(view)
            return
        if self.engine.active != 1:
            return  # back on the flow engine meanwhile: its figures stay
        if version != self.version:
            say(self.status, "request engine: done, but the design changed since; run again.")
            return
        say(self.status, "request engine: done.")
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
                self._problems(err.problems)
                return
        self._problems([])
        self.version += 1
        self.fields.fill()
        self.update()

    def _problems(self, problems: Sequence[Problem], opened: bool = False) -> None:
        """Show ``problems``: each beside the field it is about (without the file's name:
        the user edits the page, not the file), the rest where the page shows errors, as
        the command line words them. ``opened``: they are a file's the user opened, named
        by it."""
        own = None if opened else self.session.design_file
        rest = self.fields.show_problems([p for p in problems if p.file in (own, None)])
        rest += [p for p in problems if p.file not in (own, None)]
        lines = messages([_unfiled(p, own) for p in rest])
        say(self.error, "<br>".join(esc(line) for line in lines))

    # -- the scenario, the seed, a new node ----------------------------------------------------
    def _scenario_chosen(self, label: str) -> None:
        if label == self.session.scenario_file:
            return
        self._take_pending()
        try:
            self.session.use_scenario(self.scenarios.get(label), label)
        except GymError as err:
            say(self.runs.message, "<br>".join(esc(line) for line in messages(err.problems)))
            self.runs.scenario.value = self.session.scenario_file  # back to the one it runs
            return
        self._rerun()

    def _seed_chosen(self, seed: Any) -> None:
        before = self.session.seed
        try:
            self.session.use_seed(seed)
        except GymError as err:
            say(self.runs.message, esc(" ".join(p.message for p in err.problems)))
            return
        say(self.runs.message, "")  # a bad seed's message goes, even back to the same seed
        if self.session.seed != before:
            self._take_pending()
            self._rerun()

    def _add_node(self, kind: str, name: str, edge: int) -> None:
        self._take_pending()
        try:
            self.session.add_node(kind, name, edge)
        except GymError as err:
            # the model's own words, each once, without the file the user is not editing
            said = dict.fromkeys(" ".join(p.message.split()) for p in err.problems)
            self.adder.problem("; ".join(said))
            return
        self.adder.problem("")
        self.adder.show(self.session)
        self.fields.fill()
        self._rerun()

    def _rerun(self) -> None:
        """The run's context changed (scenario, seed, the graph): run and show anew."""
        say(self.runs.message, "")
        self.version += 1
        self.update()

    # -- opening a file ---------------------------------------------------------------------
    def _opened(self) -> None:
        sent = self.files.read()
        if sent is None:
            return  # the box was cleared (after the last file was read)
        name, raw = sent
        if raw is None:
            say(self.error, esc(f"error: {name}: not a file the page could read"))
            return
        try:
            self.session.open(raw, name)  # the size limit, UTF-8, YAML: as gym run reads
        except GymError as err:
            self._problems(err.problems, opened=True)
            return
        self._problems([])
        self.pending = {}
        self.version += 1
        # Cleared, so that opening the same file again (to go back to it) reads it again.
        self.files.upload.clear()
        self._sync_sections()
        self.adder.show(self.session)
        self.fields.fill()
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


def _unfiled(p: Problem, own: str | None) -> Problem:
    """``p`` without the name of the file the user edits on the page (``own``)."""
    return Problem(None if p.file == own else p.file, p.field, p.message)
