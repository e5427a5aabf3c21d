"""One grammar for the command line (issue 30): every command's help rendered and read,
every usage error one line (``error: ...``, exit 2), the same option names and defaults
for the same things in every command."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from gym.cli import app
from gym.core.limits import DEFAULT_MAX_RUNS
from tests.conftest import REFERENCE

runner = CliRunner()


def _commands() -> list[tuple[list[str], Any]]:
    """Every command as its words after ``gym`` (``slo export``), with its click command."""
    out = []

    def walk(words: list[str], command: Any) -> None:
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk([*words, name], sub)
        else:
            out.append((words, command))

    walk([], typer.main.get_command(app))
    return out


COMMANDS = _commands()
NAMES = [" ".join(words) for words, _ in COMMANDS]


def test_every_command_is_found() -> None:
    assert {"run", "sweep", "optimize", "diff", "validate", "schema", "slo export"} <= set(NAMES)


@pytest.mark.parametrize("words", [w for w, _ in COMMANDS], ids=NAMES)
def test_help_names_values_by_words_not_types(words: list[str]) -> None:
    """No Python type in the help (``<int range>``, ``<list[Path]>``, ``<path>``), no
    typer braces around an argument (``{DESIGN}``), no float default printed in full
    (``1000000000.0``); every option that takes a value names it (N, NUMBER, FILE...)."""
    res = runner.invoke(app, [*words, "--help"])
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert text.startswith(f"Usage: gym {' '.join(words)} [OPTIONS]")
    for bad in ("<int", "<float", "<path>", "<str>", "list[", "Path]", "{", "}", "000000.0"):
        assert bad not in text, (bad, text)
    usage = text.splitlines()[0]
    assert re.fullmatch(r"Usage: gym [a-z ]+\[OPTIONS\]( \[?[A-Z]+(\.\.\.)?\]?)*", usage), usage
    for line in text.splitlines():
        m = re.match(r"  (-\w, )?(--[a-z-]+)( [^/\s]\S*)?\s", line)
        if m and m.group(3):  # an option with a value: its word in capitals or choices
            assert re.fullmatch(r" ([A-Z=]+|[a-z]+(\|[a-z]+)+)", m.group(3)), line


@pytest.mark.parametrize("words", [w for w, _ in COMMANDS], ids=NAMES)
def test_every_usage_error_is_one_line_and_exit_2(words: list[str]) -> None:
    """An unknown option, a missing argument and an option's missing value: one line on
    stderr, ``error: ...`` with where to look (the command's own help), exit 2, nothing on
    stdout."""
    command = dict(zip(NAMES, (c for _, c in COMMANDS), strict=True))[" ".join(words)]
    required = [p for p in command.params if p.param_type_name == "argument" and p.required]
    args = [str(REFERENCE)] * len(required)
    cases = [[*words, *args, "--bogus"]]
    if required:
        cases.append(list(words))  # the argument missing
    if any("--seed" in p.opts for p in command.params):
        cases.append([*words, *args, "--seed", "x"])
    valued = [p for p in command.params if p.param_type_name == "option" and not p.is_flag]
    for option in valued:  # the value missing: click raises it with no command at hand
        cases.append([*words, *args, option.opts[-1]])
    for case in cases:
        res = runner.invoke(app, case)
        assert res.exit_code == 2, (case, res.output)
        lines = res.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (case, res.stderr)
        assert f"(see gym {' '.join(words)} --help)" in lines[0]
        assert res.stdout == ""


@pytest.mark.parametrize("words", [[], ["slo"]], ids=["gym", "gym slo"])
def test_a_bare_group_prints_its_help_on_stdout(words: list[str]) -> None:
    """A group given no command prints its help on stdout and exits 0 (docker, cargo)."""
    res = runner.invoke(app, words)
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith(f"Usage: {' '.join(['gym', *words])} [OPTIONS] COMMAND")
    assert "Commands:" in res.stdout and res.stderr == ""


def test_an_unknown_command_and_the_version() -> None:
    res = runner.invoke(app, ["rnu"])
    assert res.exit_code == 2 and res.stderr.startswith("error: no such command")
    assert len(res.stderr.splitlines()) == 1
    from importlib.metadata import version

    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.stdout == f"gym {version('crawler-slo-gym')}\n"


def test_the_same_thing_has_the_same_option_everywhere() -> None:
    """A file or directory a command writes: -o/--out in every command that writes one;
    the simulation budget: --max-runs, one default; the scenario: -s/--scenario FILE."""
    by_name = dict(zip(NAMES, (c for _, c in COMMANDS), strict=True))
    writers = ["run", "plot", "report", "sweep", "optimize", "schema", "slo export"]
    for name in writers:
        opts = [p.opts for p in by_name[name].params if "--out" in p.opts]
        assert opts and set(opts[0]) == {"-o", "--out"}, name
    for name, command in by_name.items():
        assert not any("--output" in p.opts for p in command.params), name
        for p in command.params:
            if "--scenario" in p.opts:
                assert set(p.opts) == {"-s", "--scenario"} and p.metavar == "FILE", name
    budgets = [p.default for c in by_name.values() for p in c.params if "--max-runs" in p.opts]
    assert budgets == [DEFAULT_MAX_RUNS, DEFAULT_MAX_RUNS]  # sweep, optimize


def test_validate_speaks_json_both_ways() -> None:
    """validate --json: the figures when valid; when not, the problems as JSON on stdout
    and the one-line errors on stderr, exit 2."""
    import json

    res = runner.invoke(app, ["validate", str(REFERENCE), "--json"])
    data = json.loads(res.stdout)
    assert res.exit_code == 0 and data["valid"] is True and data["design"]["cost_units"] == 7
    res = runner.invoke(app, ["validate", str(REFERENCE), "--json", "--set", "fetchers.replicas=0"])
    data = json.loads(res.stdout)
    assert res.exit_code == 2 and data["valid"] is False
    (problem,) = data["problems"]
    assert problem["field"] == "fetchers.replicas" and "(from --set" in problem["message"]
    assert res.stderr.startswith("error: ")


def test_each_kind_names_its_own_unit() -> None:
    """A unit by the kind that has the field, not by the field's name: a retry's
    multiplier is of the wait before (not of base_rps), a writer's buffer holds writes
    (the frontier's URLs), a graph's queue and fleet count requests; the playground's
    fields carry the same units."""
    from gym.inputs.schema import unit_of
    from gym.models import AsyncWriterConfig, FrontierConfig, LoadStage, RetryPolicy
    from gym.playground.state import fields
    from gym.system.kinds.fleet import FleetNode
    from gym.system.kinds.queue import QueueNode

    assert unit_of(RetryPolicy, "multiplier") == "x the wait before"
    assert unit_of(LoadStage, "multiplier") == "x base_rps"
    assert unit_of(AsyncWriterConfig, "buffer") == "writes"
    assert unit_of(FrontierConfig, "buffer") == "URLs"
    assert unit_of(QueueNode, "buffer") == "requests"
    assert unit_of(FleetNode, "rps_per_replica") == "requests/s"
    import gym
    from tests.conftest import ROOT

    graph = gym.load_design(ROOT / "designs" / "systems" / "ingestion.yaml")
    units = {f.path: f.unit for f in fields(graph)}
    assert units["graph.nodes.log.buffer"] == "requests"
    assert units["graph.nodes.buffer.buffer"] == "writes"
    assert units["graph.nodes.consumers.rps_per_replica"] == "requests/s"


def test_what_a_command_wrote_is_said_on_stderr(tmp_path: Path) -> None:
    """Every "wrote ..." line goes to stderr (stdout is for results: JSON, tables), in
    plot, report and schema as in run, sweep, diff and slo export."""
    for args in (
        ["plot", str(REFERENCE), "-o", str(tmp_path / "p.png")],
        ["report", str(REFERENCE), "-o", str(tmp_path / "r.html")],
        ["schema", "-o", str(tmp_path / "schemas")],
        ["run", str(REFERENCE), "-o", str(tmp_path / "run"), "--no-headroom"],
    ):
        res = runner.invoke(app, args)
        assert res.exit_code == 0, (args, res.output)
        assert "wrote " in res.stderr and "wrote " not in res.stdout, args


def test_an_empty_output_path_is_refused() -> None:
    """-o "" was the current directory for run (7 files written into it) and schema."""
    for args in (["run", str(REFERENCE), "-o", ""], ["schema", "-o", ""]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2 and "an empty path; give a directory" in res.stderr, args
        assert len(res.stderr.splitlines()) == 1
