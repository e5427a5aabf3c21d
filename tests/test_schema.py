"""Editor support and field docs: generated from the models, committed, kept current."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from gym.cli import app
from gym.inputs import schema
from tests.conftest import ROOT

SHIPPED = sorted((ROOT / "designs").rglob("*.yaml")) + sorted((ROOT / "scenarios").rglob("*.yaml"))


@pytest.mark.parametrize("kind", ["design", "scenario"])
def test_committed_schema_and_docs_are_current(kind: str) -> None:
    """schemas/ and docs/ hold exactly what `gym schema --docs docs` writes today."""
    assert (ROOT / "schemas" / f"{kind}.schema.json").read_text() == schema.schema_text(kind)
    assert (ROOT / "docs" / f"{kind}-file.md").read_text() == schema.docs_text(kind)


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_files_name_and_pass_their_schema(path: Path) -> None:
    """Every shipped file points editors at its schema and validates against it."""
    top = path.relative_to(ROOT).parts[0]
    kind = "design" if top == "designs" else "scenario"
    up = "../" * (len(path.relative_to(ROOT).parts) - 1)
    first = path.read_text().splitlines()[0]
    assert first == f"# yaml-language-server: $schema={up}schemas/{kind}.schema.json"
    jsonschema.validate(yaml.safe_load(path.read_text()), schema.json_schema(kind))


def test_schema_documents_every_field() -> None:
    """Every field in the docs has a description (the models require one)."""
    for kind in ("design", "scenario"):
        for model in (schema.KINDS[kind], *schema.ALTERNATIVES.get(kind, ())):
            for row in schema.field_rows(model):
                assert row[5], f"{kind}: {row[0]} has no description"


def test_schema_command_refuses_foreign_files(tmp_path: Path) -> None:
    """gym schema rewrites its own files, but not a file it did not write."""
    from typer.testing import CliRunner

    runner = CliRunner()
    assert runner.invoke(app, ["schema", "-o", str(tmp_path)]).exit_code == 0
    assert runner.invoke(app, ["schema", "-o", str(tmp_path)]).exit_code == 0
    (tmp_path / "design.schema.json").write_text("{}")
    res = runner.invoke(app, ["schema", "-o", str(tmp_path)])
    assert res.exit_code == 2 and "--force" in res.stderr
    assert (tmp_path / "design.schema.json").read_text() == "{}"
