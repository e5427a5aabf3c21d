"""Run the notebooks top to bottom and save them with their outputs (in place).

    python notebooks/regenerate.py [NOTEBOOK ...]

The committed notebooks carry the outputs this makes, so they read on any viewer without
a kernel; tests/test_notebook.py checks the committed outputs are the ones a fresh run
gives. Each notebook is written atomically (a temporary file, then a rename).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import nbclient
import nbformat

HERE = Path(__file__).resolve().parent


def execute(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path``, run in a fresh kernel from its own directory."""
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    for cell in nb.cells:  # timings change every run: keep the outputs only
        cell.metadata.pop("execution", None)
    return nb


def main(paths: list[Path]) -> None:
    for path in paths:
        nb = execute(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".ipynb.tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                nbformat.write(nb, f)
            os.chmod(tmp, path.stat().st_mode & 0o777)  # mkstemp makes it owner-only
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        print(f"wrote {path}")


if __name__ == "__main__":
    main([Path(p) for p in sys.argv[1:]] or sorted(HERE.glob("*.ipynb")))
