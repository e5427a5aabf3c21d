"""The consoles commands print with: rich, showing user text literally, loaded on first
use; and the small pieces every command's output shares (one line of user text, the
verdict, the warnings)."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gym.core.text import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


@functools.cache
def _plain_console() -> type[Console]:
    """rich's Console, printing user text literally: no markup, no emoji codes, no
    highlighting, and control characters (escape sequences, carriage returns) shown as
    escapes instead of acting on the terminal. Built on first use (rich loads then)."""
    from rich.console import Console

    class PlainConsole(Console):
        def render_str(self, text: str, *args: Any, **kwargs: Any) -> Text:
            return super().render_str(printable(text, keep_newlines=True), *args, **kwargs)

        def on_broken_pipe(self) -> None:
            """Not exit status 1 (FAIL): the command ends with
            :data:`gym.cli.contract.EXIT_BROKEN_PIPE`."""
            raise BrokenPipeError

    return PlainConsole


def plain(stderr: bool = False, width: int | None = None) -> Console:
    return _plain_console()(
        stderr=stderr,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=True,
        width=width,
    )


def wide_console() -> Console:
    """Tables of many columns: the terminal's width, or 160 columns when not a terminal."""
    from rich.console import Console

    probe = Console()
    return plain(width=None if probe.is_terminal else 160)


def one_line(text: object) -> str:
    """User text (a name, a path, a value) for one line of output: literally, newlines and
    other control characters as escapes."""
    return printable(str(text))


def verdict(passed: bool, bold: bool = True) -> Text:
    from rich.text import Text

    weight = "bold " if bold else ""
    return Text("PASS", style=weight + "green") if passed else Text("FAIL", style=weight + "red")


def warn(warnings: Sequence[str], design: str | None = None) -> None:
    """Print each rounding the engine's grid made (:mod:`gym.analysis.rounding`) to stderr."""
    if not warnings:
        return
    err_console = plain(stderr=True)
    where = f" ({one_line(design)})" if design else ""
    for text in warnings:
        err_console.print(f"warning{where}: {text}")


def print_json(data: object) -> None:
    """One JSON object (or list) on stdout, as every ``--json`` prints it."""
    sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")


def wrote_files(written: Sequence[Path], out: Path) -> None:
    """The note on stderr naming the files written into an --out directory."""
    plain(stderr=True).print(
        f"wrote {len(written)} files to {one_line(out)}/: " + ", ".join(p.name for p in written)
    )
