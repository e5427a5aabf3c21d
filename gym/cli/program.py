"""The ``gym`` program: the typer app the command modules register with, what is closed
when any command ends (the executors it opened), and the console-script entry point."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer._click as _click
import typer._click.exceptions
import typer._click.parser
import typer.core

if TYPE_CHECKING:
    from gym.explore.parallel import Executor


# One grammar for every command's help and usage errors (issue 30): a usage error is one
# line, ``error: ...`` as the README promises, exit 2; an argument is named as written
# (DESIGN, not typer's {DESIGN} or "DESIGN <path>"); an option's value is named by a
# word (N, NUMBER, PATH), not by a Python type ("<int range>", "<list[Path]>").


def _one_line_usage_error(self: Any, file: Any = None) -> None:
    command = self.ctx.command_path if self.ctx is not None else "gym"
    message = " ".join(self.format_message().split()).rstrip(".")
    message = message[:1].lower() + message[1:]
    _click.echo(f"error: {message} (see {command} --help)", file=file, err=True)


def _group_help(self: Any, file: Any = None) -> None:
    """A group given no command (``gym``, ``gym slo``) prints its help on stdout and exits
    0, as docker and cargo do: the help was asked for by the bare word, not a mistake."""
    _click.echo(self.format_message(), color=self.ctx.color)


_parse_options = typer._click.parser._OptionParser.parse_args


def _parse_in_context(self: Any, args: list[str]) -> Any:
    """Click raises an option's missing value (``gym run --seed``) with no context, so the
    one-line error would point at ``gym --help``: give it the command being parsed."""
    try:
        return _parse_options(self, args)
    except _click.exceptions.UsageError as error:
        if error.ctx is None and self.ctx is not None:
            error.ctx = self.ctx
            error.cmd = self.ctx.command
        raise


def _argument_usage(self: typer.core.TyperArgument) -> str:
    name = str(self.metavar or self.name or "").upper()
    if not self.required:
        name = f"[{name}]"
    return name + ("..." if self.nargs != 1 and not name.endswith("...") else "")


#: The word for an option's value, by its type, where the option names none.
_WORDS: dict[Any, str] = {int: "N", float: "NUMBER", str: "TEXT"}


def _option_value(self: typer.core.TyperOption, ctx: Any) -> str | None:
    if self.metavar is not None:
        return str(self.metavar)
    kind = self.type_descriptor
    if kind.is_path:
        return "PATH"
    word = _WORDS.get(kind.annotation)
    if word is None:  # a choice: its values
        word = str(self.display_type(ctx) or "VALUE").strip("<>")
    return word


_click.exceptions.UsageError.show = _one_line_usage_error  # type: ignore[method-assign]
_click.exceptions.NoArgsIsHelpError.show = _group_help  # type: ignore[method-assign]
_click.exceptions.NoArgsIsHelpError.exit_code = 0
typer._click.parser._OptionParser.parse_args = _parse_in_context  # type: ignore[method-assign]
typer.core.TyperArgument._usage_display_name = _argument_usage  # type: ignore[method-assign]
typer.core.TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]
typer.core.TyperOption.display_type_rich = _option_value  # type: ignore[method-assign]

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


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("crawler-slo-gym")
        except PackageNotFoundError:  # run from a source tree that is not installed
            number = "unknown (not installed)"
        _click.echo(f"gym {number}")
        raise typer.Exit()


@app.callback()
def _main_callback(
    ctx: typer.Context,
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the gym's version and exit.", callback=_version, is_eager=True
        ),
    ] = False,
) -> None:
    """The crawler SLO gym: score a web crawler's capacity design against SLOs under chaos."""
    ctx.call_on_close(_close_executors)


def _close_executors() -> None:
    while _OPEN:
        _OPEN.pop().close()


def main() -> None:
    """Console-script entry point."""
    app()
