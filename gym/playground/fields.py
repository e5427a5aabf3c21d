"""The playground's fields: a number box and a slider for every scalar field of the
design, a menu for every choice, grouped under each part with its units."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from gym.playground.texts import esc, shown

if TYPE_CHECKING:
    from gym.core.errors import Problem
    from gym.playground.state import FieldSpec, Session

#: A part's fields are framed together, as one card of the panel.
_CARD = {
    "background": "white",
    "border": "1px solid #d0d7de",
    "border-radius": "6px",
    "padding": "4px 8px",
    "margin-bottom": "6px",
}
#: How a field's message looks: beside it, in the error colour.
_MESSAGE = {
    "color": "#b42318",
    "font-size": "12px",
    "margin-top": "-4px",
    "overflow-wrap": "anywhere",
}


class Fields:
    """One page's field widgets (``widgets``, by ``input:``/``slider:`` path, the menus by
    path, the parts' headers by ``part:``), in the column ``box``. What the user sets goes
    to ``change(path, value)``; the page folds and applies it."""

    def __init__(self, session: Session, change: Callable[[str, Any], None]) -> None:
        from bokeh.layouts import column

        self.session = session
        self.change = change
        self.widgets: dict[str, Any] = {}
        self.box = column(name="fields", sizing_mode="stretch_width")
        self.fill()

    def fill(self) -> None:
        """One widget (or a slider and a box) per field the design has now."""
        from bokeh.layouts import column, row
        from bokeh.models import Div, NumericInput, Select, Slider

        s = self.session
        parts: list[list[Any]] = []
        self.widgets = {}
        part = None
        for spec in s.fields():
            value = s.value(spec.path)
            if spec.part != part:
                part = spec.part
                header = Div(text=f"<b>{esc(part)}</b>", name=f"part:{part}")
                self.widgets[f"part:{part}"] = header
                parts.append([header])
            children = parts[-1]
            graph = spec.path.startswith("graph.nodes.")
            label = spec.path.removeprefix(f"graph.nodes.{part}." if graph else f"{part}.")
            tip = esc(spec.description)
            message = Div(
                name=f"msg:{spec.path}",
                css_classes=[css("msg", spec.path)],
                styles=_MESSAGE,
                visible=False,
            )
            self.widgets[f"msg:{spec.path}"] = message
            if spec.kind == "choice":
                options = [shown(o) for o in spec.options]
                select = Select(
                    title=label,
                    value=shown(value),
                    options=options,
                    name=f"field:{spec.path}",
                    css_classes=[css("select", spec.path)],
                    description=tip or None,
                )
                select.on_change("value", partial(self._choice_changed, spec))
                self.widgets[spec.path] = select
                children += [select, message]
                continue
            box = NumericInput(
                title=f"{label}{f' ({spec.unit})' if spec.unit else ''}",
                value=value,
                mode="int" if spec.kind == "int" else "float",
                name=f"input:{spec.path}",
                css_classes=[css("input", spec.path)],
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
                    css_classes=[css("slider", spec.path)],
                    width=220,
                    show_value=False,
                )
                slider.on_change("value", partial(self._slid, spec))
                widgets.append(slider)
                self.widgets[f"slider:{spec.path}"] = slider
            self.widgets[f"input:{spec.path}"] = box
            children += [row(*widgets, box), message]
        self.box.children = [
            column(*group, sizing_mode="stretch_width", styles=_CARD, name=f"card:{group[0].name}")
            for group in parts
        ]

    def _slid(self, spec: FieldSpec, attr: str, old: Any, new: Any) -> None:
        if not isinstance(new, int | float) or not math.isfinite(new):
            return  # a slider holds numbers; anything else did not come from one
        value = round(new) if spec.kind == "int" else float(new)
        box = self.widgets.get(f"input:{spec.path}")
        if box is not None and box.value != value:
            box.value = value  # its own callback sees the same value: no second change
        self.change(spec.path, value)

    def _typed(self, spec: FieldSpec, attr: str, old: Any, new: Any) -> None:
        self.change(spec.path, new)  # the slider follows once the value holds

    def follow(self, path: str) -> None:
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
            if shown(option) == new:
                value = option
        self.change(spec.path, value)

    def follow_all(self) -> None:
        """Bring every slider to its field's value (after the design took a change)."""
        for path in self.widgets:
            if path.startswith("slider:"):
                self.follow(path.removeprefix("slider:"))

    def paths(self) -> list[str]:
        """The fields the widgets are of, in order (the design's, when they were filled)."""
        return [k.removeprefix("msg:") for k in self.widgets if k.startswith("msg:")]

    def show_problems(self, problems: list[Problem]) -> list[Problem]:
        """Each problem about a field shown beside it (what it says, and the value the
        page runs meanwhile); the others returned, for the page's own place. A field
        without a problem shows none."""
        rest: list[Problem] = []
        said: dict[str, list[str]] = {}
        for p in problems:
            if p.field is not None and f"msg:{p.field}" in self.widgets:
                said.setdefault(p.field, []).append(" ".join(p.message.split()))
            else:
                rest.append(p)
        for key, div in self.widgets.items():
            if not key.startswith("msg:"):
                continue
            path = key.removeprefix("msg:")
            lines = said.get(path)
            div.visible = bool(lines)
            if lines:
                value = self.session.held(path)
                held = "its default" if value is None else shown(value)
                div.text = (
                    "<br>".join(esc(line) for line in lines)
                    + f"<br><small>the page runs {esc(held)} meanwhile</small>"
                )
            else:
                div.text = ""
        return rest

    def show_units(self, units: dict[str, int]) -> None:
        """Each part's header with the units it costs now."""
        for part, n in units.items():
            header = self.widgets.get(f"part:{part}")
            if header is not None:
                header.text = f"<b>{esc(part)}</b> &mdash; {n} unit{'s' * (n != 1)}"


def css(what: str, path: str) -> str:
    """A CSS class naming a field's widget (for tests and user styles)."""
    return f"gym-{what}-" + "".join(c if c.isalnum() else "-" for c in path)
