"""The utilization notebook is committed with its outputs, and they are the ones a fresh
run gives (`python notebooks/regenerate.py` makes them)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ROOT

NOTEBOOK = ROOT / "notebooks" / "utilization.ipynb"


def _outputs(nb: Any) -> list[tuple[str, str, int]]:
    """Per code cell: its printed text, its text results and how many images it shows."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        plain = "".join(
            o.get("data", {}).get("text/plain", "")
            for o in cell.outputs
            if o.output_type == "execute_result"
        )
        images = sum(1 for o in cell.outputs if "image/png" in o.get("data", {}))
        out.append((text, plain, images))
    return out


def test_notebook_is_committed_with_its_outputs() -> None:
    """It reads on any viewer without a kernel: every code cell has run, the plots are
    there (the utilization of both designs, the failure breakdown) and so is the
    starter's suggested fix."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs and c.execution_count is not None for c in code)
    outputs = _outputs(nb)
    assert sum(images for _, _, images in outputs) >= 2
    assert "fetchers.replicas 3 -> 4" in outputs[-1][0]
    assert all("execution" not in c.metadata for c in code)  # no timings to churn


def test_notebook_outputs_are_what_a_fresh_run_gives() -> None:
    """Run top to bottom in a fresh kernel (what regenerate.py does): every cell runs,
    and the text and the number of plots are the committed ones (same seed, same
    numbers; a stale notebook fails here)."""
    pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    import importlib.util

    spec = importlib.util.spec_from_file_location("regenerate", NOTEBOOK.parent / "regenerate.py")
    assert spec is not None and spec.loader is not None
    regenerate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(regenerate)
    fresh = regenerate.execute(NOTEBOOK)
    committed = nbformat.read(NOTEBOOK, as_version=4)
    assert _outputs(fresh) == _outputs(committed)
