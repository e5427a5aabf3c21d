"""The project keeps its promises to a new user: README commands, CI, shipped files."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import gym
from gym.api import default_scenario
from tests.conftest import CHAOS, ROOT


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run runs the README's test command as written there."""
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```sh\n(python3 -m venv .*?)\n```", readme)
    assert len(commands) == 2, commands
    run_cmd, test_cmd = commands
    assert run_cmd.endswith("gym run designs/reference.yaml")
    assert test_cmd.endswith("pytest")
    assert test_cmd in (ROOT / ".ci" / "run").read_text()


def test_packaged_scenario_is_the_shipped_one() -> None:
    """The copy inside the package (used outside the repo) equals scenarios/crawler-chaos."""
    packaged = ROOT / "gym" / "data" / "crawler-chaos.yaml"
    assert packaged.read_bytes() == CHAOS.read_bytes()


def test_packaged_design_is_the_shipped_reference() -> None:
    """The copy `gym serve` starts from outside the repo equals designs/reference.yaml."""
    packaged = ROOT / "gym" / "data" / "reference.yaml"
    assert packaged.read_bytes() == (ROOT / "designs" / "reference.yaml").read_bytes()


def test_default_scenario_is_the_crawler_chaos_scenario() -> None:
    """No --scenario means the crawler chaos scenario."""
    assert gym.load_scenario(default_scenario()).name == "crawler-chaos"


def test_shipped_scenario_matches_the_specification() -> None:
    """The crawler chaos scenario of docs/specification.md section 4, event by event."""
    sc = gym.load_scenario(CHAOS)
    assert (sc.duration_s, sc.base_rps, sc.resolver.rps) == (40, 6000, 5000)
    assert [(s.at_s, s.multiplier) for s in sc.load] == [(0, 1), (4, 2), (10, 1.5), (18, 1)]
    assert [(f.kind, f.at_s, f.for_s, f.target) for f in sc.faults] == [
        ("crash", 12, None, "fetchers"),
        ("stall", 20, 10, "page_store"),
        ("slowdown", 28, 8, "resolver"),
    ]
    assert sc.slos.throughput_rps and sc.slos.throughput_rps.min == 6000
    assert sc.slos.availability and sc.slos.availability.min == 0.97
    assert sc.slos.peak_saturation and sc.slos.peak_saturation.max == 0.90
    assert sc.slos.cost_units and sc.slos.cost_units.max == 9


# Spelled in pieces so that this file does not mention what it looks for.
_OUTSIDE_REFERENCES = (b".." + b"/shared", b"DESIGN" + b".md")


def _tracked_files() -> list[Path]:
    """The files git tracks (every file under ROOT but .git when it is not a git checkout)."""
    if (ROOT / ".git").exists():
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        return [ROOT / name for name in out.decode().split("\0") if name]
    return [p for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]


def test_no_file_points_outside_the_repository() -> None:
    """A clone has no design notes outside it: the specification is docs/specification.md."""
    offenders = [
        f"{path.relative_to(ROOT)}: {word.decode()}"
        for path in _tracked_files()
        if path.is_file()
        for word in _OUTSIDE_REFERENCES
        if word in path.read_bytes()
    ]
    assert not offenders, offenders


def test_specification_sections_cited_exist() -> None:
    """Every "docs/specification.md section N" cited is a numbered section of that page."""
    spec = (ROOT / "docs" / "specification.md").read_text()
    sections = {int(n) for n in re.findall(r"^## (\d+)\. ", spec, flags=re.MULTILINE)}
    assert sections == set(range(1, 8))
    cited = {
        int(n)
        for path in _tracked_files()
        if path.is_file() and path.suffix in {".py", ".md", ".yaml", ".json", ".ipynb"}
        for n in re.findall(rb"specification\.md\)? section (\d+)", path.read_bytes())
    }
    assert cited and cited <= sections, cited - sections
