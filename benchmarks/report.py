"""What every benchmark writes beside its table: the rows, with the machine they ran on."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any


def write_results(path: str | Path, rounds: int, rows: list[dict[str, Any]]) -> None:
    """``rows`` as JSON in ``path``, with the Python version, the cores and the rounds."""
    data = {
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "rounds": rounds,
        "rows": rows,
    }
    Path(path).write_text(json.dumps(data, indent=2) + "\n")
