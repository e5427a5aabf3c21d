"""``gym run``: one design under a scenario, once or over many seeds."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
    from gym.api import simulate
    from gym.system.crawler import expected_urls

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
    if runs > 1:
        if warmup:
            raise GymError.single(
                None,
                "--warmup",
                "applies to one run's latency statistics, which --runs does not report; "
                "leave it out or drop --runs",
            )
        _run_many(
            design,
            scenario,
            sets,
            seed,
            engine,
            runs,
            conf,
            workers,
            scheduler,
            as_json,
            limit,
            tick_ms,
            out,
            force,
            junit_file,
        )
    d, s = design_and_scenario(design, scenario, sets)
    from gym.cli.progress import PROGRESS_ABOVE_URLS, run_progress

    long_run = engine == "request" and expected_urls(s, d) > PROGRESS_ABOVE_URLS
    with run_progress(long_run, s.duration_s) as report:
        result = simulate(
            d,
            s,
            seed=seed,
            engine=engine,
            tick_ms=tick_ms,
            warmup_s=warmup,
            max_urls=limit,
            progress=report,
        )
    warn(result.warnings)
    fix = None
    stopped = None  # what Ctrl-C interrupted after the run
    if not result.passed and not no_fix:
        from gym.cli.progress import status
        from gym.explore.fix import suggest

        try:
            with status("searching for the cheapest change that passes") as counted:
                fix = suggest(result, user_sets=sets or (), progress=counted)
        except KeyboardInterrupt:  # the run is done: shown, then the interrupt
            stopped = "the fix search (--no-fix skips it)"
    room = None
    if result.passed and headroom is not False:
        from gym.cli.progress import status
        from gym.explore import headroom as margins

        try:
            with status("working out how far it is from failing"):
                room = margins.headroom(result, None if headroom else margins.AUTO_TICKS)
        except KeyboardInterrupt:
            stopped = "the headroom (--no-headroom skips it)"
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
    if out is not None:
        from gym.report.files import write_run

        wrote_files(write_run(result, out, force=force, fix=fix, headroom=room), out)
    if junit_file is not None:
        from gym.report import junit as junit_xml

        junit_xml.write(junit_file, [junit_xml.of_run(result, fix)])
        plain(stderr=True).print(f"wrote {one_line(junit_file)}")
    if stopped is not None:
        plain(stderr=True).print(f"{stopped} was interrupted; the run above is complete")
        raise KeyboardInterrupt
    raise exit_verdict(result.passed)


def _run_many(
    design: Path,
    scenario: Path | None,
    sets: list[str] | None,
    seed: int,
    engine: str,
    runs: int,
    confidence: float,
    workers: int | None,
    scheduler: str | None,
    as_json: bool,
    max_urls: int,
    tick_ms: int,
    out: Path | None,
    force: bool,
    junit: Path | None,
) -> None:
    from gym.analysis import rounding
    from gym.api import url_budget, validate
    from gym.cli.progress import count_progress
    from gym.explore.montecarlo import run_many
    from gym.explore.parallel import make_executor

    d, s = design_and_scenario(design, scenario, sets)
    problems = validate(d, s, tick_ms=tick_ms)
    if engine == "request" and (over := url_budget(s, runs, max_urls, designs=[d])) is not None:
        problems.append(over)
    refuse(problems)
    warned = rounding.warnings(d, s, engine=engine, tick_ms=tick_ms)
    warn(warned)
    executor = closing(make_executor(workers, scheduler))
    with count_progress(runs, f"{runs} runs") as report:
        mc = run_many(
            d,
            s,
            runs=runs,
            seed=seed,
            engine=engine,
            confidence=confidence,
            executor=executor,
            progress=report,
            tick_ms=tick_ms,
            max_urls=max_urls,
        )
    data = {
        "design": d.name,
        "design_file": d._source,
        "scenario": s.name,
        "scenario_file": s._source,
        "engine": engine,
        "seed": seed,
        "tick_ms": tick_ms,
        "executor": executor.name,
        "warnings": warned,
        **mc.to_dict(),
    }
    if as_json:
        print_json(data)
    else:
        from gym.cli.tables import print_many

        print_many(d, s, engine, seed, runs, confidence, executor, mc)
    if out is not None:
        from gym.report.files import write_runs

        wrote_files(write_runs(data, mc.runs, out, force=force), out)
    if junit is not None:
        from gym.report import junit as junit_xml

        junit_xml.write(junit, [junit_xml.of_runs(d, s, mc, engine=engine)])
        plain(stderr=True).print(f"wrote {one_line(junit)}")
    raise exit_verdict(mc.verdict == "pass")
