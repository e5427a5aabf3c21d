"""Error messages, the last gaps (issue 30): one line that says what is wrong and where
to fix it, never the symptoms of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gym.cli import app
from tests.conftest import CHAOS, REFERENCE, ROOT

runner = CliRunner()

GOOD = (
    "name: x\n"
    "frontier: {drain_rps: 30000, buffer: 80000}\n"
    "fetchers: {replicas: 4, rps_per_replica: 4000}\n"
    "cache: {hit_ratio: 0.92}\n"
    "page_store: {rps: 25000}\n"
)


def _errors(*args: str) -> list[str]:
    res = runner.invoke(app, ["run", *args])
    assert res.exit_code == 2 and res.stdout == "", res.output
    return res.stderr.splitlines()


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "d.yaml"
    path.write_text(text)
    return str(path)


def test_a_file_of_the_other_kind_is_named_as_such() -> None:
    """A scenario given as the design (it has no design section and 6 scenario keys),
    and a design given as the scenario: one line each, saying what to do."""
    (line,) = _errors(str(CHAOS))
    assert "this is a scenario file" in line and "give it as --scenario FILE" in line
    (line,) = _errors(str(REFERENCE), "--scenario", str(REFERENCE))
    assert "this is a design file" in line and "give it as DESIGN" in line


def test_a_misspelt_key_is_one_problem(tmp_path: Path) -> None:
    """`bufer` for `buffer`: the unknown key with its "did you mean", not also buffer's
    "is required but missing"."""
    (line,) = _errors(_file(tmp_path, GOOD.replace("buffer:", "bufer:")))
    assert "frontier.bufer: unknown key; did you mean 'buffer'?" in line


def test_an_unclosed_brace_names_the_line_that_opened_it(tmp_path: Path) -> None:
    """The parser finds an unclosed `{` on the next line; the message also names the
    line that opened it, with its text, and asks for the missing `}`."""
    text = GOOD.replace("buffer: 80000}", "buffer: 80000")
    (line,) = _errors(_file(tmp_path, text))
    assert "at line 3, column 9" in line
    assert "starts at line 2, column 11: 'frontier: {drain_rps: 30000, buffer: 80000'" in line
    assert "is its '}' missing?" in line


def test_yes_for_a_boolean_says_write_true(tmp_path: Path) -> None:
    (line,) = _errors(_file(tmp_path, GOOD + "dedup: {content_hash: yes}\n"))
    assert "dedup.content_hash: must be true or false (got 'yes'" in line
    assert "write true or false" in line


def test_an_unknown_key_a_set_made_says_so() -> None:
    (line,) = _errors(str(REFERENCE), "--set", "fetcher.replicas=4")
    assert "fetcher: unknown key; did you mean 'fetchers'?" in line
    assert line.endswith("(from --set fetcher.replicas=4)")


def test_a_boolean_hint_fits_what_was_written(tmp_path: Path) -> None:
    """yes: YAML 1.2's word; "true" in quotes: write it without; maybe or 1: no hint
    about YAML words, just what a boolean is."""
    for raw, words in (
        ("yes", "YAML 1.2 reads yes as a word"),
        ('"true"', "write true without quotes"),
        ("maybe", "must be true or false (got 'maybe')"),
        ("1", "must be true or false (got 1)"),
    ):
        (line,) = _errors(_file(tmp_path, GOOD + f"dedup: {{content_hash: {raw}}}\n"))
        assert words in line, (raw, line)
        if raw in ("maybe", "1"):
            assert "YAML 1.2" not in line


def test_an_unclosed_bracket_on_its_own_line_and_a_quote() -> None:
    """A `[` left open inside a `{` on one line: the column it opened at; an unclosed
    quote: the line it opened on, without "while scanning"."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "d.yaml"
        path.write_text("name: x\nfrontier: {drain_rps: 30000, buffer: [80000}\n")
        (line,) = _errors(str(path))
        assert "in a flow sequence that starts at column 38; is its ']' missing?" in line
        path.write_text('name: "x\n')
        (line,) = _errors(str(path))
        assert "in a quoted scalar that starts at line 1, column 7" in line
        assert "while" not in line


def test_seed_counts_api_and_diff() -> None:
    """The library says what is wrong with a count of runs or a confidence that cannot
    be one; diff, which needs the rule on both sides, never offers one run."""
    import gym

    for kwargs, words in (
        ({"runs": 0}, "at least 1 run is needed"),
        ({"runs": 16, "confidence": 1.5}, "a share of runs, from 0 to 1"),
    ):
        try:
            gym.sweep(str(REFERENCE), ["fetchers.replicas=3..4"], **kwargs)  # type: ignore[arg-type]
        except gym.GymError as err:
            assert words in err.problems[0].message
        else:
            raise AssertionError(kwargs)
    res = runner.invoke(app, ["diff", str(REFERENCE), str(REFERENCE), "--runs", "5"])
    assert res.exit_code == 2 and "use --runs 16 or more" in res.stderr
    assert "or 1" not in res.stderr
    res = runner.invoke(app, ["run", str(REFERENCE), "--runs", "20", "--confidence", "0.9"])
    assert "use --runs 35 or more" in res.stderr and "or 1" not in res.stderr


def test_schema_and_catalog_problems_in_one_round(tmp_path: Path) -> None:
    """A design with schema problems (a negative count, a misspelt value) and a problem
    the scenario's catalog finds (a hit ratio no number of cache units reaches): every one
    listed at once, not the catalog's only after the schema's are fixed."""
    bad = _file(
        tmp_path,
        GOOD.replace("replicas: 4", "replicas: -4")
        .replace("0.92", "1.0")
        .replace("rps: 25000", "rps: 25000, layout: splitt"),
    )
    lines = _errors(bad)
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"error: {bad}: fetchers.replicas: ")
    assert lines[1].startswith(f"error: {bad}: page_store.layout: must be 'split' or")
    assert lines[2].startswith(f"error: {bad}: cache.hit_ratio: 1 cannot be reached")
    # what --set writes counts too; a check whose section is itself invalid is left out
    lines = _errors(bad, "--set", "fetchers.replicas=2", "--set", "fetchers.rps_per_replica=5000")
    assert [line.split(": ")[2] for line in lines] == [
        "page_store.layout",
        "fetchers.rps_per_replica",
        "cache.hit_ratio",
    ], lines
    assert "(the catalog allows at most 4000/s per replica)" in lines[1]
    lines = _errors(bad, "--set", "fetchers.rps_per_replica=5000")
    assert not any("fetchers.rps_per_replica" in line for line in lines), lines


def test_the_design_and_the_scenario_in_one_round(tmp_path: Path) -> None:
    """A design that does not load beside a scenario that does not either: both files'
    problems (no catalog check: the scenario that has it is not valid); a design without
    a discovery section under a scenario that crashes its seen set: said with the rest."""
    bad = _file(tmp_path, GOOD.replace("replicas: 4", "replicas: -4"))
    scenario = tmp_path / "s.yaml"
    scenario.write_text("duration_s: -5\nbase_rps: 1000\n")
    lines = _errors(bad, "-s", str(scenario))
    assert [line.split(": ")[1:3] for line in lines] == [
        [bad, "fetchers.replicas"],
        [str(scenario), "duration_s"],
    ], lines
    scenario.write_text(
        "duration_s: 60\nbase_rps: 1000\n"
        "faults: [{kind: stall, target: seen_set, at_s: 5, for_s: 5}]\n"
    )
    lines = _errors(bad, "-s", str(scenario))
    assert len(lines) == 2 and f"{scenario}: faults[0].target: 'seen_set'" in lines[1], lines
    res = runner.invoke(app, ["validate", bad, "-s", str(scenario), "--json"])
    assert res.exit_code == 2 and '"faults[0].target"' in res.stdout, res.output


@pytest.mark.parametrize("command", ["run", "validate", "optimize", "estimate", "plot"])
def test_every_command_that_loads_a_design_says_all_in_one_round(
    tmp_path: Path, command: str
) -> None:
    """optimize (with a base design) and estimate load the design as run does: its schema
    problem and what the catalog finds, together."""
    bad = _file(tmp_path, GOOD.replace("replicas: 4", "replicas: -4").replace("0.92", "1.0"))
    out = ["-o", str(tmp_path / "x.png")] if command == "plot" else []
    res = runner.invoke(app, [command, bad, *out])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert [line.split(": ")[2] for line in lines] == ["fetchers.replicas", "cache.hit_ratio"]


def test_several_designs_every_problem_once(tmp_path: Path) -> None:
    """compare and diff with a design that does not load: the others' catalog problems
    come in the same round, and a file given twice is said once."""
    bad = _file(tmp_path, GOOD.replace("replicas: 4", "replicas: -4"))
    catalog_only = tmp_path / "c.yaml"
    catalog_only.write_text(GOOD.replace("rps_per_replica: 4000", "rps_per_replica: 9000"))
    res = runner.invoke(app, ["compare", bad, str(catalog_only), bad])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == len(set(lines)) == 2, lines
    assert lines[0].startswith(f"error: {bad}: fetchers.replicas: ")
    assert lines[1].startswith(f"error: {catalog_only}: fetchers.rps_per_replica: 9000")
    res = runner.invoke(app, ["diff", bad, bad])
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1, res.output


def test_a_graph_says_its_schema_and_catalog_problems_at_once(tmp_path: Path) -> None:
    """A queue's bad rate beside a fleet asking more of a replica than the catalog allows:
    both, and under a crawler scenario the system too (each node valid alone is checked)."""
    text = (ROOT / "designs" / "systems" / "ingestion.yaml").read_text()
    bad = _file(
        tmp_path,
        text.replace("drain_rps: 30000", "drain_rps: -1").replace(
            "rps_per_replica: 3500", "rps_per_replica: 99999"
        ),
    )
    lines = _errors(bad, "-s", str(ROOT / "scenarios" / "systems" / "ingestion.yaml"))
    assert [line.split(": ")[2] for line in lines] == [
        "graph.nodes.log.drain_rps",
        "graph.nodes.consumers.rps_per_replica",
    ], lines
    lines = _errors(bad)
    assert len(lines) == 3 and "system: ingestion is a graph design" in lines[1], lines
