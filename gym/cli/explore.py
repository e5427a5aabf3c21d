"""The commands that explore many designs: ``sweep`` a grid of what-ifs, ``optimize`` for
the cheapest design that passes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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

if TYPE_CHECKING:
    from gym.explore.optimize import Optimum
    from gym.explore.parallel import Executor
    from gym.explore.sweep import Point
    from gym.models import Design, Scenario
    from gym.system.graph import GraphDesign


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
    from gym.explore.parallel import make_executor

    conf, limit, target, junit_file = _check_sweep_options(
        runs, workers, scheduler, confidence, seed, force, output, junit, max_urls, engine
    )
    plan = _plan_sweep(design, vary, sets, scenario, runs, seed, engine, conf, max_runs, limit)
    executor = closing(make_executor(workers, scheduler))
    rows, interrupted = _run_sweep(plan, executor)
    _print_rows(plan, rows, executor, as_json)
    _write_sweep_junit(plan, rows, junit_file)
    _write_rows(rows, target, interrupted)
    raise exit_verdict(any(r.get("verdict") == "pass" for r in rows))


@dataclass(frozen=True)
class _Sweep:
    """A sweep checked and planned before any run: its grid (axes and points), scenario,
    and how each point runs."""

    design: Path
    axes: list[tuple[str, Sequence[Any]]]
    points: list[Point]
    scenario: Scenario
    runs: int
    seed: int
    engine: str
    confidence: float
    max_runs: int
    max_urls: int

    @property
    def axis_names(self) -> list[str]:
        """The paths the grid varies, in order."""
        return [path for path, _ in self.axes]


def _check_sweep_options(
    runs: int,
    workers: int | None,
    scheduler: str | None,
    confidence: float | None,
    seed: int,
    force: bool,
    output: Path | None,
    junit: Path | None,
    max_urls: int | None,
    engine: str,
) -> tuple[float, int, Path | None, Path | None]:
    """The sweep's options, checked before any work; returns the confidence, the URL limit,
    the -o file and the --junit file."""
    from gym.explore import sweep

    conf = check_many(runs, workers, scheduler, confidence, single_ok=True, seed=seed)
    force_needs(force, output or junit, "-o or --junit")
    if runs == 1 and confidence is not None:
        raise GymError.single(
            None, "--confidence", "applies to many runs per point only; add --runs N (N >= 2)"
        )
    limit = url_limit(max_urls, engine)
    target = sweep.check_output(output, force) if output is not None else None
    return conf, limit, target, _junit_file(junit, force)


def _plan_sweep(
    design: Path,
    vary: list[str],
    sets: list[str] | None,
    scenario: Path | None,
    runs: int,
    seed: int,
    engine: str,
    confidence: float,
    max_runs: int,
    max_urls: int,
) -> _Sweep:
    """The grid and the scenario, refused before any run when they are too big (--max-runs,
    the request engine's URL limit) or a point's design does not fit the scenario."""
    from gym.api import url_budget
    from gym.explore import sweep

    axes = sweep.plan(vary, sets)
    if (planned := sweep.size(axes) * runs) > max_runs:
        raise GymError.single(
            None,
            "--max-runs",
            f"the sweep would run {planned:,} simulations, more than the limit of "
            f"{max_runs:,}; allow it with --max-runs {planned}",
        )
    s = scenario_of(scenario)
    if engine == "request" and (over := url_budget(s, planned, max_urls)) is not None:
        raise GymError([over])
    points = sweep.grid(design, vary, sets)
    if (
        engine == "request"
        and (
            over := url_budget(
                s, planned, max_urls, designs=[q.design for q in points if q.design is not None]
            )
        )
        is not None
    ):
        raise GymError([over])
    sweep.check_system(points, s)
    return _Sweep(design, axes, points, s, runs, seed, engine, confidence, max_runs, max_urls)


def _run_sweep(plan: _Sweep, executor: Executor) -> tuple[list[dict[str, Any]], bool]:
    """Run every point (a progress bar on terminals); returns the rows, and whether Ctrl-C
    (or SIGTERM) interrupted the sweep (its rows then mark the points not run)."""
    from gym.cli.progress import count_progress
    from gym.explore import sweep

    total = sum(plan.runs for p in plan.points if p.design is not None)
    try:
        with count_progress(total, f"{len(plan.points)} points x {plan.runs} runs") as report:
            rows = sweep.run(
                plan.points,
                plan.scenario,
                runs=plan.runs,
                seed=plan.seed,
                engine=plan.engine,
                confidence=plan.confidence,
                executor=executor,
                progress=report,
                max_runs=plan.max_runs,
                max_urls=plan.max_urls,
            )
    except sweep.SweepInterrupted as stop:
        return stop.rows, True
    return rows, False


def _print_rows(
    plan: _Sweep, rows: list[dict[str, Any]], executor: Executor, as_json: bool
) -> None:
    """The rows' warnings, then the rows: as JSON or a table (an interrupted sweep's
    unfinished points marked "not run"). They are printed before the file is written: a
    write that fails, a full disk or a third Ctrl-C, then loses nothing."""
    from gym.explore import sweep

    warn(sweep.warnings(rows))
    if as_json:
        print_json(rows)
    else:
        from gym.cli.tables import print_sweep

        print_sweep(
            rows,
            plan.axis_names,
            plan.scenario.name,
            plan.engine,
            plan.runs,
            plan.seed,
            plan.confidence,
            executor,
        )


def _write_sweep_junit(plan: _Sweep, rows: list[dict[str, Any]], junit_file: Path | None) -> None:
    """The --junit report, if asked for: the points that ran, and those that did not
    (skipped)."""
    if junit_file is None:
        return
    from gym.report import junit as junit_xml

    suites = junit_xml.of_sweep(
        rows,
        plan.axis_names,
        plan.scenario,
        plan.runs,
        plan.confidence,
        plan.design,
        plan.engine,
        plan.seed,
    )
    junit_xml.write(junit_file, suites)
    plain(stderr=True).print(f"wrote {one_line(junit_file)}")


def _write_rows(rows: list[dict[str, Any]], target: Path | None, interrupted: bool) -> None:
    """Write the rows to the -o file, if any. An interrupted sweep says how many points
    finished (and whether they were written), and exits 130."""
    from gym.explore import sweep

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
    conf, target, junit_file = _check_optimize_options(
        design, runs, workers, scheduler, confidence, seed, force, output, junit, sets
    )
    s, base = _optimize_inputs(design, scenario, sets, runs, conf, max_cost, max_runs)
    opt, executor = _search(s, base, runs, seed, conf, max_cost, max_runs, workers, scheduler)
    text = opt.design_file(s.name, seed, runs)
    _print_optimum(opt, s, runs, conf, executor, text, as_json)
    _write_optimum(opt, s, text, target, junit_file, as_json)
    raise exit_verdict(opt.best is not None)


def _check_optimize_options(
    design: Path | None,
    runs: int,
    workers: int | None,
    scheduler: str | None,
    confidence: float | None,
    seed: int,
    force: bool,
    output: Path | None,
    junit: Path | None,
    sets: list[str] | None,
) -> tuple[float, Path | None, Path | None]:
    """The search's options, checked before any work; returns the confidence, the -o file
    and the --junit file."""
    from gym.explore import unit_space

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
    return conf, target, junit_file


def _optimize_inputs(
    design: Path | None,
    scenario: Path | None,
    sets: list[str] | None,
    runs: int,
    confidence: float,
    max_cost: int | None,
    max_runs: int,
) -> tuple[Scenario, Design | GraphDesign | None]:
    """The scenario and the base design, if any, loaded and checked with the search they
    would take (before any run); returns both."""
    from gym.api import load_inputs
    from gym.explore import optimize, unit_space

    if design is not None:  # the design's and the scenario's problems in one round
        (base,), s = load_inputs([design], scenario, sets)
    else:
        s, base = scenario_of(scenario), None
    space = unit_space.space_for(s, base)
    unit_space.check_sets(sets or [], space.searched)
    optimize.check(
        s, runs=runs, confidence=confidence, max_cost=max_cost, max_runs=max_runs, space=space
    )
    return s, base


def _search(
    s: Scenario,
    base: Design | GraphDesign | None,
    runs: int,
    seed: int,
    confidence: float,
    max_cost: int | None,
    max_runs: int,
    workers: int | None,
    scheduler: str | None,
) -> tuple[Optimum, Executor]:
    """Search for the cheapest design that passes (a progress bar on terminals); returns
    the answer and the executor it ran on."""
    from gym.cli.progress import search_progress
    from gym.explore import optimize
    from gym.explore.parallel import make_executor

    executor = closing(make_executor(workers, scheduler))
    with search_progress() as (report, plan):
        opt = optimize.search(
            s,
            base=base,
            runs=runs,
            seed=seed,
            confidence=confidence,
            max_cost=max_cost,
            executor=executor,
            progress=report,
            plan=plan,
            max_runs=max_runs,
        )
    return opt, executor


def _print_optimum(
    opt: Optimum,
    s: Scenario,
    runs: int,
    confidence: float,
    executor: Executor,
    text: str | None,
    as_json: bool,
) -> None:
    """The answer, as one JSON object or as tables (with the design file's text). It is
    printed before the file is written: a write that fails loses nothing."""
    if as_json:
        print_json(opt.to_dict())
    else:
        from gym.cli.tables import print_optimum

        print_optimum(opt, s, runs, confidence, executor, text)


def _write_optimum(
    opt: Optimum,
    s: Scenario,
    text: str | None,
    target: Path | None,
    junit_file: Path | None,
    as_json: bool,
) -> None:
    """The design found, to the -o file (the note on stderr with --json), and the --junit
    report."""
    if target is not None and text is not None:
        from gym.core.outputs import write_file

        write_file(target, text, "-o")
        plain(stderr=as_json).print(f"\nwrote {one_line(target)}")
    if junit_file is not None:
        from gym.report import junit as junit_xml

        junit_xml.write(junit_file, junit_xml.of_optimum(opt, s))
        plain(stderr=True).print(f"wrote {one_line(junit_file)}")


def _junit_file(junit: Path | None, force: bool) -> Path | None:
    """The --junit path checked before any work (an .xml file: never the -o file)."""
    if junit is None:
        return None
    from gym.report import junit as junit_xml

    return junit_xml.check(junit, force)
