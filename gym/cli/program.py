"""The ``gym`` program: the typer app the command modules register with, what is closed
when any command ends (the executors it opened), and the console-script entry point."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from gym.explore.parallel import Executor

app = typer.Typer(
    name="gym",
    help="The crawler SLO gym: score a web crawler's capacity design against SLOs under chaos.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click usage errors: short, no boxes
)

_OPEN: list[Executor] = []


def closing(executor: Executor) -> Executor:
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


def main() -> None:
    """Console-script entry point."""
    app()
