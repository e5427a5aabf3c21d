"""The ``gym`` program: the typer app the command modules register with, what is closed
when any command ends (the executors it opened), and the console-script entry point."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.core
from typer.models import CommandFunctionType

if TYPE_CHECKING:
    from gym.explore.parallel import Executor


# One grammar for every command's help and usage errors (issue 30): a usage error is one
# line, ``error: ...`` as the README promises, exit 2; an argument is named as written
# (DESIGN, not typer's {DESIGN} or "DESIGN <path>"); an option's value is named by a
# word (N, NUMBER, PATH), not by a Python type ("<int range>", "<list[Path]>"). All of it
# through typer's public classes, subclassed (``cls=``), as click documents for a custom
# command: nothing of typer's or its vendored click's private names is touched.

#: The word for an option's value, by its type, where the option names none.
_WORDS: dict[Any, str] = {int: "N", float: "NUMBER", str: "TEXT"}


def _value_word(option: typer.core.TyperOption, ctx: typer.Context) -> str:
    kind = option.type_descriptor
    if kind.is_path:
        return "PATH"
    word = _WORDS.get(kind.annotation)
    if word is None:  # a choice: its values
        word = str(option.display_type(ctx) or "VALUE").strip("<>")
    return word


def _argument_name(argument: typer.core.TyperArgument, usage: bool = False) -> str:
    """An argument as written (DESIGN); in the usage line, in brackets when optional."""
    name = str(argument.display_name_raw).upper()
    if usage and not argument.required:
        name = f"[{name}]"
    return name + ("..." if argument.nargs != 1 and not name.endswith("...") else "")


def _name_values(params: Sequence[Any], ctx: typer.Context) -> None:
    """Give each option that takes a value and names none its word (typer shows a type)."""
    for param in params:
        taking = not (getattr(param, "is_flag", True) or getattr(param, "count", False))
        if isinstance(param, typer.core.TyperOption) and taking and param.metavar is None:
            param.metavar = _value_word(param, ctx)


def _with_context(parse: Callable[[], list[str]], ctx: typer.Context) -> list[str]:
    """Click raises an option's missing value (``gym run --seed``) with no context, so the
    one-line error would point at ``gym --help``: give it the command being parsed."""
    try:
        return parse()
    except typer.TyperException as error:
        if getattr(error, "ctx", False) is None:
            error.ctx = ctx  # type: ignore[attr-defined]
            error.cmd = ctx.command  # type: ignore[attr-defined]
        raise


class GymCommand(typer.core.TyperCommand):
    """A command with the gym's grammar: arguments and values named by words."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return _with_context(lambda: super(GymCommand, self).parse_args(ctx, args), ctx)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, typer.core.TyperArgument):
                pieces.append(_argument_name(param, usage=True))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        _name_values(self.get_params(ctx), ctx)
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, typer.core.TyperArgument):
                arguments.append((_argument_name(param), record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


class GymGroup(typer.core.TyperGroup):
    """The ``gym`` program and its sub-groups: a bare group prints its help on stdout and
    exits 0, as docker and cargo do (the help was asked for by the bare word, not a
    mistake); a usage error is one line."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(0)
        return _with_context(lambda: super(GymGroup, self).parse_args(ctx, args), ctx)

    def format_options(self, ctx: Any, formatter: Any) -> None:
        _name_values(self.get_params(ctx), ctx)
        super().format_options(ctx, formatter)

    def main(  # type: ignore[override]
        self, args: Sequence[str] | None = None, *, standalone_mode: bool = True, **extra: Any
    ) -> Any:
        if not standalone_mode:
            return super().main(args, standalone_mode=False, **extra)
        try:
            code = super().main(args, standalone_mode=False, **extra)
        except typer.TyperException as error:
            _show(error)
            sys.exit(getattr(error, "exit_code", 1))
        except typer.Abort:
            typer.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def _show(error: typer.TyperException) -> None:
    """A usage error as one line naming the command's help; any other as click shows it."""
    if not hasattr(error, "ctx"):
        error.show()  # type: ignore[attr-defined]
        return
    ctx = error.ctx
    command = ctx.command_path if ctx is not None else "gym"
    message = " ".join(error.format_message().split()).rstrip(".")
    message = message[:1].lower() + message[1:]
    typer.echo(f"error: {message} (see {command} --help)", err=True)


class GymTyper(typer.Typer):
    """A typer app whose groups and commands speak the gym's grammar."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(cls=GymGroup, **settings)

    def command(
        self,
        name: str | None = None,
        *,
        cls: type[typer.core.TyperCommand] | None = None,
        **kw: Any,
    ) -> Callable[[CommandFunctionType], CommandFunctionType]:
        return super().command(name, cls=cls or GymCommand, **kw)


app = GymTyper(
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
        typer.echo(f"gym {number}")
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
