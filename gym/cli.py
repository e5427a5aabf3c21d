"""The ``gym`` command: parse, call the API, print. No model logic lives here."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gym import costing
from gym.engines.request import expected_urls
from gym.errors import GymError
from gym.explain import Explanation
from gym.loading import load_design, load_scenario
from gym.result import Result
from gym.simulate import DEFAULT_MAX_URLS, ENGINES, default_scenario, simulate, validate

app = typer.Typer(
    name="gym",
    help="The crawler SLO gym: score a web crawler's capacity design against SLOs under chaos.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click usage errors: short, no boxes
)

EXIT_PASS, EXIT_FAIL, EXIT_INVALID = 0, 1, 2

DesignArg = Annotated[
    Path,
    typer.Argument(help="Design file (YAML), e.g. designs/reference.yaml.", show_default=False),
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
) -> None:
    """Simulate DESIGN under a scenario and score it. Exit 0 PASS, 1 FAIL, 2 invalid input."""
    try:
        if out is not None:
            from gym.report.files import check_target

            check_target(out, force, "--out", is_dir=True)
        d = load_design(design)
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


DesignsArg = Annotated[
    list[Path], typer.Argument(help="Design files (YAML).", show_default=False, metavar="DESIGN...")
]
SeedOpt = Annotated[int, typer.Option(help="Random seed (>= 0).", min=0)]
EngineOpt = Annotated[str, typer.Option(help=f"Engine: {' | '.join(ENGINES)}.")]


def _results(designs: list[Path], scenario: Path | None, seed: int, engine: str) -> list[Result]:
    s = load_scenario(scenario or default_scenario())
    loaded = [load_design(d) for d in designs]
    return [simulate(d, s, seed=seed, engine=engine) for d in loaded]


@app.command("compare")
def compare_cmd(
    designs: DesignsArg,
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Run several designs under one scenario and seed; show them side by side."""
    from gym.compare import Comparison

    try:
        comparison = Comparison(_results(designs, scenario, seed, engine))
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
def plot_cmd(
    designs: DesignsArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="PNG file to write.")],
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Overlay several designs: saturation, served URLs and frontier backlog over time."""
    try:
        from gym.report.files import check_target

        check_target(output, force, "-o", is_dir=False)
        results = _results(designs, scenario, seed, engine)
    except GymError as err:
        raise _fail_invalid(err) from None
    from gym.report import plots

    plots.overlay(results).savefig(output, dpi=110, bbox_inches="tight")
    Console(highlight=False, soft_wrap=True).print(f"wrote {output}")


@app.command("report")
def report_cmd(
    design: DesignArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")],
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Write a self-contained HTML report of one run (verdict, tables, plots, timeline)."""
    try:
        from gym.report.files import check_target

        check_target(output, force, "-o", is_dir=False)
        (result,) = _results([design], scenario, seed, engine)
    except GymError as err:
        raise _fail_invalid(err) from None
    from gym.report.html import render

    output.write_text(render(result), encoding="utf-8")
    Console(highlight=False, soft_wrap=True).print(
        f"wrote {output} ({result.design.name}: {result.verdict.upper()})"
    )


@app.command("validate")
def validate_cmd(design: DesignArg, scenario: ScenarioOpt = None) -> None:
    """Check DESIGN (and the scenario, whose catalog prices it) without running it."""
    try:
        d = load_design(design)
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
    console.print(
        f"URLs: {m.offered:,} offered = {m.served:,} served + {m.failed:,} failed + "
        f"{m.in_flight_end:,} in flight at the end",
        soft_wrap=True,
    )
    policy = (
        "fail (cause crash_loss)"
        if r.design.fetchers.on_crash == "fail"
        else "go back to the frontier"
    )
    console.print(f"Fetches in flight on a crashed replica: {policy}")

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
