"""``gym slo``: a scenario's SLOs as OpenSLO v1 documents (``export``), and the ``slos:`` a
scenario takes from such a file (``import``). The mapping: :mod:`gym.inputs.openslo`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from gym.cli.console import one_line, plain, print_json
from gym.cli.contract import guarded
from gym.cli.options import force_needs
from gym.cli.program import GymTyper, app

slo_app = GymTyper(
    name="slo",
    help="SLOs in OpenSLO v1: export a scenario's, import a file's.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(slo_app)


@slo_app.command("export")
@guarded
def export_cmd(
    scenario: Annotated[
        Path, typer.Argument(help="The scenario whose SLOs to write.", metavar="SCENARIO")
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--out",
            help="Write to this .yaml file (default: stdout).",
            show_default=False,
            metavar="FILE",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Write SCENARIO's SLOs as OpenSLO v1 documents: an SLI and an SLO for each."""
    from gym.core.errors import GymError
    from gym.inputs import openslo
    from gym.inputs.loading import load_scenario

    force_needs(force, output, "-o")
    target = None
    if output is not None:
        from gym.core.outputs import check_file

        target = check_file(output, "-o", suffixes=(".yaml", ".yml"), force=force)
    s = load_scenario(scenario)
    if not s.slos.count():
        raise GymError.single(str(scenario), "slos", "the scenario sets no SLO to export")
    text = openslo.dump(s)
    if target is None:
        sys.stdout.write(text)
        return
    from gym.core.outputs import write_file

    write_file(target, text, "-o")
    plain(stderr=True).print(f"wrote {one_line(target)} ({s.slos.count()} SLOs)")


@slo_app.command("import")
@guarded
def import_cmd(
    file: Annotated[
        Path, typer.Argument(help="An OpenSLO v1 file (SLO and SLI documents).", metavar="FILE")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Print the slos: (and alerts:) a scenario gets from FILE (what slos_from: FILE reads)."""
    from gym.inputs.loading import read_openslo
    from gym.inputs.openslo import shown
    from gym.inputs.strict_yaml import dump_yaml

    slos, alerts, notes = read_openslo(file)
    block: dict[str, object] = {"slos": shown(slos)}
    if alerts is not None:
        block["alerts"] = {"conditions": alerts}
    if as_json:
        print_json({**block, "notes": notes})
        return
    sys.stdout.write(dump_yaml(block))
    for note in notes:
        plain(stderr=True).print(f"note: {note}")
