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

# (name, design text, the field the message must name, words it must contain)
BAD_DESIGNS = [
    ("malformed", "frontier: {drain_rps: 30000, buffer: 80000\n", None, "malformed YAML"),
    ("empty", "", None, "empty"),
    ("comments-only", "# nothing here\n", None, "empty"),
    ("top-level-list", "- frontier\n- fetchers\n", None, "mapping"),
    (
        "typo",
        GOOD_DESIGN.replace("replicas: 4", "repilcas: 4"),
        "fetchers.repilcas",
        "did you mean 'replicas'",
    ),
    (
        "negative-capacity",
        GOOD_DESIGN.replace("drain_rps: 30000", "drain_rps: -5"),
        "frontier.drain_rps",
        "greater than 0",
    ),
    (
        "zero-capacity",
        GOOD_DESIGN.replace("rps: 25000", "rps: 0"),
        "page_store.rps",
        "greater than 0",
    ),
    (
        "zero-replicas",
        GOOD_DESIGN.replace("replicas: 4", "replicas: 0"),
        "fetchers.replicas",
        "greater than 0",
    ),
    (
        "hit-ratio-above-1",
        GOOD_DESIGN.replace("hit_ratio: 0.92", "hit_ratio: 1.2"),
        "cache.hit_ratio",
        "less than or equal to 1",
    ),
    (
        "hit-ratio-1",
        GOOD_DESIGN.replace("hit_ratio: 0.92", "hit_ratio: 1.0"),
        "cache.hit_ratio",
        "cannot be reached",
    ),
    (
        "replica-above-catalog",
        GOOD_DESIGN.replace("rps_per_replica: 4000", "rps_per_replica: 5000"),
        "fetchers.rps_per_replica",
        "more than one replica",
    ),
    (
        "missing-section",
        GOOD_DESIGN.replace("cache:      {hit_ratio: 0.92}\n", ""),
        "cache",
        "required",
    ),
    (
        "string-number",
        GOOD_DESIGN.replace("replicas: 4", 'replicas: "4"'),
        "fetchers.replicas",
        "integer",
    ),
    (
        "fractional-replicas",
        GOOD_DESIGN.replace("replicas: 4", "replicas: 4.5"),
        "fetchers.replicas",
        "integer",
    ),
    (
        "nan",
        GOOD_DESIGN.replace("drain_rps: 30000", "drain_rps: .nan"),
        "frontier.drain_rps",
        "finite",
    ),
    ("infinity", GOOD_DESIGN.replace("rps: 25000", "rps: .inf"), "page_store.rps", "finite"),
    (
        "duplicate-key",
        GOOD_DESIGN + "frontier: {drain_rps: 1, buffer: 1}\n",
        None,
        "duplicate key 'frontier'",
    ),
    (
        "section-not-mapping",
        GOOD_DESIGN.replace("cache:      {hit_ratio: 0.92}", "cache: 0.92"),
        "cache",
        "mapping",
    ),
    (
        "bad-on-crash",
        GOOD_DESIGN.replace("rps_per_replica: 4000}", "rps_per_replica: 4000, on_crash: retry}"),
        "fetchers.on_crash",
        "'fail' or 'requeue'",
    ),
]

BAD_SCENARIOS = [
    (
        "fault-after-end",
        GOOD_SCENARIO.replace("at_s: 28", "at_s: 45"),
        "faults[2].at_s",
        "after the end",
    ),
    (
        "stage-after-end",
        GOOD_SCENARIO.replace("at_s: 18", "at_s: 41"),
        "load[3].at_s",
        "after the end",
    ),
    (
        "stages-out-of-order",
        GOOD_SCENARIO.replace("at_s: 10", "at_s: 3"),
        "load[2].at_s",
        "come after",
    ),
    (
        "first-stage-not-0",
        GOOD_SCENARIO.replace("{at_s: 0,  multiplier: 1.0}", "{at_s: 1,  multiplier: 1.0}"),
        "load[0].at_s",
        "start at 0",
    ),
    (
        "unknown-fault-kind",
        GOOD_SCENARIO.replace("kind: crash", "kind: explode"),
        "faults[0].kind",
        "not a fault kind",
    ),
    (
        "fault-typo",
        GOOD_SCENARIO.replace("factor: 3", "facter: 3"),
        "faults[2].facter",
        "did you mean 'factor'",
    ),
    (
        "stall-unknown-target",
        GOOD_SCENARIO.replace("target: page_store", "target: moon"),
        "faults[1].target",
        "moon",
    ),
    (
        "negative-duration",
        GOOD_SCENARIO.replace("duration_s: 40", "duration_s: -1"),
        "duration_s",
        "greater than 0",
    ),
    (
        "availability-above-1",
        GOOD_SCENARIO.replace("min: 0.97", "min: 1.5"),
        "slos.availability.min",
        "less than or equal to 1",
    ),
    (
        "unknown-slo",
        GOOD_SCENARIO.replace("cost_units:", "latency:"),
        "slos.latency",
        "unknown key",
    ),
    ("empty", "", None, "empty"),
]


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


CASES = [("design", *case) for case in BAD_DESIGNS] + [
    ("scenario", *case) for case in BAD_SCENARIOS
]


@pytest.mark.parametrize(
    ("kind", "name", "text", "field", "words"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_bad_file(
    tmp_path: Path, kind: str, name: str, text: str, field: str | None, words: str
) -> None:
    """Each bad design or scenario file: exit 2, one line naming the file and the field."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    if kind == "design":
        args = ["run", str(path), "--scenario", str(CHAOS)]
    else:
        args = ["run", str(REFERENCE), "--scenario", str(path)]
    result = runner.invoke(app, args)
    _check(result.exit_code, result.stdout, result.stderr, path, field, words)


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
