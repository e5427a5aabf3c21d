"""The playground's design files: *Download design (YAML)* saves the design being edited
as a file ``gym run`` loads; *Open a design file* reads one from the browser."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gym.playground.texts import yaml_name

if TYPE_CHECKING:
    from bokeh.document import Document

    from gym.playground.state import Session

#: Saves the design's text, kept in ``yaml_source``, as a file in the browser.
_DOWNLOAD_JS = """
const blob = new Blob([src.data.text[0]], {type: 'application/x-yaml'});
const a = document.createElement('a');
a.href = URL.createObjectURL(blob);
a.download = src.data.file[0];
document.body.appendChild(a); a.click(); a.remove();
"""


class DesignFiles:
    """The page's download button and file box; ``opened`` is called (on the page's turn)
    once a file the user chose has arrived."""

    def __init__(self, doc: Document, opened: Callable[[], None]) -> None:
        from bokeh.models import Button, ColumnDataSource, CustomJS, FileInput

        self.doc = doc
        self.opened = opened
        self.yaml_source = ColumnDataSource(data={"text": [""], "file": [""]}, name="yaml_source")
        self.download = Button(
            label="Download design (YAML)", name="download", css_classes=["gym-download"]
        )
        self.download.js_on_click(CustomJS(args={"src": self.yaml_source}, code=_DOWNLOAD_JS))
        self.upload = FileInput(
            accept=".yaml,.yml", name="open", title="Open a design file", css_classes=["gym-open"]
        )
        # The browser sends a file's contents and its name as two changes: read both
        # once the two have arrived (a file of the same name sends only the first).
        self.upload.on_change("value", self._changed)
        self.upload.on_change("filename", self._changed)
        self.queued = False

    def _changed(self, attr: str, old: Any, new: Any) -> None:
        if not self.queued:
            self.queued = True
            self.doc.add_next_tick_callback(self.opened)

    def read(self) -> tuple[str, bytes | None] | None:
        """The file the browser sent: its name and its bytes (None if they are not a file's
        encoding); None when the box was cleared (after the last file was read)."""
        self.queued = False
        name = _unset_or(self.upload, "filename", "") or "uploaded.yaml"
        if isinstance(name, list):
            name = name[0] if name else "uploaded.yaml"
        name = Path(str(name)).name
        value = _unset_or(self.upload, "value", "")
        value = value[0] if isinstance(value, list) and value else value
        if not value:
            return None
        try:
            return name, base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return name, None

    def show(self, session: Session) -> None:
        """Offer the design as it is now for download."""
        name = yaml_name(session.design.name)
        self.yaml_source.data = {"text": [session.yaml()], "file": [name]}


def _unset_or(model: Any, attr: str, default: Any) -> Any:
    """A Bokeh property's value, or ``default`` while the browser has not set it."""
    from bokeh.core.property.descriptors import UnsetValueError

    try:
        return getattr(model, attr)
    except UnsetValueError:
        return default
