"""The commands that run designs once each and judge them: ``compare`` side by side,
``grade`` on the rubric, ``plot`` and ``report`` into a file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gym.cli import inputs
from gym.cli.console import one_line, plain, print_json
from gym.cli.contract import exit_all_pass, guarded
from gym.cli.options import (
    DesignArg,
    DesignsArg,
    EngineOpt,
    ForceOpt,
    HeadroomOpt,
    MaxUrlsOpt,
    NoFixOpt,
    ScenarioOpt,
    SeedOpt,
    SetOpt,
    file_name,
    url_limit,
)
from gym.cli.program import app
from gym.core.errors import GymError


@app.command("compare")
@guarded
def compare_cmd(
    designs: DesignsArg,
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    sets: SetOpt = None,
    max_urls: MaxUrlsOpt = None,
) -> None:
    """Run several designs under one scenario and seed; show them side by side.
    Exit 0 when every design passes, 1 when any fails."""
    from gym.explore.compare import Comparison

    urls = url_limit(max_urls, engine)
    comparison = Comparison(inputs.results(designs, scenario, seed, engine, sets, urls))
    if as_json:
        print_json(comparison.to_dict())
    else:
        from gym.cli.tables import print_comparison

        print_comparison(comparison)
    raise exit_all_pass(comparison.results)


@app.command("grade")
@guarded
def grade_cmd(
    design: DesignArg,
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    sets: SetOpt = None,
    max_urls: MaxUrlsOpt = None,
) -> None:
    """Grade a crawler design on the problem's rubric from one run's measurements, beside
    its SLO verdict. Exit 0 when the design passes its SLOs, 1 when it fails (as run), 2
    on bad input."""
    from gym.analysis import rubric
    from gym.api import load_inputs
    from gym.system.compiled import addons

    urls = url_limit(max_urls, engine)
    (loaded,), _ = load_inputs([design], scenario, sets)
    if addons(loaded) is None:
        raise GymError.single(
            str(design), None, "the rubric grades crawler designs (this is a graph design)"
        )
    (r,) = inputs.results([design], scenario, seed, engine, sets, urls)
    grades = rubric.grade(r)
    points, counted = rubric.credit_points(grades)
    if as_json:
        print_json(
            {
                "design": r.design.name,
                "scenario": r.scenario.name,
                "engine": r.engine,
                "seed": r.seed,
                "verdict": r.verdict,
                "slos": [c.to_dict() for c in r.checks],
                "rubric": [g.to_dict() for g in grades],
                "points": points,
                "out_of": counted,
            }
        )
    else:
        from gym.cli.tables import print_grades

        print_grades(r, grades, points, counted)
    raise exit_all_pass([r])


#: Image formats ``gym plot`` writes; a name without an extension gets ``.png``.
PLOT_SUFFIXES = (".png", ".svg", ".pdf")


@app.command("plot")
@guarded
def plot_cmd(
    designs: DesignsArg,
    output: Annotated[
        Path,
        typer.Option(
            "-o",
            "--out",
            help="Image file to write: .png, .svg or .pdf (no extension: .png is added).",
            parser=file_name,
            metavar="FILE",
        ),
    ],
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    force: ForceOpt = False,
    sets: SetOpt = None,
    max_urls: MaxUrlsOpt = None,
) -> None:
    """Overlay several designs: saturation, served URLs and frontier backlog over time.
    Exit 0 when every design passes, 1 when any fails."""
    from gym.core.outputs import check_file, write_file

    target = check_file(output, "-o", suffixes=PLOT_SUFFIXES, force=force, default_suffix=".png")
    results = inputs.results(designs, scenario, seed, engine, sets, url_limit(max_urls, engine))
    from gym.report import plots

    fig = plots.overlay(results)
    fmt = target.suffix.lower().lstrip(".")
    write_file(target, lambda tmp: fig.savefig(tmp, format=fmt, dpi=110, bbox_inches="tight"), "-o")
    plain(stderr=True).print(f"wrote {one_line(target)}")
    raise exit_all_pass(results)


@app.command("report")
@guarded
def report_cmd(
    design: DesignArg,
    output: Annotated[
        Path,
        typer.Option(
            "-o",
            "--out",
            help="HTML file to write (.html or .htm).",
            parser=file_name,
            metavar="FILE",
        ),
    ],
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    force: ForceOpt = False,
    sets: SetOpt = None,
    max_urls: MaxUrlsOpt = None,
    no_fix: NoFixOpt = False,
    with_headroom: HeadroomOpt = None,
) -> None:
    """Write a self-contained HTML report of one run (verdict, tables, plots, timeline,
    the suggested fix when it fails, the headroom when it passes, the resolved inputs).
    Exit 0 when the design passes, 1 when it fails."""
    from gym.core.outputs import check_file, write_file

    target = check_file(output, "-o", suffixes=(".html", ".htm"), force=force)
    results = inputs.results([design], scenario, seed, engine, sets, url_limit(max_urls, engine))
    from gym.explore.fix import suggest
    from gym.explore.headroom import AUTO_TICKS, headroom
    from gym.report.html import render

    r = results[0]
    fix = None if no_fix else suggest(r, user_sets=sets or ())
    room = None
    if with_headroom is not False:
        room = headroom(r, None if with_headroom else AUTO_TICKS)
    page = render(r, fix, room)
    write_file(target, page, "-o")
    plain(stderr=True).print(
        f"wrote {one_line(target)} ({one_line(results[0].design.name)}: "
        f"{results[0].verdict.upper()})"
    )
    raise exit_all_pass(results)
