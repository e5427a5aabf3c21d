"""The commands' shared opening: read the files a command names (the scenario defaults to
the chaos one), check them, and run each design; nothing runs if anything is invalid.

The loaders are imported on use, from their modules (so that ``gym --help`` loads none)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gym.cli.console import warn
from gym.core.errors import GymError, Problem
from gym.core.limits import DEFAULT_MAX_URLS

if TYPE_CHECKING:
    from gym.analysis.result import Result
    from gym.models import Design, Scenario
    from gym.system.graph import GraphDesign

#: The most designs one compare or plot runs side by side.
MAX_DESIGNS = 50


def scenario_of(path: Path | None) -> Scenario:
    """The scenario file given, or the default one."""
    from gym.api import default_scenario
    from gym.inputs.loading import load_scenario

    return load_scenario(path or default_scenario())


def design_and_scenario(
    design: Path, scenario: Path | None, sets: list[str] | None
) -> tuple[Design | GraphDesign, Scenario]:
    """The design (with the --set what-ifs) and the scenario, each checked on its own
    (and what of the design can be checked against the scenario if it does not load)."""
    from gym.api import load_inputs

    (d,), s = load_inputs([design], scenario, sets)
    return d, s


def refuse(problems: list[Problem]) -> None:
    """Exit 2 with every problem found, if any."""
    if problems:
        raise GymError(problems)


def checked(
    design: Path, scenario: Path | None, sets: list[str] | None
) -> tuple[Design | GraphDesign, Scenario]:
    """The design and scenario, and the checks of the one against the other."""
    from gym.api import validate

    d, s = design_and_scenario(design, scenario, sets)
    refuse(validate(d, s))
    return d, s


def results(
    designs: list[Path],
    scenario: Path | None,
    seed: int,
    engine: str,
    sets: list[str] | None = None,
    max_urls: int = DEFAULT_MAX_URLS,
) -> list[Result]:
    """Load and check everything, then run each design (nothing runs if anything is
    invalid or over a limit)."""
    from gym.api import load_inputs, simulate, url_budget, validate

    if len(designs) > MAX_DESIGNS:
        raise GymError.single(
            None, "DESIGN", f"{len(designs)} designs; the limit is {MAX_DESIGNS} at once"
        )
    loaded, s = load_inputs(designs, scenario, sets)
    problems = [p for d in loaded for p in validate(d, s)]
    if (
        engine == "request"
        and (over := url_budget(s, len(loaded), max_urls, designs=loaded)) is not None
    ):
        problems.append(over)
    refuse(problems)
    runs = [simulate(d, s, seed=seed, engine=engine, max_urls=max_urls) for d in loaded]
    for r in runs:
        warn(r.warnings, r.design.name if len(runs) > 1 else None)
    return runs
