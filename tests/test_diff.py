"""``gym diff BASE HEAD``: the capacity-regression gate (gym.explore.diff)."""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gym
from gym.cli import app
from gym.explore import diff
from tests.conftest import CHAOS, REFERENCE, ROOT, STARTER

runner = CliRunner()


def _gym(*args: str | Path) -> tuple[int, str, str]:
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.exit_code, res.stdout, res.stderr


@pytest.mark.parametrize(
    ("df", "quantile"),
    # Student's t 97.5% quantiles as printed in statistical tables.
    [(1, 12.7062), (4, 2.7764), (19, 2.0930), (30, 2.0423), (40, 2.0211), (60, 2.0003),
     (120, 1.9799)],
)  # fmt: skip
def test_student_t_quantiles(df: int, quantile: float) -> None:
    assert diff.t975(df) == pytest.approx(quantile, abs=1e-4)


def test_the_change_is_the_mean_paired_difference_with_its_t_interval() -> None:
    """Starter to reference over seeds 0..4: each figure's change is the mean of the
    run-by-run differences of the two designs' own runs (gym.simulate, seed by seed), its
    interval that mean +- t(4) x their standard deviation / sqrt(5). Every SLO better;
    cost up a unit ("costlier", not gated)."""
    runs = 5  # at a confidence of 0.5 (4 runs can show it), the gate takes 5 runs
    got = diff.diff(
        gym.load_design(STARTER),
        gym.load_design(REFERENCE),
        gym.load_scenario(CHAOS),
        runs=runs,
        confidence=0.5,
    )
    base = [gym.simulate(STARTER, CHAOS, seed=k).metrics for k in range(runs)]
    head = [gym.simulate(REFERENCE, CHAOS, seed=k).metrics for k in range(runs)]
    figures = {
        "throughput_rps": lambda m: m.throughput_rps,
        "availability": lambda m: m.availability,
        "peak_saturation": lambda m: m.peak_saturation,
        "cost_units": lambda m: float(m.cost_units),
    }
    by_name = {c.name: c for c in got.changes}
    for name, of in figures.items():
        deltas = [of(h) - of(b) for b, h in zip(base, head, strict=True)]
        mean = math.fsum(deltas) / runs
        half = 2.7764 * statistics.stdev(deltas) / math.sqrt(runs)
        c = by_name[name]
        assert c.change == pytest.approx(mean, rel=1e-12, abs=1e-12)
        assert c.low == pytest.approx(mean - half, rel=1e-4, abs=1e-9)
        assert c.high == pytest.approx(mean + half, rel=1e-4, abs=1e-9)
        assert c.pairs == runs
    assert [by_name[n].verdict for n in figures] == ["better", "better", "better", "costlier"]
    assert by_name["cost_units"].change == 1.0
    assert got.regressions == []


def test_the_gate_from_the_command_line(tmp_path: Path) -> None:
    """Starter to reference: the improvement, exit 0. The reverse: exit 1, each SLO worse
    beyond noise named, and the verdict going from PASS to FAIL. Identical designs: every
    change exactly 0 with an interval of [0, 0], exit 0."""
    code, out, _ = _gym("diff", STARTER, REFERENCE, "--workers", "1", "--json")
    assert code == 0
    data = json.loads(out)
    assert not data["regressed"]
    assert {c["name"]: c["verdict"] for c in data["changes"]} == {
        "throughput_rps": "better",
        "availability": "better",
        "peak_saturation": "better",
        "cost_units": "costlier",
    }
    assert data["inputs"][0] == {"path": "frontier.drain_rps", "base": "8000", "head": "30000"}
    code, out, _ = _gym("diff", REFERENCE, STARTER, "--workers", "1")
    assert code == 1
    for name in ("throughput_rps", "availability", "peak_saturation"):
        assert f"{name} worse beyond noise" in out
    assert "from PASS to FAIL" in out
    code, out, _ = _gym("diff", REFERENCE, REFERENCE, "--workers", "1", "--json")
    assert code == 0
    for c in json.loads(out)["changes"]:
        assert (c["change"], c["low"], c["high"], c["verdict"]) == (0.0, 0.0, 0.0, "same")


def test_markdown_summary(tmp_path: Path) -> None:
    """--markdown writes the table for a pull-request comment; names with markup and
    pipes stay inside their cells; the file is refused if it exists, unless --force."""
    design = tmp_path / "d.yaml"
    name = "<b>a|b</b> *x*"
    design.write_text(REFERENCE.read_text().replace("name: reference", f"name: '{name}'"))
    md = tmp_path / "diff.md"
    few = ["--runs", "5", "--confidence", "0.5"]
    code, _, _ = _gym("diff", STARTER, design, *few, "--workers", "1", "--markdown", md)
    assert code == 0
    text = md.read_text()
    assert text.startswith("### Capacity diff: PASS: no regression")
    assert "`<b>a|b</b> *x*` (HEAD)" in text  # a code span outside the table, literally
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 5  # the header, four figures and every SLO
    # six cells in every row: pipes in names are escaped (\\|), not cell borders
    assert all(len(re.split(r"(?<!\\)\|", line)) == 8 for line in rows), rows
    code, _, err = _gym("diff", STARTER, design, *few, "--markdown", md)
    assert code == 2 and "--force" in err
    assert md.read_text() == text


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--runs", "1"], "--runs"),
        # fewer than can show either side passing at 0.8: BASE passing, HEAD failing
        # could never be seen
        (["--runs", "10"], "use --runs 16 or more"),
        (["--markdown", "out.txt"], ".md"),
        (["--force"], "--markdown"),
    ],
)
def test_refused_before_any_run(tmp_path: Path, args: list[str], words: str) -> None:
    args = [str(tmp_path / a) if a.startswith("out") else a for a in args]
    code, out, err = _gym("diff", STARTER, REFERENCE, *args)
    assert code == 2 and words in err and out == ""


def test_a_crawler_and_a_graph_are_not_compared() -> None:
    graph = ROOT / "designs" / "systems" / "ingestion.yaml"
    code, _, err = _gym("diff", REFERENCE, graph)
    assert code == 2 and "HEAD is a graph and BASE is not" in err and str(graph) in err
