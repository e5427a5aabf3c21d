"""Bad input: exit status 2, a one-line message naming the file and the field, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import gym
from gym.cli import app
from tests.conftest import CHAOS, REFERENCE

runner = CliRunner()

GOOD_DESIGN = REFERENCE.read_text()
GOOD_SCENARIO = CHAOS.read_text()

CORPUS = Path(__file__).parent / "corpus" / "bad"


def _corpus() -> list[tuple[str, Path, str | None, str]]:
    """Every bad file: its kind (file name prefix), the field and the words its one-line
    message must contain (from its first two comment lines)."""
    cases = []
    for path in sorted(CORPUS.glob("*.yaml")):
        lines = path.read_bytes().split(b"\n", 2)
        field = lines[0].decode().split(":", 1)[1].strip()
        words = lines[1].decode().split(":", 1)[1].strip()
        cases.append((path.name.split("-", 1)[0], path, None if field == "-" else field, words))
    return cases


CORPUS_CASES = _corpus()


def test_the_corpus_is_large() -> None:
    """At least 30 bad files, of both kinds."""
    kinds = [c[0] for c in CORPUS_CASES]
    assert len(CORPUS_CASES) >= 30 and {"design", "scenario"} <= set(kinds)


def _check(code: int, out: str, err: str, file: Path, field: str | None, words: str) -> None:
    assert code == 2, out + err
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines, "no message on stderr"
    line = next((ln for ln in lines if field is None or f": {field}:" in ln), lines[0])
    assert str(file) in line, lines
    if field is not None:
        assert f": {field}:" in line, lines
    assert words in line, lines


@pytest.mark.parametrize(
    ("kind", "path", "field", "words"), CORPUS_CASES, ids=[c[1].stem for c in CORPUS_CASES]
)
def test_bad_file(kind: str, path: Path, field: str | None, words: str) -> None:
    """Each bad design or scenario file: exit 2, one line naming the file and the field,
    no traceback."""
    if kind == "design":
        args = ["run", str(path), "--scenario", str(CHAOS)]
    else:
        args = ["run", str(REFERENCE), "--scenario", str(path)]
    result = runner.invoke(app, args)
    _check(result.exit_code, result.stdout, result.stderr, path, field, words)


@pytest.mark.parametrize("text", ["", "# only a comment\n", "\n\n"])
def test_empty_files(tmp_path: Path, text: str) -> None:
    """An empty design: exit 2, 'empty', and what a design needs."""
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["run", str(path)])
    _check(result.exit_code, result.stdout, result.stderr, path, None, "empty")


def test_missing_file(tmp_path: Path) -> None:
    """A design that does not exist: exit 2, 'file not found', the path named."""
    path = tmp_path / "nope.yaml"
    result = runner.invoke(app, ["run", str(path)])
    _check(result.exit_code, result.stdout, result.stderr, path, None, "file not found")


def test_one_problem_one_line(tmp_path: Path) -> None:
    """A single bad field gives exactly one line of error."""
    path = tmp_path / "d.yaml"
    path.write_text(GOOD_DESIGN.replace("buffer: 80000", "buffer: -1"))
    result = runner.invoke(app, ["validate", str(path), "--scenario", str(CHAOS)])
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0, result.stderr


def test_api_raises_gym_error_with_the_field(tmp_path: Path) -> None:
    """The Python API raises GymError carrying file and field, for notebooks and tools."""
    path = tmp_path / "d.yaml"
    path.write_text(GOOD_DESIGN.replace("rps_per_replica: 4000", "rps_per_replica: 5000"))
    with pytest.raises(gym.GymError) as info:
        gym.simulate(path, CHAOS)
    (problem,) = info.value.problems
    assert (problem.file, problem.field) == (str(path), "fetchers.rps_per_replica")


def test_user_files_are_not_modified(tmp_path: Path) -> None:
    """Running and validating never writes to the input files."""
    path = tmp_path / "d.yaml"
    path.write_text(GOOD_DESIGN)
    before = path.read_bytes()
    runner.invoke(app, ["run", str(path), "--scenario", str(CHAOS)])
    runner.invoke(app, ["validate", str(path), "--scenario", str(CHAOS)])
    assert path.read_bytes() == before
