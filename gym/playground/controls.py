"""The playground's controls beside the fields: the scenario and the seed the design runs
under, the share link (kept in the browser's address bar too), and the box that adds a
node to a graph design. Each calls the page back with what the user chose; the page
applies it to its session."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gym.playground.state import new_node_name, node_kinds
from gym.playground.texts import esc

if TYPE_CHECKING:
    from gym.playground.state import Session

#: Keeps the browser's address the page's share link (no reload: the page goes on).
_ADDRESS_JS = """
const q = src.data.query[0];
if (q && window.location.search !== '?' + q) {
  window.history.replaceState(null, '', window.location.pathname + '?' + q);
}
"""
#: Copies the share link, and says so (or shows it to copy by hand where the browser
#: keeps the clipboard from the page: a page not served over https or from localhost).
_COPY_JS = """
const url = window.location.origin + window.location.pathname + '?' + src.data.query[0];
const show = () => {
  const safe = url.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  note.text = '<small>Copy this link: <code>' + safe + '</code></small>';
};
if (navigator.clipboard && window.isSecureContext) {
  navigator.clipboard.writeText(url).then(
    () => { note.text = '<small>Link copied.</small>'; }, show);
} else {
  show();
}
"""


class RunControls:
    """The scenario menu, the seed box and the share link."""

    def __init__(
        self,
        session: Session,
        scenarios: list[str],
        scenario_chosen: Callable[[str], None],
        seed_chosen: Callable[[Any], None],
    ) -> None:
        from bokeh.layouts import column, row
        from bokeh.models import Button, ColumnDataSource, CustomJS, Div, Select, TextInput

        self.scenario = Select(
            title="scenario",
            value=session.scenario_file,
            options=scenarios,
            name="scenario",
            css_classes=["gym-scenario"],
            sizing_mode="stretch_width",
        )
        self.scenario.on_change("value", lambda _a, _o, new: scenario_chosen(new))
        # Text, not a number box: a browser's numbers hold 53 bits, seeds 63.
        self.seed = TextInput(
            title="seed", value=str(session.seed), name="seed", css_classes=["gym-seed"], width=170
        )
        self.seed.on_change("value", lambda _a, _o, new: seed_chosen(new))
        self.message = message_div("run-message")
        #: The page's share query, kept in step with the browser's address.
        self.link = ColumnDataSource(data={"query": [session.link()]}, name="share")
        address = CustomJS(args={"src": self.link}, code=_ADDRESS_JS)
        self.link.js_on_change("data", address)
        self.note = Div(name="share-note", text="", styles=WRAP)
        self.copy = Button(label="Copy share link", name="copy-link", css_classes=["gym-share"])
        self.copy.js_on_click(CustomJS(args={"src": self.link, "note": self.note}, code=_COPY_JS))
        self.box = column(
            row(self.scenario, self.seed, sizing_mode="stretch_width"),
            self.message,
            row(self.copy, self.note),
            sizing_mode="stretch_width",
            name="run-controls",
        )
        self.address_js = address

    def show(self, session: Session) -> None:
        """The controls as the session has them now (and the link to it)."""
        if self.scenario.value != session.scenario_file:
            self.scenario.value = session.scenario_file
        if self.seed.value != str(session.seed):
            self.seed.value = str(session.seed)
        query = session.link()
        if self.link.data["query"][0] != query:
            self.link.data = {"query": [query]}
            self.note.text = ""


class NodeAdder:
    """Adds a node to a graph design, on one of its edges (hidden for the crawler)."""

    def __init__(self, add: Callable[[str, str, int], None]) -> None:
        from bokeh.layouts import column, row
        from bokeh.models import Button, Div, Select, TextInput

        self.add = add
        self.title = Div(text="<b>Add a node</b>")
        self.kind = Select(
            title="kind",
            options=list(node_kinds()),
            value=node_kinds()[0],
            name="node-kind",
            css_classes=["gym-node-kind"],
            width=130,
        )
        self.name = TextInput(title="name", name="node-name", css_classes=["gym-node-name"])
        self.edge = Select(title="on the edge", name="node-edge", css_classes=["gym-node-edge"])
        self.button = Button(label="Add the node", name="add-node", css_classes=["gym-add-node"])
        self.message = message_div("node-message")
        self.kind.on_change("value", lambda _a, old, new: self._kind_changed(old, new))
        self.button.on_click(self._clicked)
        self.taken: set[str] = set()
        self.box = column(
            self.title,
            row(self.kind, self.name),
            self.edge,
            self.button,
            self.message,
            name="add-node-box",
            sizing_mode="stretch_width",
            styles={"border": "1px solid #d0d7de", "border-radius": "6px", "padding": "6px"},
        )

    def show(self, session: Session) -> None:
        """The graph's edges to choose from, and a free name (hidden for a crawler)."""
        from gym.system.compiled import addons

        graph = session.data.get("graph") if addons(session.design) is None else None
        self.box.visible = graph is not None
        if graph is None:
            return
        self.taken = set(graph["nodes"])
        labels = [f"{i + 1}. {e['from']} \u2192 {e['to']}" for i, e in enumerate(graph["edges"])]
        self.edge.options = labels
        if self.edge.value not in labels:
            self.edge.value = labels[0] if labels else ""
        if not self.name.value or self.name.value in self.taken:
            self.name.value = new_node_name(self.kind.value, self.taken)

    def _kind_changed(self, old: str, new: str) -> None:
        """A name the page chose follows the kind; one the user typed stays."""
        if not self.name.value or self.name.value == new_node_name(old, self.taken):
            self.name.value = new_node_name(new, self.taken)

    def _clicked(self) -> None:
        options = list(self.edge.options)
        edge = options.index(self.edge.value) if self.edge.value in options else -1
        self.add(self.kind.value, self.name.value.strip(), edge)

    def problem(self, text: str) -> None:
        say(self.message, esc(text))


#: Long words (a link's text, a name) wrap inside the panel instead of widening the page.
WRAP = {"overflow-wrap": "anywhere", "word-break": "break-word"}


def message_div(name: str) -> Any:
    """A place for messages in the left panel: red, wrapped, hidden while empty (an empty
    one still took its height)."""
    from bokeh.models import Div

    style = {"color": "#b42318", **WRAP}
    return Div(name=name, styles=style, text="", visible=False, sizing_mode="stretch_width")


def say(div: Any, html: str) -> None:
    """Show ``html`` in ``div``, or hide it when there is nothing to say."""
    div.text = html
    div.visible = bool(html)
