"""``gym serve``: the playground in the browser (:mod:`gym.playground`), started from the
command line."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from gym.cli.console import one_line, plain
from gym.cli.contract import guarded
from gym.cli.inputs import checked
from gym.cli.options import MaxUrlsOpt, ScenarioOpt, SeedOpt, SetOpt
from gym.cli.program import app
from gym.core.errors import GymError
from gym.core.limits import DEFAULT_MAX_URLS


@app.command("serve")
@guarded
def serve_cmd(
    design: Annotated[
        Path | None,
        typer.Argument(
            help="Design file (YAML) to start from. Default: designs/reference.yaml.",
            show_default=False,
            metavar="DESIGN",
        ),
    ] = None,
    scenario: ScenarioOpt = None,
    port: Annotated[
        int, typer.Option(help="Port to listen on (0: any free port).", min=0, max=65535)
    ] = 5006,
    host: Annotated[
        str,
        typer.Option(
            help="Address to listen on. Default: loopback only; another address lets "
            "other machines drive the gym.",
        ),
    ] = "127.0.0.1",
    seed: SeedOpt = 0,
    sets: SetOpt = None,
    max_urls: MaxUrlsOpt = None,
) -> None:
    """Start the playground in the browser: a slider per design field, the verdict, SLOs,
    plots, why it fails and the suggested fix, live as you move them. Needs the serve
    extra (pip install -e '.[serve]'). Stops on Ctrl-C."""
    from gym.api import default_design

    try:
        import bokeh  # noqa: F401
    except ImportError:
        raise GymError.single(
            None, "serve", "needs Bokeh: pip install -e '.[serve]' (the serve extra)"
        ) from None
    path = design or default_design()
    d, s = checked(path, scenario, sets)
    from gym.playground.app import check_port, free_port

    if port == 0:
        port = free_port(host)
    check_port(host, port)
    from gym.playground.app import serve

    console = plain()
    if host not in ("127.0.0.1", "localhost", "::1"):
        plain(stderr=True).print(
            f"warning: listening on {one_line(host)}: anyone who can reach this machine "
            "can use the playground"
        )

    def ready(address: str) -> None:
        console.print(f"playground at {address} (Ctrl-C to stop)")

    # The page names the file as the command line does (the packaged copy by its name).
    shown = str(design) if design is not None else (path.name if path.is_absolute() else str(path))
    from gym.api import default_scenario

    given = scenario or default_scenario()
    label = given.name if scenario is None and given.is_absolute() else label_of(given)
    serve(
        d,
        s,
        shown,
        host=host,
        port=port,
        seed=seed,
        max_urls=DEFAULT_MAX_URLS if max_urls is None else max_urls,
        ready=ready,
        scenario_file=label,
    )


def label_of(path: Path) -> str:
    """A scenario's label on the page: its path as given, written the one way (a share
    link names it so)."""
    return Path(os.path.normpath(path)).as_posix()
