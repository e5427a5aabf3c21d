"""``gym diff BASE HEAD``: the capacity-regression gate (:mod:`gym.explore.diff`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gym.cli.console import one_line, plain, print_json
from gym.cli.contract import exit_verdict, guarded
from gym.cli.inputs import refuse
from gym.cli.options import (
    ConfidenceOpt,
    ForceOpt,
    ScenarioOpt,
    SchedulerOpt,
    SeedOpt,
    WorkersOpt,
    check_many,
    force_needs,
)
from gym.cli.program import app, closing

if TYPE_CHECKING:
    from gym.explore.diff import Diff


@app.command("diff")
@guarded
def diff_cmd(
    base: Annotated[
        Path, typer.Argument(help="The design as it is (YAML).", show_default=False, metavar="BASE")
    ],
    head: Annotated[
        Path,
        typer.Argument(help="The design as changed (YAML).", show_default=False, metavar="HEAD"),
    ],
    scenario: ScenarioOpt = None,
    runs: Annotated[
        int,
        typer.Option(
            "--runs",
            help="Seeds for each design, the same for both (at least 16 at the default "
            "confidence: the fewest that can show either side passing).",
            min=2,
        ),
    ] = 20,
    seed: SeedOpt = 0,
    confidence: ConfidenceOpt = None,
    markdown: Annotated[
        Path | None,
        typer.Option(
            "--markdown",
            help="Also write a Markdown summary (for a pull-request comment) to this .md file.",
            show_default=False,
            metavar="FILE",
        ),
    ] = None,
    force: ForceOpt = False,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Run BASE and HEAD under one scenario with the same seeds: each SLO's change with
    its 95% interval, the cost, the verdicts. Exit 1 when HEAD is worse beyond noise on an
    SLO (or BASE passes and HEAD fails), 0 otherwise."""
    from gym.api import load_inputs, validate
    from gym.cli.progress import count_progress
    from gym.explore import diff
    from gym.explore.parallel import make_executor

    conf = check_many(runs, workers, scheduler, confidence, seed=seed, one_run=False)
    force_needs(force, markdown, "--markdown")
    target = None
    if markdown is not None:
        from gym.core.outputs import check_file

        target = check_file(markdown, "--markdown", suffixes=(".md", ".markdown"), force=force)
    (b, h), s = load_inputs([base, head], scenario)
    diff.check(b, h, runs, conf)
    refuse([*validate(b, s), *validate(h, s)])
    executor = closing(make_executor(workers, scheduler))
    with count_progress(2 * runs, f"2 designs x {runs} runs") as report:
        result = diff.diff(
            b, h, s, runs=runs, seed=seed, confidence=conf, executor=executor, progress=report
        )
    if as_json:
        print_json(result.to_dict())
    else:
        _print(result)
    if target is not None:
        from gym.core.outputs import write_file

        write_file(target, result.markdown(), "--markdown")
        plain(stderr=True).print(f"wrote {one_line(target)}")
    raise exit_verdict(not result.regressions)


def _print(d: Diff) -> None:
    """The changes as a table, both verdicts, and the gate's."""
    from rich.table import Table
    from rich.text import Text

    from gym.analysis.scoring import format_measured
    from gym.cli.console import verdict
    from gym.explore.diff import interval, signed

    console = plain()
    console.print(
        f"BASE {one_line(d.base.name)} ({one_line(d.base._source)}) against HEAD "
        f"{one_line(d.head.name)} ({one_line(d.head._source)}), scenario "
        f"{one_line(d.scenario.name)}, the same seeds {d.seed}..{d.seed + d.runs - 1} for both"
    )
    if d.inputs:
        console.print("HEAD changes: " + "; ".join(f"{p} {b} -> {h}" for p, b, h in d.inputs))
    table = Table(show_edge=False, pad_edge=False)
    for col in ("figure", "SLO", "BASE", "HEAD", "change", "95% interval", ""):
        table.add_column(  # only the interval wraps on a narrow terminal
            col,
            justify="left" if col in ("figure", "SLO", "") else "right",
            no_wrap=col != "95% interval",
        )
    for c in d.changes:
        table.add_row(
            c.name,
            c.slo or "",
            format_measured(c.name, c.base),
            format_measured(c.name, c.head),
            signed(c.name, c.change),
            interval(c, d.runs),
            c.verdict,
        )
    console.print(table)
    for side, mc in (("BASE", d.base_result), ("HEAD", d.head_result)):
        low, high = mc.ci
        console.print(
            Text.assemble(
                f"{side}: every SLO met in {mc.passes}/{mc.n} runs, 95% interval "
                f"[{low:.2f}, {high:.2f}]: ",
                verdict(mc.verdict == "pass"),
            )
        )
    if d.regressions:
        console.print(Text.assemble("\nGate: ", verdict(False), ", HEAD is worse:"))
        for r in d.regressions:
            console.print(f"  {r}")
    else:
        console.print(Text.assemble("\nGate: ", verdict(True), ", no SLO worse beyond noise"))
