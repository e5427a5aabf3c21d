"""``--junit FILE`` on run, sweep and optimize, read back by a JUnit consumer
(``junitparser``, as CI pipelines read the files): a case per SLO, failures carrying the
measured value, the target and the explanation, and suites that fail exactly when the
command exits 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped, SystemOut, TestSuite
from typer.testing import CliRunner

import gym
from gym.cli import app
from tests.conftest import CHAOS, REFERENCE, STARTER

runner = CliRunner()
SLOS = ["throughput_rps", "availability", "peak_saturation", "cost_units"]


def _gym(*args: str | Path) -> int:
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output
    return res.exit_code


def _suites(path: Path) -> list[TestSuite]:
    xml = JUnitXml.fromfile(str(path))
    return list(xml) if isinstance(xml, JUnitXml) else [xml]


def _out(suite: TestSuite) -> str:
    """The suite's <system-out>."""
    return str(suite.child(SystemOut).text)


def _failures(suite: TestSuite) -> dict[str, Any]:
    """Each case's name: its first result (Failure, Error, Skipped) or None if it passed."""
    return {case.name: (case.result[0] if case.result else None) for case in suite}


def test_one_run_of_the_starter(tmp_path: Path) -> None:
    """The starter fails throughput, availability and peak saturation: three failures
    whose messages hold the measured value and the target as ``gym run`` scores them,
    and whose text is the explanation ``gym run`` prints; cost passes; the suggested fix
    is the suite's output."""
    path = tmp_path / "starter.xml"
    assert _gym("run", STARTER, "--junit", path) == 1
    (suite,) = _suites(path)
    result = gym.simulate(STARTER, CHAOS)
    failures = _failures(suite)
    assert list(failures) == SLOS
    for check in result.checks:
        got = failures[check.name]
        if check.passed:
            assert got is None
            continue
        assert isinstance(got, Failure)
        assert f"target {check.op} {check.target:g}" in got.message
        why = [e for e in result.explanations if e.slo == check.name]
        assert why and why[0].text in got.text
    assert suite.tests == 4 and suite.failures == 3
    assert "--set" in _out(suite)
    properties = {p.name: p.value for p in suite.properties()}
    assert properties["verdict"] == "fail" and properties["seed"] == "0"


def test_a_passing_run_has_no_failure_and_the_file_is_reproducible(tmp_path: Path) -> None:
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    assert _gym("run", REFERENCE, "--junit", a) == 0
    assert _gym("run", REFERENCE, "--junit", b) == 0
    (suite,) = _suites(a)
    assert suite.tests == 4 and suite.failures == 0 and suite.errors == 0
    assert a.read_bytes() == b.read_bytes()  # no time or timestamp in it


def test_many_runs(tmp_path: Path) -> None:
    """With --runs, a case per SLO under the --runs rule and the verdict as ``every
    SLO``: the starter fails every SLO but cost in 0 of 20 runs, and every SLO together;
    the reference fails none."""
    path = tmp_path / "runs.xml"
    assert _gym("run", STARTER, "--runs", "20", "--workers", "1", "--junit", path) == 1
    (suite,) = _suites(path)
    failures = _failures(suite)
    assert list(failures) == [*SLOS, "every SLO"]
    assert failures["cost_units"] is None
    for name in ("throughput_rps", "availability", "peak_saturation", "every SLO"):
        assert isinstance(failures[name], Failure)
        assert "0/20 runs" in failures[name].message
    assert _gym("run", REFERENCE, "--runs", "20", "--workers", "1", "--junit", path, "--force") == 0
    (suite,) = _suites(path)
    assert suite.failures == 0 and suite.tests == 5


def test_a_sweep_has_a_suite_per_point(tmp_path: Path) -> None:
    """Three points: 2 and 3 fetchers fail (their cases say which SLOs), 4 pass; the
    command exits 0 since one point passes."""
    path = tmp_path / "sweep.xml"
    code = _gym(
        "sweep", REFERENCE, "--vary", "fetchers.replicas=2..4", "--workers", "1", "--junit", path
    )
    assert code == 0
    suites = _suites(path)
    assert [s.name for s in suites] == [f"fetchers.replicas={n}" for n in (2, 3, 4)]
    for suite, n in zip(suites, (2, 3, 4), strict=True):
        result = gym.simulate(gym.load_design(REFERENCE, [f"fetchers.replicas={n}"]), CHAOS)
        failures = _failures(suite)
        for check in result.checks:
            assert (failures[check.name] is None) == check.passed, (n, check)
        assert (failures["every SLO"] is None) == result.passed


def test_a_sweep_point_the_catalog_forbids_is_an_error(tmp_path: Path) -> None:
    """A point the catalog forbids is an error; the others still have their cases."""
    path = tmp_path / "sweep.xml"
    vary = "fetchers.rps_per_replica=4000,5000"
    assert _gym("sweep", REFERENCE, "--vary", vary, "--workers", "1", "--junit", path) == 0
    suites = _suites(path)
    (error,) = _failures(suites[1]).values()
    assert isinstance(error, Error) and "more than one replica can give" in (error.text or "")
    assert not any(isinstance(r, Error | Skipped) for r in _failures(suites[0]).values())


def test_optimize(tmp_path: Path) -> None:
    """Found: the cheapest design's SLOs, none failing, and why nothing cheaper passes
    as the suite's output. Not found within the cost limit: one failure saying why."""
    path = tmp_path / "opt.xml"
    assert _gym("optimize", "--runs", "20", "--workers", "1", "--junit", path) == 0
    (suite,) = _suites(path)
    assert suite.failures == 0 and suite.tests == 5
    assert "7 units" in suite.name and "fewer than 4 units" in _out(suite)
    assert (
        _gym(
            "optimize",
            "--runs",
            "20",
            "--workers",
            "1",
            "--max-cost",
            "5",
            "--junit",
            path,
            "--force",
        )
        == 1
    )
    (suite,) = _suites(path)
    (failure,) = _failures(suite).values()
    assert isinstance(failure, Failure) and "5 units: the best of them" in failure.text


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--junit", "out.txt"], "must end in .xml"),
        (["--junit", "exists.xml"], "pass --force"),
        (["--junit", "dir.xml"], "is a directory"),
    ],
)
def test_the_junit_path_is_checked_before_any_work(
    tmp_path: Path, args: list[str], words: str
) -> None:
    (tmp_path / "exists.xml").write_text("keep me")
    (tmp_path / "dir.xml").mkdir()
    args = [str(tmp_path / a) if a.startswith(("out", "exists", "dir")) else a for a in args]
    for command in (["run", str(STARTER)], ["optimize"], ["sweep", str(REFERENCE)]):
        extra = ["--vary", "fetchers.replicas=2..3"] if command[0] == "sweep" else []
        res = runner.invoke(app, [*command, *extra, *args])
        assert res.exit_code == 2, res.output
        assert words in res.stderr and res.stdout == ""
    assert (tmp_path / "exists.xml").read_text() == "keep me"


def test_force_applies_to_the_junit_file_alone(tmp_path: Path) -> None:
    """--force with --junit and no -o/--out replaces the file; without either, refused."""
    path = tmp_path / "x.xml"
    path.write_text("old")
    assert _gym("run", REFERENCE, "--junit", path, "--force") == 0
    assert _suites(path)[0].tests == 4
    res = runner.invoke(app, ["run", str(REFERENCE), "--force"])
    assert res.exit_code == 2 and "--junit" in res.stderr


def test_markup_in_names_is_escaped(tmp_path: Path) -> None:
    """A design named with markup and quotes: the file parses and keeps the name."""
    name = '<b>"A&B"</b> </testsuite>'
    design = tmp_path / "d.yaml"
    design.write_text(REFERENCE.read_text().replace("name: reference", f"name: '{name}'"))
    path = tmp_path / "d.xml"
    assert _gym("run", design, "--junit", path) == 0
    (suite,) = _suites(path)
    assert suite.name == f"{name} under crawler-chaos"


def test_names_xml_cannot_hold_are_escaped(tmp_path: Path) -> None:
    """A design named with control characters XML forbids: the file still parses, the
    characters written as escapes."""
    design = tmp_path / "d.yaml"
    design.write_text(REFERENCE.read_text().replace("name: reference", 'name: "a\\x01b\\x1b"'))
    path = tmp_path / "d.xml"
    assert _gym("run", design, "--junit", path) == 0
    (suite,) = _suites(path)
    assert suite.name == "a\\x01b\\x1b under crawler-chaos"


def test_junit_and_out_on_one_path_refused_before_any_run(tmp_path: Path) -> None:
    same = tmp_path / "same.xml"
    res = runner.invoke(app, ["run", str(STARTER), "--junit", str(same), "--out", str(same)])
    assert res.exit_code == 2 and "is the --out directory too" in res.stderr
    assert not same.exists()


def test_sweep_suites_name_their_inputs(tmp_path: Path) -> None:
    path = tmp_path / "sweep.xml"
    _gym("sweep", REFERENCE, "--vary", "fetchers.replicas=3..4", "--workers", "1", "--junit", path)
    for suite in _suites(path):
        properties = {p.name: p.value for p in suite.properties()}
        assert properties["design_file"] == str(REFERENCE)
        assert properties["engine"] == "flow" and properties["seeds"] == "0..0"
