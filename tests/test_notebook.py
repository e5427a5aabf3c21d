"""The utilization notebook runs top to bottom and is committed without stale outputs."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT

NOTEBOOK = ROOT / "notebooks" / "utilization.ipynb"


def test_notebook_is_committed_without_outputs() -> None:
    """Outputs are made by running it, never kept in the repository."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None


def test_notebook_runs_top_to_bottom() -> None:
    """Every cell executes without error (nbclient, a fresh kernel, 120 s per cell)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()
    images = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "image/png" in o.get("data", {})
    ]
    assert len(images) >= 2  # the utilization plots and the failure breakdown
