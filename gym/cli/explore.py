"""The commands that explore many designs: ``sweep`` a grid of what-ifs, ``optimize`` for
the cheapest design that passes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gym.cli.console import one_line, plain, print_json, warn
from gym.cli.contract import EXIT_INTERRUPTED, exit_verdict, guarded
from gym.cli.inputs import scenario_of
from gym.cli.options import (
    ConfidenceOpt,
    DesignArg,
    EngineOpt,
    ForceOpt,
    JunitOpt,
    MaxRunsOpt,
    MaxUrlsOpt,
    ScenarioOpt,
    SchedulerOpt,
    SeedOpt,
    SetOpt,
    WorkersOpt,
    check_many,
    file_name,
    force_needs,
    url_limit,
)
from gym.cli.program import app, closing
from gym.core.errors import GymError
from gym.core.limits import DEFAULT_MAX_RUNS


@app.command("sweep")
@guarded
def sweep_cmd(
    design: DesignArg,
    vary: Annotated[
        list[str],
        typer.Option(
            "--vary",
            metavar="PATH=VALUES",
            help="PATH=a..b[:step] or PATH=v1,v2,... (repeatable): the grid.",
            show_default=False,
        ),
    ],
    scenario: ScenarioOpt = None,
    runs: Annotated[int, typer.Option("--runs", help="Seeds per point.", min=1)] = 1,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    confidence: ConfidenceOpt = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--out",
            help="Also write the rows to a .csv or .parquet file.",
            show_default=False,
            parser=file_name,
            metavar="FILE",
        ),
    ] = None,
    force: ForceOpt = False,
    sets: SetOpt = None,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
    max_runs: MaxRunsOpt = DEFAULT_MAX_RUNS,
    max_urls: MaxUrlsOpt = None,
    junit: JunitOpt = None,
) -> None:
    """Run a grid of what-ifs over DESIGN: one row per point (cost, SLOs, pass rate).
    Exit 0 when at least one point passes, 1 when none does. Ctrl-C (or SIGTERM) stops it
    and keeps (and writes, with -o) the rows finished so far."""
    from gym.api import url_budget
    from gym.cli.progress import count_progress
    from gym.explore import sweep
    from gym.explore.parallel import make_executor

    conf = check_many(runs, workers, scheduler, confidence, single_ok=True, seed=seed)
    force_needs(force, output or junit, "-o or --junit")
    if runs == 1 and confidence is not None:
        raise GymError.single(
            None, "--confidence", "applies to many runs per point only; add --runs N (N >= 2)"
        )
    limit = url_limit(max_urls, engine)
    target = sweep.check_output(output, force) if output is not None else None
    junit_file = _junit_file(junit, force)
    axes = sweep.plan(vary, sets)
    if (planned := sweep.size(axes) * runs) > max_runs:
        raise GymError.single(
            None,
            "--max-runs",
            f"the sweep would run {planned:,} simulations, more than the limit of "
            f"{max_runs:,}; allow it with --max-runs {planned}",
        )
    s = scenario_of(scenario)
    if engine == "request" and (over := url_budget(s, planned, limit)) is not None:
        raise GymError([over])
    points = sweep.grid(design, vary, sets)
    if (
        engine == "request"
        and (
            over := url_budget(
                s, planned, limit, designs=[q.design for q in points if q.design is not None]
            )
        )
        is not None
    ):
        raise GymError([over])
    sweep.check_system(points, s)
    executor = closing(make_executor(workers, scheduler))
    total = sum(runs for p in points if p.design is not None)
    try:
        with count_progress(total, f"{len(points)} points x {runs} runs") as report:
            rows = sweep.run(
                points,
                s,
                runs=runs,
                seed=seed,
                engine=engine,
                confidence=conf,
                executor=executor,
                progress=report,
                max_runs=max_runs,
                max_urls=limit,
            )
    except sweep.SweepInterrupted as stop:
        rows, interrupted = stop.rows, True
    else:
        interrupted = False
    warn(sweep.warnings(rows))
    # The rows are printed before the file is written (a write that fails, a full disk or
    # a third Ctrl-C, then loses nothing); an interrupted sweep prints the points it
    # finished and marks the others "not run".
    if as_json:
        print_json(rows)
    else:
        from gym.cli.tables import print_sweep

        print_sweep(rows, [path for path, _ in axes], s.name, engine, runs, seed, conf, executor)
    if junit_file is not None:  # the points that ran, and those that did not (skipped)
        from gym.report import junit as junit_xml

        axis_names = [path for path, _ in axes]
        suites = junit_xml.of_sweep(rows, axis_names, s, runs, conf, design, engine, seed)
        junit_xml.write(junit_file, suites)
        plain(stderr=True).print(f"wrote {one_line(junit_file)}")
    if interrupted:
        done = sum(1 for r in rows if r["status"] == "ok")
        where = ""
        if target is not None:
            # a second Ctrl-C during the write waits for it; a third abandons the write,
            # and then nothing was written, so the message must not say it was
            try:
                sweep.write(rows, target)
            except KeyboardInterrupt:
                where = f"; not written to {one_line(target)} (abandoned)"
            else:
                where = f"; written to {one_line(target)}"
        plain(stderr=True).print(f"interrupted: {done} of {len(rows)} points finished{where}")
        raise typer.Exit(EXIT_INTERRUPTED)
    if target is not None:
        sweep.write(rows, target)
        plain(stderr=True).print(f"wrote {len(rows)} rows to {one_line(target)}")
    any_pass = any(r.get("verdict") == "pass" for r in rows)
    raise exit_verdict(any_pass)


@app.command("optimize")
@guarded
def optimize_cmd(
    design: Annotated[
        Path | None,
        typer.Argument(
            help="Optional base design: its service times and crash policy are kept.",
            show_default=False,
            metavar="DESIGN",
        ),
    ] = None,
    scenario: ScenarioOpt = None,
    runs: Annotated[int, typer.Option("--runs", help="Seeds per candidate design.", min=1)] = 20,
    seed: SeedOpt = 0,
    confidence: ConfidenceOpt = None,
    max_cost: Annotated[
        int | None,
        typer.Option(
            "--max-cost",
            help="Search up to this many units (default: the scenario's cost SLO, else 20).",
            min=1,
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--out",
            help="Write the design to this YAML file (.yaml or .yml).",
            show_default=False,
            parser=file_name,
            metavar="FILE",
        ),
    ] = None,
    force: ForceOpt = False,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    sets: SetOpt = None,
    max_runs: MaxRunsOpt = DEFAULT_MAX_RUNS,
    junit: JunitOpt = None,
) -> None:
    """Find the cheapest design that passes every SLO, and say why nothing cheaper does.
    Exit 0 when one is found, 1 when none within the cost limit passes."""
    from gym.api import load_inputs
    from gym.cli.progress import search_progress
    from gym.explore import optimize, unit_space
    from gym.explore.parallel import make_executor

    conf = check_many(runs, workers, scheduler, confidence, single_ok=True, seed=seed)
    force_needs(force, output or junit, "-o or --junit")
    if runs == 1 and confidence is not None:
        raise GymError.single(
            None, "--confidence", "applies to many runs only; add --runs N (N >= 2)"
        )
    target = None
    if output is not None:
        from gym.core.outputs import check_file

        target = check_file(output, "-o", suffixes=(".yaml", ".yml"), force=force)
    junit_file = _junit_file(junit, force)
    if sets and design is None:
        raise GymError.single(None, "--set", "needs a base DESIGN to change")
    unit_space.check_sets(sets or [])
    if design is not None:  # the design's and the scenario's problems in one round
        (base,), s = load_inputs([design], scenario, sets)
    else:
        s, base = scenario_of(scenario), None
    space = unit_space.space_for(s, base)
    unit_space.check_sets(sets or [], space.searched)
    optimize.check(s, runs=runs, confidence=conf, max_cost=max_cost, max_runs=max_runs, space=space)
    executor = closing(make_executor(workers, scheduler))
    with search_progress() as (report, plan):
        opt = optimize.search(
            s,
            base=base,
            runs=runs,
            seed=seed,
            confidence=conf,
            max_cost=max_cost,
            executor=executor,
            progress=report,
            plan=plan,
            max_runs=max_runs,
        )
    text = opt.design_file(s.name, seed, runs)
    # The answer is printed before the file is written: a write that fails loses nothing.
    if as_json:
        print_json(opt.to_dict())
    else:
        from gym.cli.tables import print_optimum

        print_optimum(opt, s, runs, conf, executor, text)
    if target is not None and text is not None:
        from gym.core.outputs import write_file

        write_file(target, text, "-o")
        plain(stderr=as_json).print(f"\nwrote {one_line(target)}")
    if junit_file is not None:
        from gym.report import junit as junit_xml

        junit_xml.write(junit_file, junit_xml.of_optimum(opt, s))
        plain(stderr=True).print(f"wrote {one_line(junit_file)}")
    raise exit_verdict(opt.best is not None)


def _junit_file(junit: Path | None, force: bool) -> Path | None:
    """The --junit path checked before any work (an .xml file: never the -o file)."""
    if junit is None:
        return None
    from gym.report import junit as junit_xml

    return junit_xml.check(junit, force)
