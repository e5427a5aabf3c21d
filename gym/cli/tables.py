"""The tables and texts the commands over many runs or designs print: --runs, compare,
grade, sweep, optimize and estimate (one run's own: :mod:`gym.cli.render`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gym.cli.console import one_line, plain, verdict, wide_console

if TYPE_CHECKING:
    from rich.text import Text

    from gym.analysis.estimate import Figure
    from gym.analysis.result import Result
    from gym.analysis.rubric import Grade
    from gym.explore.compare import Comparison
    from gym.explore.montecarlo import MonteCarloResult
    from gym.explore.optimize import Optimum
    from gym.explore.parallel import Executor
    from gym.models import Design, Scenario
    from gym.system.graph import GraphDesign


def print_many(
    d: Design | GraphDesign,
    s: Scenario,
    engine: str,
    seed: int,
    runs: int,
    confidence: float,
    executor: Executor,
    mc: MonteCarloResult,
) -> None:
    """``gym run --runs N``: the spread of each SLO over the seeds, and the verdict."""
    from rich.table import Table
    from rich.text import Text

    from gym.analysis.scoring import format_measured

    console = plain()
    console.print(
        Text.assemble(
            "design ",
            (one_line(d.name), "bold"),
            f" ({one_line(d._source)}), scenario ",
            (one_line(s.name), "bold"),
            f", engine {engine}, seeds {seed}..{seed + runs - 1} ({executor.name})",
        )
    )
    table = Table(show_edge=False, pad_edge=False)
    for col in ("SLO", "target", "mean", "std", "min", "max", "pass rate"):
        table.add_column(col, justify="left" if col == "SLO" else "right")
    for st in mc.slos:
        table.add_row(
            st.name,
            f"{st.op} {st.target:g}",
            *(format_measured(st.name, v) for v in (st.mean, st.std, st.min, st.max)),
            f"{st.pass_rate:.0%}",
        )
    console.print(table)
    low, high = mc.ci
    console.print(
        f"\nPasses every SLO in {mc.passes}/{mc.n} runs: pass probability "
        f"{mc.pass_probability:.2f}, 95% interval [{low:.2f}, {high:.2f}] (Wilson)."
    )
    console.print(
        Text.assemble(
            "Verdict: ",
            verdict(mc.verdict == "pass"),
            f" (rule: PASS if the lower bound >= {confidence:g})",
        )
    )
    if mc.traps:
        console.print(
            Text(
                f"\nThe design takes the rubric's traps (gym grade; seed {seed}'s run):",
                style="bold",
            )
        )
        for t in mc.traps:
            console.print(
                f"- {one_line(t['trap'])}. The run: {one_line(t['measured'])}", soft_wrap=True
            )


def print_comparison(comparison: Comparison) -> None:
    """``gym compare``: the designs side by side, the inputs that differ, and why."""
    from rich.table import Table
    from rich.text import Text

    from gym.analysis.scoring import format_measured
    from gym.explore.compare import shown

    rs = comparison.results

    console = plain()
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("")
    for r in rs:
        table.add_column(one_line(r.design.name), justify="right")
    table.add_row("verdict", *[verdict(r.passed, bold=False) for r in rs])
    for i, chk in enumerate(rs[0].checks):
        cells = []
        for r in rs:
            c = r.checks[i]
            cell = Text(format_measured(c.name, c.measured))
            if not c.passed:
                cell.append(" x", style="red")
            cells.append(cell)
        table.add_row(f"{chk.name} ({chk.op} {chk.target:g})", *cells)
    if not any(c.name == "cost_units" for c in rs[0].checks):
        table.add_row("cost_units", *[str(r.metrics.cost_units) for r in rs])
    table.add_row(f"failed {rs[0].unit.many}", *[f"{r.metrics.failed:,}" for r in rs])
    table.add_row(
        "peak at",
        *[f"{r.metrics.peak.component} t={r.metrics.peak.at_s:g}s" for r in rs],
    )
    console.print(
        f"scenario {one_line(rs[0].scenario.name)}, engine {rs[0].engine}, seed {rs[0].seed}"
    )
    console.print(table)
    inputs = comparison.input_differences()
    if inputs:
        console.print(Text("\nInputs that differ", style="bold"))
        given = Table(show_edge=False, pad_edge=False)
        given.add_column("field", no_wrap=True)  # a path cut short names no field
        for r in rs:
            given.add_column(one_line(r.design.name), justify="right")
        for path, values in inputs.items():
            given.add_row(one_line(path), *[one_line(shown(v)) for v in values])
        console.print(given)
    console.print(Text("\nDifferences that matter", style="bold"))
    for line in comparison.differences():
        console.print(f"- {one_line(line)}")


def print_grades(r: Result, grades: list[Grade], points: float, counted: int) -> None:
    """``gym grade``: the rubric's items, their credit and what was measured."""
    from rich.table import Table
    from rich.text import Text

    console = plain()
    console.print(
        f"design {one_line(r.design.name)}, scenario {one_line(r.scenario.name)}, engine "
        f"{r.engine}, seed {r.seed}: SLOs {verdict(r.passed, bold=False)}"
    )
    table = Table(show_edge=False, pad_edge=False)
    for col in ("rubric item", "credit", "measured"):
        table.add_column(col)
    styles = {"full": "green", "partial": "yellow", "none": "red"}
    for g in grades:
        measured = Text(one_line(g.measured))
        if g.trap:
            measured.append(f"\ntrap: {one_line(g.trap)}", style="red")
        table.add_row(g.item, Text(g.credit, style=styles.get(g.credit, "dim")), measured)
    console.print(table)
    console.print(
        f"\n{points:g} of {counted} points on the items this model can grade "
        "(full 1, partial 0.5); untested and not gradable items are not counted."
    )


def print_sweep(
    rows: list[dict[str, Any]],
    params: list[str],
    scenario: str | None,
    engine: str,
    runs: int,
    seed: int,
    conf: float,
    executor: Executor,
) -> None:
    from rich.table import Table
    from rich.text import Text

    from gym.analysis.scoring import format_measured

    console = wide_console()
    table = Table(show_edge=False, pad_edge=False)
    slo_cols = [n for n in _slo_names(rows) if n != "cost_units"]
    for col in (*params, "cost", *[_SHORT.get(n, n) for n in slo_cols], "passes", "verdict"):
        table.add_column(one_line(col), justify="right")
    for row in rows:
        cells: list[str | Text] = [one_line(row[p]) for p in params]
        if row["status"] != "ok":
            label = "invalid" if row["status"] == "invalid" else str(row["status"])
            table.add_row(
                *cells,
                "-",
                *["-" for _ in slo_cols],
                "-",
                Text.assemble((label, "red"), f": {one_line(row['error'])}"),
            )
            continue
        cells.append(str(row["cost_units"]))
        for n in slo_cols:
            rate = row[f"{n}_pass_rate"]
            cell = Text(format_measured(n, row[f"{n}_mean"]))
            if rate == 0:
                cell.append(" x", style="red")
            elif rate != 1:
                cell.append(f" ({rate:.0%})")
            cells.append(cell)
        cells.append(f"{round(row['pass_probability'] * row['runs'])}/{row['runs']}")
        cells.append(verdict(row["verdict"] == "pass", bold=False))
        table.add_row(*cells)
    rule = (
        "each point's verdict is its run's"
        if runs == 1
        else f"verdict: PASS if the 95% Wilson lower bound of the pass rate >= {conf:g}"
    )
    console.print(
        f"scenario {one_line(scenario)}, engine {engine}, {runs} run(s) per point from seed "
        f"{seed} ({executor.name}); SLO columns are means, x: failed in every run; {rule}"
    )
    console.print(table)


_SHORT = {"throughput_rps": "throughput/s", "peak_saturation": "peak sat."}


def _slo_names(rows: list[dict[str, object]]) -> list[str]:
    from gym.analysis.scoring import SLO_NAMES

    return [n for n in SLO_NAMES if any(f"{n}_mean" in r for r in rows)]


def print_optimum(
    opt: Optimum, s: Scenario, runs: int, conf: float, executor: Executor, text: str | None
) -> None:
    """``gym optimize``: what was searched, the cheapest passing design's file, and why
    nothing cheaper passes."""
    from rich.text import Text

    console = plain()
    console.print(
        f"scenario {one_line(s.name)}: {opt.evaluated} unit-aligned designs, up to "
        f"{runs} runs each ({opt.simulations:,} runs: a design stops when it cannot "
        f"pass), confidence {conf:g} ({executor.name})"
    )
    if text is None or opt.best is None:
        console.print(Text("No design within the cost limit passes every SLO.", style="red"))
    else:
        console.print(
            Text.assemble(
                "\n",
                (f"Cheapest passing design: {opt.best.cost} units", "bold"),
                f" ({opt.best.describe()})\n",
            )
        )
        console.print(text)
    console.print(Text("Why nothing cheaper passes", style="bold"))
    for line in opt.why_nothing_cheaper():
        console.print(f"- {one_line(line)}")
    if opt.runner_ups:
        console.print(Text("\nMore margin for more units", style="bold"))
        for c in opt.runner_ups:
            console.print(
                f"- {c.cost} units ({c.describe()}): smallest SLO margin {c.margin():.1%}"
            )


def print_estimate(s: Scenario, d: Design | GraphDesign | None, figures: list[Figure]) -> None:
    """``gym estimate``: each figure, its value and unit, and its formula."""
    from rich.table import Table

    from gym.system.compiled import addons

    console = wide_console()
    table = Table(show_edge=False, pad_edge=False)
    for col in ("figure", "value", "unit", "formula"):
        table.add_column(col, justify="right" if col == "value" else "left")
    for f in figures:
        whole = abs(f.value) >= 100 or float(f.value).is_integer()
        value = f"{f.value:,.0f}" if whole else f"{f.value:,.2f}"
        table.add_row(f.label, value, f.unit, f.formula)
    console.print(
        f"from scenario {one_line(s.name)}" + (f" and design {one_line(d.name)}" if d else "")
    )
    console.print(table)
    if d is not None and (crawler := addons(d)) is not None and crawler.follows_links:
        console.print(
            "note: the design follows links (discovery); these figures are for the seeds "
            "alone, and the link-discovery loop multiplies the pages fetched "
            "(gym run shows how many)",
            soft_wrap=True,
        )
