"""The exit-status contract every command keeps (the table in the README): the statuses,
and the wrapper that turns what a command raises into one of them and a line on stderr."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import sys
import traceback
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gym.cli import guard
from gym.cli.console import one_line, plain
from gym.core.errors import GymError

if TYPE_CHECKING:
    from gym.analysis.result import Result

#: Exit statuses: the table in the README.
EXIT_PASS, EXIT_FAIL, EXIT_INVALID, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # Ctrl-C (or SIGTERM), as shells report Ctrl-C
EXIT_BROKEN_PIPE = 141  # the reader of stdout went away (`gym run ... | head`), as for SIGPIPE
EXIT_OUTPUT_ERROR = 74  # stdout cannot be written (full disk, closed): sysexits' EX_IOERR

DebugOpt = Annotated[
    bool,
    typer.Option(
        "--debug",
        help="On an unexpected internal error, print the traceback (also: GYM_DEBUG=1).",
    ),
]


def _typer_exits() -> tuple[type[BaseException], ...]:
    """The exceptions typer turns into exit statuses itself (usage errors, exits, aborts).

    typer 0.2x carries its own copy of click (``typer.TyperException`` is its errors'
    base) and no longer installs click; older typers raise click's own, and have imported
    click by now (an installed click that typer does not use is not imported for
    nothing). Both kinds pass through the contract untouched."""
    kinds: list[type[BaseException]] = [typer.Exit, typer.Abort]
    base = getattr(typer, "TyperException", None)
    if base is not None:
        kinds.append(base)
    click = sys.modules.get("click")
    if click is None:
        return tuple(kinds)
    return (*kinds, click.exceptions.Exit, click.ClickException, click.Abort)


_TYPER_EXITS = _typer_exits()


def guarded(command: Callable[..., None]) -> Callable[..., None]:
    """The exit-status contract for every command: invalid input exits 2 with one line per
    problem; Ctrl-C or SIGTERM exit 130 with ``interrupted``; an unexpected internal error
    exits 3 with one line (the traceback only with ``--debug``). Adds ``--debug``."""

    @functools.wraps(command)
    def wrapper(*args: Any, debug: bool = False, **kwargs: Any) -> None:
        restore = guard.interrupt_handlers()
        real_stdout = sys.stdout
        sys.stdout = guard.Stdout(real_stdout)
        try:
            try:
                command(*args, **kwargs)
            finally:
                sys.stdout.flush()  # a closed pipe shows here, inside the contract
        except _TYPER_EXITS:
            raise
        except guard.StdoutError as err:
            with guard.unwritable_ok():
                plain(stderr=True).print(f"cannot write to standard output: {err}")
            raise typer.Exit(EXIT_OUTPUT_ERROR) from None
        except GymError as err:
            raise fail_invalid(err) from None
        except KeyboardInterrupt:
            with guard.unwritable_ok():
                plain(stderr=True).print("interrupted")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except BrokenPipeError:
            guard.discard_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        except Exception as exc:
            err_console = plain(stderr=True)
            with guard.unwritable_ok():
                if debug or os.environ.get("GYM_DEBUG", "") not in ("", "0"):
                    sys.stderr.write(traceback.format_exc())
                err_console.print(
                    f"internal error: {type(exc).__name__}: {one_line(str(exc))} (a bug in "
                    "the gym; --debug shows the traceback)"
                )
            raise typer.Exit(EXIT_INTERNAL) from None
        finally:
            sys.stdout = real_stdout
            restore()

    sig = inspect.signature(command, eval_str=True)
    debug_param = inspect.Parameter(
        "debug", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=DebugOpt
    )
    wrapper.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[*sig.parameters.values(), debug_param]
    )
    hints = typing.get_type_hints(command, include_extras=True)
    wrapper.__annotations__ = {**hints, "debug": DebugOpt}
    return wrapper


#: The Python API's argument names, as the options that set them are typed.
_OPTION_NAMES = {
    "tick_ms": "--tick-ms",
    "warmup_s": "--warmup",
    "seed": "--seed",
    "runs": "--runs",
    "engine": "--engine",
    "confidence": "--confidence",
}


def fail_invalid(err: GymError) -> typer.Exit:
    """Exit 2: one line on stderr per problem, ``error: file: field: message``."""
    err_console = plain(stderr=True)
    with guard.unwritable_ok():
        for problem in err.problems:
            if problem.file is None and problem.field in _OPTION_NAMES:
                problem = dataclasses.replace(problem, field=_OPTION_NAMES[problem.field])
            err_console.print(f"error: {one_line(problem)}")
    return typer.Exit(EXIT_INVALID)


def exit_verdict(passed: bool) -> typer.Exit:
    """The commands that judge: 0 PASS, 1 FAIL."""
    return typer.Exit(EXIT_PASS if passed else EXIT_FAIL)


def exit_all_pass(results: list[Result]) -> typer.Exit:
    """compare, plot and report: 0 when every design passes, 1 when any fails."""
    return exit_verdict(all(r.passed for r in results))
