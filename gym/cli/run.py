"""``gym run``: one design under a scenario, once or over many seeds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from gym.cli.console import one_line, plain, print_json, warn, wrote_files
from gym.cli.contract import exit_verdict, guarded
from gym.cli.inputs import design_and_scenario, refuse
from gym.cli.options import (
    ConfidenceOpt,
    DesignArg,
    EngineOpt,
    HeadroomOpt,
    JunitOpt,
    NoFixOpt,
    ScenarioOpt,
    SchedulerOpt,
    SeedOpt,
    SetOpt,
    WorkersOpt,
    check_many,
    dir_name,
    force_needs,
    url_limit,
)
from gym.cli.program import app, closing
from gym.core.errors import GymError
from gym.core.limits import DEFAULT_MAX_URLS

if TYPE_CHECKING:
    from gym.analysis.result import Result
    from gym.explore.fix import Fix, NoFix
    from gym.explore.headroom import Headroom
    from gym.explore.montecarlo import MonteCarloResult
    from gym.explore.parallel import Executor
    from gym.models import Design, Scenario
    from gym.system.graph import GraphDesign


@app.command()
@guarded
def run(
    design: DesignArg,
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    tick_ms: Annotated[
        int,
        typer.Option(
            "--tick-ms",
            help="Tick in ms (divides 1000): time step of the flow "
            "engine, bucket of the per-tick counts in both.",
        ),
    ] = 10,
    warmup: Annotated[
        float,
        typer.Option(
            "--warmup",
            help="Leave URLs that arrived before this many seconds out of the latency "
            "statistics (one run only).",
            min=0,
        ),
    ] = 0.0,
    max_urls: Annotated[
        int | None,
        typer.Option(
            "--max-urls",
            help="The request engine refuses runs expected to offer more URLs than this "
            f"(with --runs: all runs together; default {DEFAULT_MAX_URLS:,}).",
            min=1,
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of tables.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--out",
            help="Also write the per-window CSV, the summary JSON, the "
            "resolved design and scenario and the plots into this directory (with --runs: "
            "the summary JSON and one CSV row per run).",
            show_default=False,
            metavar="DIR",
            parser=dir_name,
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Write into an --out directory that holds files; replace the --junit file.",
        ),
    ] = False,
    sets: SetOpt = None,
    runs: Annotated[
        int,
        typer.Option(
            "--runs",
            help="Run this many seeds (seed, seed+1, ...) and report the "
            "spread, pass rate and pass probability.",
            min=1,
        ),
    ] = 1,
    confidence: ConfidenceOpt = None,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    no_fix: NoFixOpt = False,
    headroom: HeadroomOpt = None,
    junit: JunitOpt = None,
) -> None:
    """Simulate DESIGN under a scenario and score it; when it fails, suggest the cheapest
    change that passes. Exit 0 PASS, 1 FAIL, 2 invalid input."""
    conf = _check_runs(runs, workers, scheduler, confidence, seed, headroom, no_fix)
    limit, xml_file = _check_outputs(force, out, junit, max_urls, engine)
    job = _Job(design, scenario, sets, seed, engine, tick_ms, limit, as_json, out, force, xml_file)
    if runs > 1:
        _run_many(job, runs, conf, workers, scheduler, warmup)
    _run_once(job, warmup, no_fix, headroom)


@dataclass(frozen=True)
class _Job:
    """The options one run and many runs share, checked: what to simulate, how, and where
    the result goes (``max_urls``: the limit in force; ``junit``: the checked file)."""

    design: Path
    scenario: Path | None
    sets: list[str] | None
    seed: int
    engine: str
    tick_ms: int
    max_urls: int
    as_json: bool
    out: Path | None
    force: bool
    junit: Path | None


def _check_runs(
    runs: int,
    workers: int | None,
    scheduler: str | None,
    confidence: float | None,
    seed: int,
    headroom: bool | None,
    no_fix: bool,
) -> float:
    """The many-run options, and the one-run options --runs has no use for, checked before
    any work; returns the confidence."""
    conf = check_many(runs, workers, scheduler, confidence, seed=seed)
    if headroom is not None and runs > 1:
        flag = "--headroom" if headroom else "--no-headroom"
        raise GymError.single(None, flag, f"--runs works out no headroom; leave {flag} out")
    if no_fix and runs > 1:
        raise GymError.single(
            None,
            "--no-fix",
            "--runs reports the spread over seeds and suggests no fix; leave --no-fix out",
        )
    return conf


def _check_outputs(
    force: bool, out: Path | None, junit: Path | None, max_urls: int | None, engine: str
) -> tuple[int, Path | None]:
    """--force, --max-urls, --out and --junit, checked in that order before any work;
    returns the URL limit and the --junit file (never the --out directory)."""
    force_needs(force, out or junit, "--out or --junit")
    limit = url_limit(max_urls, engine)
    if out is not None:
        from gym.core.outputs import check_dir

        check_dir(out, "--out", force=force)
    junit_file = None
    if junit is not None:
        from gym.report import junit as junit_xml

        junit_file = junit_xml.check(junit, force=force)
        if out is not None and junit_file.resolve() == out.resolve():
            raise GymError.single(
                str(junit), "--junit", "is the --out directory too; give another name"
            )
    return limit, junit_file


def _run_once(job: _Job, warmup: float, no_fix: bool, headroom: bool | None) -> NoReturn:
    """One run: simulate, then search for a fix (when it fails) or work out its headroom
    (when it passes); print and write it all, and exit with the verdict."""
    result = _simulate(job, warmup)
    warn(result.warnings)
    fix: Fix | NoFix | None = None
    room: Headroom | None = None
    stopped = None  # what Ctrl-C interrupted after the run
    if not result.passed and not no_fix:
        fix, stopped = _suggest_fix(result, job.sets)
    if result.passed and headroom is not False:
        room, stopped = _work_out_headroom(result, headroom)
    _print_run(result, fix, room, job.as_json)
    _write_run(job, result, fix, room)
    if stopped is not None:
        plain(stderr=True).print(f"{stopped} was interrupted; the run above is complete")
        raise KeyboardInterrupt
    raise exit_verdict(result.passed)


def _simulate(job: _Job, warmup: float) -> Result:
    """Load the design and scenario and run them once (a progress bar for a long run of the
    request engine)."""
    from gym.api import simulate
    from gym.cli.progress import PROGRESS_ABOVE_URLS, run_progress
    from gym.system.compiled import expected_urls

    d, s = design_and_scenario(job.design, job.scenario, job.sets)
    long_run = job.engine == "request" and expected_urls(s, d) > PROGRESS_ABOVE_URLS
    with run_progress(long_run, s.duration_s) as report:
        result = simulate(
            d,
            s,
            seed=job.seed,
            engine=job.engine,
            tick_ms=job.tick_ms,
            warmup_s=warmup,
            max_urls=job.max_urls,
            progress=report,
        )
    return result


def _suggest_fix(result: Result, sets: list[str] | None) -> tuple[Fix | NoFix | None, str | None]:
    """The cheapest change that passes, searched for a failing run; and what Ctrl-C
    interrupted, if it did (the run is done: shown, then the interrupt)."""
    from gym.cli.progress import status
    from gym.explore.fix import suggest

    fix = None
    try:
        with status("searching for the cheapest change that passes") as counted:
            fix = suggest(result, user_sets=sets or (), progress=counted)
    except KeyboardInterrupt:
        return fix, "the fix search (--no-fix skips it)"
    return fix, None


def _work_out_headroom(result: Result, headroom: bool | None) -> tuple[Headroom | None, str | None]:
    """How far a passing run is from failing (``--headroom``: however long it takes); and
    what Ctrl-C interrupted, if it did."""
    from gym.cli.progress import status
    from gym.explore import headroom as margins

    room = None
    try:
        with status("working out how far it is from failing"):
            room = margins.headroom(result, None if headroom else margins.AUTO_TICKS)
    except KeyboardInterrupt:
        return room, "the headroom (--no-headroom skips it)"
    return room, None


def _print_run(
    result: Result, fix: Fix | NoFix | None, room: Headroom | None, as_json: bool
) -> None:
    """The run, its fix and its headroom: one JSON object, or the tables."""
    if as_json:
        payload = result.to_dict()
        payload["fix"] = None if fix is None else fix.to_dict()
        payload["headroom"] = None if room is None else room.to_dict()
        print_json(payload)
    else:
        from gym.cli import render

        console = plain()
        render.print_result(result, console)
        if fix is not None:
            render.print_fix(fix, console)
        if room is not None:
            render.print_headroom(room, console)


def _write_run(job: _Job, result: Result, fix: Fix | NoFix | None, room: Headroom | None) -> None:
    """The files of one run: into the --out directory, and the --junit report."""
    if job.out is not None:
        from gym.report.files import write_run

        wrote_files(write_run(result, job.out, force=job.force, fix=fix, headroom=room), job.out)
    if job.junit is not None:
        from gym.report import junit as junit_xml

        junit_xml.write(job.junit, [junit_xml.of_run(result, fix)])
        plain(stderr=True).print(f"wrote {one_line(job.junit)}")


def _run_many(
    job: _Job,
    runs: int,
    confidence: float,
    workers: int | None,
    scheduler: str | None,
    warmup: float,
) -> NoReturn:
    """--runs: run the seeds seed, seed+1, ... and report the spread, pass rate and pass
    probability; exit with the verdict. Refuses --warmup (its statistics are not shown)."""
    from gym.cli.progress import count_progress
    from gym.explore.montecarlo import run_many
    from gym.explore.parallel import make_executor

    if warmup:
        raise GymError.single(
            None,
            "--warmup",
            "applies to one run's latency statistics, which --runs does not report; "
            "leave it out or drop --runs",
        )
    d, s, warned = _load_for_many(job, runs)
    executor = closing(make_executor(workers, scheduler))
    with count_progress(runs, f"{runs} runs") as report:
        mc = run_many(
            d,
            s,
            runs=runs,
            seed=job.seed,
            engine=job.engine,
            confidence=confidence,
            executor=executor,
            progress=report,
            tick_ms=job.tick_ms,
            max_urls=job.max_urls,
        )
    from gym.explore.montecarlo import unchecked

    off = unchecked(mc.runs)  # known only once the runs have run
    warn(off)
    data = _summary(job, d, s, executor, [*warned, *off], mc)
    if job.as_json:
        print_json(data)
    else:
        from gym.cli.tables import print_many

        print_many(d, s, job.engine, job.seed, runs, confidence, executor, mc)
    _write_many(job, d, s, data, mc)
    raise exit_verdict(mc.verdict == "pass")


def _load_for_many(job: _Job, runs: int) -> tuple[Design | GraphDesign, Scenario, list[str]]:
    """The design and scenario, refused with every problem found (the request engine's URL
    budget over all runs too); the roundings of the engine's grid, warned about and kept."""
    from gym.analysis import rounding
    from gym.api import url_budget, validate

    d, s = design_and_scenario(job.design, job.scenario, job.sets)
    problems = validate(d, s, tick_ms=job.tick_ms)
    if (
        job.engine == "request"
        and (over := url_budget(s, runs, job.max_urls, designs=[d])) is not None
    ):
        problems.append(over)
    refuse(problems)
    warned = rounding.warnings(d, s, engine=job.engine, tick_ms=job.tick_ms)
    warn(warned)
    return d, s, warned


def _summary(
    job: _Job,
    d: Design | GraphDesign,
    s: Scenario,
    executor: Executor,
    warned: list[str],
    mc: MonteCarloResult,
) -> dict[str, Any]:
    """The summary of many runs, as --json prints it and --out writes it."""
    return {
        "design": d.name,
        "design_file": d._source,
        "scenario": s.name,
        "scenario_file": s._source,
        "engine": job.engine,
        "seed": job.seed,
        "tick_ms": job.tick_ms,
        "executor": executor.name,
        "warnings": warned,
        **mc.to_dict(),
    }


def _write_many(
    job: _Job,
    d: Design | GraphDesign,
    s: Scenario,
    data: dict[str, Any],
    mc: MonteCarloResult,
) -> None:
    """The files of many runs: the summary and one CSV row per run into the --out
    directory, and the --junit report."""
    if job.out is not None:
        from gym.report.files import write_runs

        wrote_files(write_runs(data, mc.runs, job.out, force=job.force), job.out)
    if job.junit is not None:
        from gym.report import junit as junit_xml

        junit_xml.write(job.junit, [junit_xml.of_runs(d, s, mc, engine=job.engine)])
        plain(stderr=True).print(f"wrote {one_line(job.junit)}")
