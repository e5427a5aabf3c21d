"""A result's JSON, as pandas and pydantic name the two: ``to_dict()`` gives the object,
``to_json()`` the text (what the command line's ``--json`` prints)."""

from __future__ import annotations

import json
from typing import Any


class JsonText:
    """Adds ``to_json`` to a class that has ``to_dict``."""

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - each class has its own
        raise NotImplementedError

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text, as ``--json`` prints it (no NaN: null)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)
