"""The commands that run no simulation: ``estimate`` the back-of-the-envelope figures,
``schema`` for editors, ``validate`` a design without running it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gym.cli.console import one_line, plain, print_json
from gym.cli.contract import guarded
from gym.cli.inputs import checked, scenario_of
from gym.cli.options import DesignArg, ScenarioOpt, SetOpt, dir_name
from gym.cli.program import app
from gym.core.errors import GymError


@app.command("estimate")
@guarded
def estimate_cmd(
    design: Annotated[
        Path | None,
        typer.Argument(
            help="Optional design: its cache hit ratio sets the DNS figures.",
            show_default=False,
            metavar="DESIGN",
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
        float,
        typer.Option(
            "--urls", help="URLs the seen set remembers (default 1e9).", min=1, show_default=False
        ),
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
    from gym.analysis.estimate import Inputs, estimate
    from gym.api import load_inputs
    from gym.system.compiled import addons

    if sets and design is None:
        raise GymError.single(None, "--set", "needs a DESIGN to change")
    if design is not None:  # the design's and the scenario's problems in one round
        (d,), s = load_inputs([design], scenario, sets)
    else:
        s, d = scenario_of(scenario), None
    if s.system != "crawler":
        raise GymError.single(
            s._source, "system", "estimate works out a crawler's figures (a crawler scenario)"
        )
    crawler = None if d is None else addons(d)
    if d is not None and crawler is None:
        raise GymError.single(
            str(design), None, "estimate reads crawler designs only (this is a graph)"
        )
    inputs = Inputs.of(
        s,
        None if crawler is None else crawler.design,
        pages_per_s=pages_per_s,
        page_kb=page_kb,
        compression=compression,
        urls=urls,
        fp_rate=fp,
    )
    figures = estimate(inputs)
    if as_json:
        print_json({"inputs": dict(inputs.__dict__), "figures": [f.to_dict() for f in figures]})
        return
    from gym.cli.tables import print_estimate

    print_estimate(s, d, figures)


@app.command("schema")
@guarded
def schema_cmd(
    output: Annotated[
        Path,
        typer.Option(
            "-o",
            "--out",
            help="Directory for the JSON Schema files.",
            metavar="DIR",
            parser=dir_name,
        ),
    ] = Path("schemas"),
    docs: Annotated[
        Path | None,
        typer.Option(
            "--docs",
            help="Also write one Markdown page per file kind here.",
            show_default=False,
            metavar="DIR",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace files gym did not write.")
    ] = False,
) -> None:
    """Write the JSON Schema of design and scenario files (for editors), and field docs."""
    from gym.inputs import schema

    written = schema.write(output, docs, force)
    plain(stderr=True).print("wrote " + ", ".join(one_line(p) for p in written))


@app.command("validate")
@guarded
def validate_cmd(
    design: DesignArg,
    scenario: ScenarioOpt = None,
    sets: SetOpt = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON object: valid, the design's and the scenario's figures, or "
            "the problems (exit 2).",
        ),
    ] = False,
) -> None:
    """Check DESIGN (and the scenario, whose catalog prices it) without running it."""
    from gym.system import compiled

    try:
        d, s = checked(design, scenario, sets)
    except GymError as err:
        if as_json:
            problems = [
                {"file": p.file, "field": p.field, "message": p.message} for p in err.problems
            ]
            print_json({"valid": False, "problems": problems})
        raise
    units = compiled.units_of(d, s.catalog)
    parts = ", ".join(f"{name} {n}" for name, n in units.items() if n)
    if as_json:
        print_json(
            {
                "valid": True,
                "design": {
                    "name": d.name,
                    "file": d._source,
                    "cost_units": sum(units.values()),
                    "units": units,
                },
                "scenario": {
                    "name": s.name,
                    "file": s._source,
                    "duration_s": s.duration_s,
                    "load_stages": len(s.load),
                    "faults": len(s.faults),
                    "slos": s.slos.count(),
                    "slos_file": s._slos_file,
                },
                "notes": list(s._slos_notes),
            }
        )
        return
    console = plain()
    console.print(
        f"{one_line(design)}: valid design '{one_line(d.name)}', {sum(units.values())} "
        f"units ({parts})"
    )
    console.print(
        f"{one_line(s._source)}: valid scenario '{one_line(s.name)}', {s.duration_s:g} s, "
        f"{len(s.load)} load stage(s), {len(s.faults)} fault(s), {s.slos.count()} SLO(s)"
        + (f" from {one_line(s._slos_file)}" if s._slos_file else "")
    )
    for note in s._slos_notes:
        console.print(f"note: {one_line(note)}")
