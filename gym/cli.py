"""The ``gym`` command: parse, call the API, print. No model logic lives here."""

from __future__ import annotations

import functools
import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gym import costing
from gym.engines.request import expected_urls
from gym.errors import GymError, Problem
from gym.explain import Explanation
from gym.loading import dump_yaml, load_design, load_scenario
from gym.parallel import Executor
from gym.result import Result
from gym.simulate import DEFAULT_MAX_URLS, ENGINES, default_scenario, simulate, validate


def _interruptible(command: Callable[..., None]) -> Callable[..., None]:
    """Ctrl-C ends a command with one line and exit status 130, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            command(*args, **kwargs)
        except KeyboardInterrupt:
            Console(stderr=True, highlight=False).print("interrupted")
            raise typer.Exit(EXIT_INTERRUPTED) from None

    return wrapper


app = typer.Typer(
    name="gym",
    help="The crawler SLO gym: score a web crawler's capacity design against SLOs under chaos.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click usage errors: short, no boxes
)

EXIT_PASS, EXIT_FAIL, EXIT_INVALID = 0, 1, 2
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report it

DesignArg = Annotated[
    Path,
    typer.Argument(
        help="Design file (YAML), e.g. designs/reference.yaml.",
        show_default=False,
        metavar="DESIGN",
    ),
]
ScenarioOpt = Annotated[
    Path | None,
    typer.Option(
        "--scenario",
        "-s",
        help="Scenario file (YAML). Default: scenarios/crawler-chaos.yaml.",
        show_default=False,
    ),
]


def _fail_invalid(err: GymError) -> typer.Exit:
    err_console = Console(stderr=True, highlight=False, soft_wrap=True)
    for problem in err.problems:
        err_console.print(f"error: {problem}", markup=False)
    return typer.Exit(EXIT_INVALID)


@app.command()
@_interruptible
def run(
    design: DesignArg,
    scenario: ScenarioOpt = None,
    seed: Annotated[int, typer.Option(help="Random seed (>= 0).", min=0)] = 0,
    engine: Annotated[
        str, typer.Option(help=f"Engine: {' | '.join(ENGINES)}.", show_default=True)
    ] = "flow",
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
            help="Leave URLs that arrived before this many seconds out of the latency statistics.",
            min=0,
        ),
    ] = 0.0,
    max_urls: Annotated[
        int,
        typer.Option(
            "--max-urls",
            help="The request engine refuses runs expected to offer more URLs than this.",
            min=1,
        ),
    ] = DEFAULT_MAX_URLS,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of tables.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Also write the per-window CSV, the summary JSON, the "
            "resolved design and scenario and the plots into this directory.",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Write into an --out directory that holds files.")
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
    confidence: ConfidenceOpt = 0.8,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
) -> None:
    """Simulate DESIGN under a scenario and score it. Exit 0 PASS, 1 FAIL, 2 invalid input."""
    if runs > 1:
        _run_many(
            design,
            scenario,
            sets,
            seed,
            engine,
            runs,
            confidence,
            workers,
            scheduler,
            as_json,
            max_urls,
        )
    try:
        if out is not None:
            from gym.report.files import check_target

            check_target(out, force, "--out", is_dir=True)
        d = load_design(design, sets)
        s = load_scenario(scenario or default_scenario())
        long_run = engine == "request" and expected_urls(s) > _PROGRESS_ABOVE_URLS
        with _progress(long_run, s.duration_s) as report:
            result = simulate(
                d,
                s,
                seed=seed,
                engine=engine,
                tick_ms=tick_ms,
                warmup_s=warmup,
                max_urls=max_urls,
                progress=report,
            )
    except GymError as err:
        raise _fail_invalid(err) from None
    if as_json:
        sys.stdout.write(json.dumps(result.to_json(), indent=2, allow_nan=False) + "\n")
    else:
        _print_result(result, Console(highlight=False))
    if out is not None:
        from gym.report.files import write_run

        written = write_run(result, out, force=force)
        Console(stderr=True, highlight=False, soft_wrap=True).print(
            f"wrote {len(written)} files to {out}/: " + ", ".join(p.name for p in written)
        )
    raise typer.Exit(EXIT_PASS if result.passed else EXIT_FAIL)


SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="What-if on the design, PATH=VALUE (repeatable), e.g. "
        "--set cache.hit_ratio=0.6. Validated like the file.",
        show_default=False,
        metavar="PATH=VALUE",
    ),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        help="Local worker processes (default: one per core; 1: none).",
        min=1,
        show_default=False,
    ),
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="Run on a Dask distributed scheduler at this address "
        "(tcp://host:port) instead of local processes; needs the dask extra.",
        show_default=False,
    ),
]
ConfidenceOpt = Annotated[
    float,
    typer.Option(
        "--confidence",
        help="Verdict rule over many runs: PASS only if the 95% "
        "Wilson lower bound of the pass probability is at least this.",
        min=0,
        max=1,
    ),
]


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
    max_urls: int = DEFAULT_MAX_URLS,
) -> None:
    from gym.montecarlo import run_many, runs_needed
    from gym.parallel import make_executor

    try:
        d = load_design(design, sets)
        s = load_scenario(scenario or default_scenario())
        problems = validate(d, s)
        if engine == "request" and (total := expected_urls(s) * runs) > max_urls:
            problems.append(
                Problem(
                    None,
                    "--max-urls",
                    f"{runs} request-engine runs would simulate about {total:,.0f} URLs, more "
                    f"than the limit of {max_urls:,}; allow it with --max-urls "
                    f"{int(total * 1.1)}, or use the flow engine",
                )
            )
        if problems:
            raise GymError(problems)
        executor = _closing(make_executor(workers, scheduler))
        with _count_progress(runs, f"{runs} runs") as report:
            mc = run_many(
                d,
                s,
                runs=runs,
                seed=seed,
                engine=engine,
                confidence=confidence,
                executor=executor,
                progress=report,
            )
    except GymError as err:
        raise _fail_invalid(err) from None
    if as_json:
        data = {
            "design": d.name,
            "design_file": d._source,
            "scenario": s.name,
            "scenario_file": s._source,
            "engine": engine,
            "seed": seed,
            "executor": executor.name,
            **mc.to_json(),
        }
        sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")
    else:
        console = Console(highlight=False, soft_wrap=True)
        console.print(
            f"design [bold]{d.name}[/] ({d._source}), scenario [bold]{s.name}[/], "
            f"engine {engine}, seeds {seed}..{seed + runs - 1} ({executor.name})"
        )
        table = Table(show_edge=False, pad_edge=False)
        for col in ("SLO", "target", "mean", "std", "min", "max", "pass rate"):
            table.add_column(col, justify="left" if col == "SLO" else "right")
        for st in mc.slos:
            table.add_row(
                st.name,
                f"{st.op} {st.target:g}",
                *(_fmt_measured(st.name, v) for v in (st.mean, st.std, st.min, st.max)),
                f"{st.pass_rate:.0%}",
            )
        console.print(table)
        low, high = mc.ci
        console.print(
            f"\nPasses every SLO in {mc.passes}/{mc.n} runs: pass probability "
            f"{mc.pass_probability:.2f}, 95% interval [{low:.2f}, {high:.2f}] (Wilson)."
        )
        verdict = "[bold green]PASS[/]" if mc.verdict == "pass" else "[bold red]FAIL[/]"
        console.print(f"Verdict: {verdict} (rule: PASS if the lower bound >= {confidence:g})")
        if mc.passes == mc.n and mc.verdict == "fail":
            console.print(
                f"Every run passed, but {runs} runs cannot show a pass probability of "
                f"{confidence:g} with 95% confidence; use --runs "
                f"{runs_needed(confidence)} or more."
            )
    raise typer.Exit(EXIT_PASS if mc.verdict == "pass" else EXIT_FAIL)


_OPEN: list[Executor] = []


def _closing(executor: Executor) -> Executor:
    """Remember an executor so that it is closed when the command ends (Dask clients)."""
    _OPEN.append(executor)
    return executor


@app.callback()
def _main_callback(ctx: typer.Context) -> None:
    """The crawler SLO gym: score a web crawler's capacity design against SLOs under chaos."""
    ctx.call_on_close(_close_executors)


def _close_executors() -> None:
    while _OPEN:
        _OPEN.pop().close()


@contextmanager
def _count_progress(total: int, what: str) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on stderr (terminals only), advanced once per finished task."""
    console = Console(stderr=True)
    if not console.is_terminal or total < 2:
        yield None
        return
    columns = (
        TextColumn(what),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("work", total=total)
        yield lambda n: bar.advance(task, n)


DesignsArg = Annotated[
    list[Path], typer.Argument(help="Design files (YAML).", show_default=False, metavar="DESIGN...")
]
SeedOpt = Annotated[int, typer.Option(help="Random seed (>= 0).", min=0)]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace an existing file.")]
EngineOpt = Annotated[str, typer.Option(help=f"Engine: {' | '.join(ENGINES)}.")]


def _results(
    designs: list[Path],
    scenario: Path | None,
    seed: int,
    engine: str,
    sets: list[str] | None = None,
) -> list[Result]:
    s = load_scenario(scenario or default_scenario())
    loaded = [load_design(d, sets) for d in designs]
    return [simulate(d, s, seed=seed, engine=engine) for d in loaded]


def _results_for_file(
    output: Path,
    force: bool,
    designs: list[Path],
    scenario: Path | None,
    seed: int,
    engine: str,
    sets: list[str] | None,
) -> list[Result]:
    """Check that ``output`` may be written, then run the designs; invalid input exits 2."""
    from gym.report.files import check_target

    try:
        check_target(output, force, "-o", is_dir=False)
        return _results(designs, scenario, seed, engine, sets)
    except GymError as err:
        raise _fail_invalid(err) from None


@app.command("compare")
@_interruptible
def compare_cmd(
    designs: DesignsArg,
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    sets: SetOpt = None,
) -> None:
    """Run several designs under one scenario and seed; show them side by side."""
    from gym.compare import Comparison

    try:
        comparison = Comparison(_results(designs, scenario, seed, engine, sets))
    except GymError as err:
        raise _fail_invalid(err) from None
    if as_json:
        sys.stdout.write(json.dumps(comparison.to_json(), indent=2, allow_nan=False) + "\n")
        return
    console = Console(highlight=False, soft_wrap=True)
    rs = comparison.results
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("")
    for r in rs:
        table.add_column(str(r.design.name), justify="right")
    table.add_row("verdict", *[("[green]PASS[/]" if r.passed else "[red]FAIL[/]") for r in rs])
    for i, chk in enumerate(rs[0].checks):
        cells = []
        for r in rs:
            c = r.checks[i]
            mark = "" if c.passed else " [red]x[/]"
            cells.append(_fmt_measured(c.name, c.measured) + mark)
        table.add_row(f"{chk.name} ({chk.op} {chk.target:g})", *cells)
    if not any(c.name == "cost_units" for c in rs[0].checks):
        table.add_row("cost_units", *[str(r.metrics.cost_units) for r in rs])
    table.add_row("failed URLs", *[f"{r.metrics.failed:,}" for r in rs])
    table.add_row(
        "peak at",
        *[f"{r.metrics.peak_saturation()[1]} t={r.metrics.peak_saturation()[2]:g}s" for r in rs],
    )
    console.print(f"scenario {rs[0].scenario.name}, engine {rs[0].engine}, seed {rs[0].seed}")
    console.print(table)
    console.print("\n[bold]Differences that matter[/]")
    for line in comparison.differences():
        console.print(f"- {line}", markup=False)


@app.command("plot")
@_interruptible
def plot_cmd(
    designs: DesignsArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="PNG file to write.")],
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    force: ForceOpt = False,
    sets: SetOpt = None,
) -> None:
    """Overlay several designs: saturation, served URLs and frontier backlog over time."""
    results = _results_for_file(output, force, designs, scenario, seed, engine, sets)
    from gym.report import plots

    plots.overlay(results).savefig(output, dpi=110, bbox_inches="tight")
    Console(highlight=False, soft_wrap=True).print(f"wrote {output}")


@app.command("report")
@_interruptible
def report_cmd(
    design: DesignArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")],
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    force: ForceOpt = False,
    sets: SetOpt = None,
) -> None:
    """Write a self-contained HTML report of one run (verdict, tables, plots, timeline)."""
    (result,) = _results_for_file(output, force, [design], scenario, seed, engine, sets)
    from gym.report.html import render

    output.write_text(render(result), encoding="utf-8")
    Console(highlight=False, soft_wrap=True).print(
        f"wrote {output} ({result.design.name}: {result.verdict.upper()})"
    )


@app.command("sweep")
@_interruptible
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
    confidence: ConfidenceOpt = 0.8,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="Also write the rows to a .csv or .parquet file.",
            show_default=False,
        ),
    ] = None,
    force: ForceOpt = False,
    sets: SetOpt = None,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
    max_runs: Annotated[
        int, typer.Option("--max-runs", help="Refuse sweeps of more simulations than this.", min=1)
    ] = 200_000,
    max_urls: Annotated[
        int,
        typer.Option(
            "--max-urls",
            help="With the request engine, refuse sweeps that "
            "would simulate more URLs than this in all.",
            min=1,
        ),
    ] = DEFAULT_MAX_URLS,
) -> None:
    """Run a grid of what-ifs over DESIGN: one row per point (cost, SLOs, pass rate).
    Ctrl-C stops it and keeps (and writes, with -o) the rows finished so far."""
    from gym import sweep
    from gym.parallel import make_executor

    try:
        if output is not None:
            from gym.report.files import check_target

            check_target(output, force, "-o", is_dir=False)
            if output.suffix.lower() not in (".csv", ".parquet", ".pq"):
                raise GymError.single(str(output), None, "-o takes a .csv or a .parquet file")
        s = load_scenario(scenario or default_scenario())
        points = sweep.grid(design, vary, sets)
        executor = _closing(make_executor(workers, scheduler))
        total = sum(runs for p in points if p.design is not None)
        try:
            with _count_progress(total, f"{len(points)} points x {runs} runs") as report:
                rows = sweep.run(
                    points,
                    s,
                    runs=runs,
                    seed=seed,
                    engine=engine,
                    confidence=confidence,
                    executor=executor,
                    progress=report,
                    max_runs=max_runs,
                    max_urls=max_urls,
                )
        except sweep.SweepInterrupted as stop:
            done = sum(1 for r in stop.rows if r["status"] == "ok")
            where = ""
            if output is not None:
                sweep.write(stop.rows, output)
                where = f"; written to {output}"
            Console(stderr=True, highlight=False, soft_wrap=True).print(
                f"interrupted: {done} of {len(stop.rows)} points finished{where}"
            )
            raise typer.Exit(EXIT_INTERRUPTED) from None
        if output is not None:
            sweep.write(rows, output)
    except GymError as err:
        raise _fail_invalid(err) from None
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2, allow_nan=False) + "\n")
        return
    console = _wide_console()
    params = [sweep.parse_vary(v)[0] for v in vary]
    table = Table(show_edge=False, pad_edge=False)
    slo_cols = [n for n in _slo_names(rows) if n != "cost_units"]
    for col in (*params, "cost", *[_SHORT.get(n, n) for n in slo_cols], "passes", "verdict"):
        table.add_column(col, justify="right")
    for row in rows:
        cells = [str(row[p]) for p in params]
        if row["status"] != "ok":
            table.add_row(
                *cells,
                "-",
                *["-" for _ in slo_cols],
                "-",
                f"[red]invalid[/]: {row['error']}",
            )
            continue
        cells.append(str(row["cost_units"]))
        for n in slo_cols:
            rate = row[f"{n}_pass_rate"]
            mark = "" if rate == 1 else " [red]x[/]" if rate == 0 else f" ({rate:.0%})"
            cells.append(_fmt_measured(n, row[f"{n}_mean"]) + mark)
        cells.append(f"{round(row['pass_probability'] * row['runs'])}/{row['runs']}")
        cells.append("[green]PASS[/]" if row["verdict"] == "pass" else "[red]FAIL[/]")
        table.add_row(*cells)
    rule = (
        "each point's verdict is its run's"
        if runs == 1
        else f"verdict: PASS if the 95% Wilson lower bound of the pass rate >= {confidence:g}"
    )
    console.print(
        f"scenario {s.name}, engine {engine}, {runs} run(s) per point from seed {seed} "
        f"({executor.name}); SLO columns are means, x: failed in every run; {rule}"
    )
    console.print(table)
    if output is not None:
        console.print(f"wrote {len(rows)} rows to {output}")


_SHORT = {"throughput_rps": "throughput/s", "peak_saturation": "peak sat."}


def _wide_console() -> Console:
    """Tables of many columns: the terminal's width, or 160 columns when not a terminal."""
    probe = Console()
    width = None if probe.is_terminal else 160
    return Console(highlight=False, soft_wrap=True, width=width)


def _slo_names(rows: list[dict[str, object]]) -> list[str]:
    from gym.scoring import SLO_NAMES

    return [n for n in SLO_NAMES if any(f"{n}_mean" in r for r in rows)]


@app.command("optimize")
@_interruptible
def optimize_cmd(
    design: Annotated[
        Path | None,
        typer.Argument(
            help="Optional base design: its service times and crash policy are kept.",
            show_default=False,
            metavar="[DESIGN]",
        ),
    ] = None,
    scenario: ScenarioOpt = None,
    runs: Annotated[int, typer.Option("--runs", help="Seeds per candidate design.", min=1)] = 20,
    seed: SeedOpt = 0,
    confidence: ConfidenceOpt = 0.8,
    max_cost: Annotated[
        int | None,
        typer.Option(
            "--max-cost",
            help="Search up to this many units (default: the scenario's cost SLO, else 20).",
            min=4,
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o", "--output", help="Write the design to this YAML file.", show_default=False
        ),
    ] = None,
    force: ForceOpt = False,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    sets: SetOpt = None,
) -> None:
    """Find the cheapest design that passes every SLO, and say why nothing cheaper does."""
    from gym.optimize import design_mapping, search
    from gym.parallel import make_executor

    try:
        if output is not None:
            from gym.report.files import check_target

            check_target(output, force, "-o", is_dir=False)
        s = load_scenario(scenario or default_scenario())
        if sets and design is None:
            raise GymError.single(None, "--set", "needs a base DESIGN to change")
        base = load_design(design, sets) if design is not None else None
        executor = _closing(make_executor(workers, scheduler))
        with _count_progress(0, "searching") as report:
            opt = search(
                s,
                base=base,
                runs=runs,
                seed=seed,
                confidence=confidence,
                max_cost=max_cost,
                executor=executor,
                progress=report,
            )
    except GymError as err:
        raise _fail_invalid(err) from None
    text = None
    if opt.best is not None:
        low, high = opt.best.result.ci
        header = (
            f"# The cheapest design found by `gym optimize` for scenario {s.name}: "
            f"{opt.best.cost} units.\n# Passes every SLO in {opt.best.result.passes}/"
            f"{opt.best.result.n} runs (seeds {seed}..{seed + runs - 1}); pass probability "
            f"95% interval [{low:.2f}, {high:.2f}].\n"
        )
        text = header + dump_yaml(design_mapping(opt.best.design))
        if output is not None:
            output.write_text(text)
    if as_json:
        sys.stdout.write(json.dumps(opt.to_json(), indent=2, allow_nan=False) + "\n")
    else:
        console = Console(highlight=False, soft_wrap=True)
        console.print(
            f"scenario {s.name}: {opt.evaluated} unit-aligned designs x {runs} runs, "
            f"confidence {confidence:g} ({executor.name})"
        )
        if text is None or opt.best is None:
            console.print("[red]No design within the cost limit passes every SLO.[/]")
        else:
            console.print(
                f"\n[bold]Cheapest passing design: {opt.best.cost} units[/]"
                f" ({opt.best.describe()})\n"
            )
            console.print(text, markup=False)
        console.print("[bold]Why nothing cheaper passes[/]")
        for line in opt.why_nothing_cheaper():
            console.print(f"- {line}", markup=False)
        if opt.runner_ups:
            console.print("\n[bold]More margin for more units[/]")
            for c in opt.runner_ups:
                console.print(
                    f"- {c.cost} units ({c.describe()}): smallest SLO margin {c.margin():.1%}",
                    markup=False,
                )
        if output is not None and text is not None:
            console.print(f"\nwrote {output}")
    raise typer.Exit(EXIT_PASS if opt.best is not None else EXIT_FAIL)


@app.command("estimate")
def estimate_cmd(
    design: Annotated[
        Path | None,
        typer.Argument(
            help="Optional design: its cache hit ratio sets the DNS figures.",
            show_default=False,
            metavar="[DESIGN]",
        ),
    ] = None,
    scenario: ScenarioOpt = None,
    pages_per_s: Annotated[
        float | None,
        typer.Option(
            "--pages-per-s",
            help="Base load (default: the scenario's base_rps).",
            min=0,
            show_default=False,
        ),
    ] = None,
    page_kb: Annotated[
        float, typer.Option("--page-kb", help="Page size on the wire, KB.", min=0)
    ] = 100,
    urls: Annotated[
        float, typer.Option("--urls", help="URLs the seen set remembers.", min=1)
    ] = 1e9,
    fp: Annotated[
        float, typer.Option("--fp", help="Bloom filter false-positive rate.", min=1e-12, max=0.999)
    ] = 0.01,
    compression: Annotated[
        float, typer.Option("--compression", help="HTML compression ratio.", min=1)
    ] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    sets: SetOpt = None,
) -> None:
    """Back-of-the-envelope figures: pages/day, bandwidth, storage, Bloom filter, DNS, hosts."""
    from gym.estimate import Inputs, estimate

    try:
        s = load_scenario(scenario or default_scenario())
        if sets and design is None:
            raise GymError.single(None, "--set", "needs a DESIGN to change")
        d = load_design(design, sets) if design is not None else None
        base = s.base_rps if pages_per_s is None else pages_per_s
        peak = base * max(stage.multiplier for stage in s.load)
        hit = d.cache.hit_ratio if d is not None else s.catalog.cache.base_hit_ratio
        inputs = Inputs(
            pages_per_s=base,
            peak_pages_per_s=peak,
            page_kb=page_kb,
            compression=compression,
            urls=urls,
            fp_rate=fp,
            hit_ratio=hit,
            crawl_delay_s=s.web.crawl_delay_s,
        )
    except GymError as err:
        raise _fail_invalid(err) from None
    figures = estimate(inputs)
    if as_json:
        data = {"inputs": dict(inputs.__dict__), "figures": [f.to_json() for f in figures]}
        sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")
        return
    console = _wide_console()
    table = Table(show_edge=False, pad_edge=False)
    for col in ("figure", "value", "unit", "formula"):
        table.add_column(col, justify="right" if col == "value" else "left")
    for f in figures:
        whole = abs(f.value) >= 100 or float(f.value).is_integer()
        value = f"{f.value:,.0f}" if whole else f"{f.value:,.2f}"
        table.add_row(f.label, value, f.unit, f.formula)
    console.print(f"from scenario {s.name}" + (f" and design {d.name}" if d else ""))
    console.print(table)


@app.command("schema")
def schema_cmd(
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Directory for the JSON Schema files.")
    ] = Path("schemas"),
    docs: Annotated[
        Path | None,
        typer.Option(
            "--docs", help="Also write one Markdown page per file kind here.", show_default=False
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace files gym did not write.")
    ] = False,
) -> None:
    """Write the JSON Schema of design and scenario files (for editors), and field docs."""
    from gym import schema

    try:
        written = schema.write(output, docs, force)
    except GymError as err:
        raise _fail_invalid(err) from None
    Console(highlight=False, soft_wrap=True).print("wrote " + ", ".join(str(p) for p in written))


@app.command("validate")
def validate_cmd(design: DesignArg, scenario: ScenarioOpt = None, sets: SetOpt = None) -> None:
    """Check DESIGN (and the scenario, whose catalog prices it) without running it."""
    try:
        d = load_design(design, sets)
        s = load_scenario(scenario or default_scenario())
        problems = validate(d, s)
        if problems:
            raise GymError(problems)
    except GymError as err:
        raise _fail_invalid(err) from None
    units = costing.units(d, s.catalog)
    parts = ", ".join(f"{name} {n}" for name, n in units.items() if n)
    console = Console(highlight=False, soft_wrap=True)
    console.print(f"{design}: valid design '{d.name}', {sum(units.values())} units ({parts})")
    console.print(
        f"{s._source}: valid scenario '{s.name}', {s.duration_s:g} s, {len(s.load)} load "
        f"stage(s), {len(s.faults)} fault(s), {_count_slos(s)} SLO(s)"
    )


#: A request-engine run expected to offer more URLs than this shows a progress bar
#: (about a second of work per 100,000 URLs).
_PROGRESS_ABOVE_URLS = 200_000


@contextmanager
def _progress(enabled: bool, total_s: float) -> Iterator[Callable[[float], None] | None]:
    """A progress bar on stderr (terminals only) fed with the simulated time."""
    console = Console(stderr=True)
    if not enabled or not console.is_terminal:
        yield None
        return
    columns = (
        TextColumn("simulating"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} simulated s"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("run", total=total_s)
        yield lambda t: bar.update(task, completed=t)


def _count_slos(s: object) -> int:
    slos = getattr(s, "slos", None)
    return sum(1 for v in (slos.model_dump().values() if slos else []) if v is not None)


# -- human output ---------------------------------------------------------------------


def _print_result(r: Result, console: Console) -> None:
    m = r.metrics
    console.print(
        f"design [bold]{r.design.name}[/] ({r.design._source}), scenario "
        f"[bold]{r.scenario.name}[/] ({r.scenario._source}), engine {r.engine}, seed {r.seed}",
        soft_wrap=True,
    )
    table = Table(show_edge=False, pad_edge=False)
    for col, justify in (("SLO", "left"), ("target", "right"), ("measured", "right"), ("", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    _peak, peak_component, peak_at = m.peak_saturation()
    for chk in r.checks:
        measured = _fmt_measured(chk.name, chk.measured)
        if chk.name == "peak_saturation" and peak_component is not None:
            measured += f" ({peak_component}, t={peak_at:g}s)"
        mark = "[green]PASS[/]" if chk.passed else "[bold red]FAIL[/]"
        table.add_row(chk.name, f"{chk.op} {chk.target:g}", measured, mark)
    if not r.checks:
        table.add_row("(the scenario lists no SLOs)", "", "", "")
    console.print(table)
    verdict = "[bold green]PASS[/]" if r.passed else "[bold red]FAIL[/]"
    console.print(f"\nVerdict: {verdict}")
    skipped = f" + {m.skipped:,} skipped (dedup)" if m.skipped else ""
    console.print(
        f"URLs: {m.offered:,} offered = {m.served:,} served + {m.failed:,} failed{skipped} + "
        f"{m.in_flight_end:,} in flight at the end",
        soft_wrap=True,
    )
    policy = (
        "fail (cause crash_loss)"
        if r.design.fetchers.on_crash == "fail"
        else "go back to the frontier"
    )
    console.print(f"Fetches in flight on a crashed replica: {policy}")
    dd = r.dedup()
    if m.skipped or dd["writes_saved"] or dd["seen_set"] == "bloom" or dd["content_hash"]:
        parts = [
            f"{dd['seen_set']} seen set for {dd['seen_set_urls']:,.0f} URLs: "
            f"{dd['seen_set_memory_GB']:,.1f} GB"
        ]
        if dd["seen_urls_skipped"]:
            parts.append(f"{dd['seen_urls_skipped']:,} seen URLs skipped")
        if dd["seen_set"] == "bloom":
            parts.append(
                f"{dd['coverage_lost']:,} new URLs skipped by false positives "
                f"(coverage lost, fp rate {dd['fp_rate']:g})"
            )
        if dd["content_hash"]:
            parts.append(
                f"content hashing saved {dd['writes_saved']:,} store writes "
                f"({dd['bytes_saved_GB']:,.1f} GB)"
            )
        console.print("Dedup: " + "; ".join(parts), soft_wrap=True)

    comp = Table(show_edge=False, pad_edge=False, title=None)
    for col in ("component", "units", "peak saturation", "failed"):
        comp.add_column(col, justify="left" if col == "component" else "right")
    for name, cw in m.components.items():
        value, w = cw.peak()
        sat = "-" if value is None or w is None else f"{value:.2f} at t={m.window_s[w]:g}s"
        if cw.outage.any():
            sat += f", down {int(cw.outage.sum())} s"
        comp.add_row(name, str(m.units.get(name, 0)), sat, f"{int(cw.failed_total.sum()):,}")
    console.print()
    console.print(comp)

    if r.latency:
        _print_latency(r, console)
    _print_budget(r, console)

    headlines = [e for e in r.explanations if e.kind == "slo"]
    details = [e for e in r.explanations if e.kind != "slo"]
    if headlines:
        console.print("\n[bold]Why it fails[/]")
        _print_explanations(headlines, console)
    if details:
        console.print("\n[bold]Where URLs were lost[/]" if m.failed else "\n[bold]Notes[/]")
        _print_explanations(details, console)


def _print_budget(r: Result, console: Console) -> None:
    b = r.budget
    if b.target is None or not b.spent:
        return
    share = f"{b.fraction_spent:.0%}" if b.fraction_spent is not None else "-"
    console.print(
        f"\nError budget: {b.allowed:,.0f} failed URLs allowed ({1 - b.target:.0%} of "
        f"{r.metrics.offered:,} offered); {b.spent:,} spent ({share}).",
        soft_wrap=True,
    )
    table = Table(show_edge=False, pad_edge=False)
    for col in ("spent by", "URLs", "of budget", "causes"):
        table.add_column(col, justify="right" if col in ("URLs", "of budget") else "left")
    for e in b.by_event:
        causes = ", ".join(
            f"{c} {n:,}" for c, n in sorted(e.by_cause.items(), key=lambda x: -x[1]) if n
        )
        frac = f"{e.urls / b.allowed:.0%}" if b.allowed else "-"
        table.add_row(f"{e.name} (t={e.start_s:g}-{e.end_s:g}s)", f"{e.urls:,}", frac, causes)
    console.print(table)


def _print_latency(r: Result, console: Console) -> None:
    how = "measured per URL" if r.engine == "request" else "estimated by the flow engine"
    warm = f", URLs arriving after t={r.warmup_s:g}s" if r.warmup_s else ""
    table = Table(show_edge=False, pad_edge=False, title=None)
    for col in ("latency (ms)", "mean", "p50", "p95", "p99", "URLs"):
        table.add_column(col, justify="left" if col.startswith("latency") else "right")
    for name, st in r.latency.items():
        table.add_row(
            name.replace("_", " ") if name == "end_to_end" else name,
            f"{st.mean:,.1f}",
            f"{st.p50:,.1f}",
            f"{st.p95:,.1f}",
            f"{st.p99:,.1f}",
            f"{st.count:,}",
        )
    console.print(f"\nLatency, {how}{warm}:")
    console.print(table)


def _print_explanations(explanations: list[Explanation], console: Console) -> None:
    width = max(console.width, 40)
    for e in explanations:
        console.print(
            textwrap.fill(e.text, width, initial_indent="- ", subsequent_indent="  "),
            markup=False,
            soft_wrap=True,
        )
        for line in e.details:
            console.print(
                textwrap.fill(line, width, initial_indent="    * ", subsequent_indent="      "),
                markup=False,
                soft_wrap=True,
            )


def _fmt_measured(name: str, value: float) -> str:
    if name == "availability":
        return f"{value:.4f}"
    if name == "peak_saturation":
        return f"{value:.2f}"
    if name == "cost_units":
        return f"{value:g}"
    return f"{value:,.0f}"


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
