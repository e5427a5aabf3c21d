"""Progress on stderr while a command works (terminals only; rich loads only when a bar
is shown): a run's simulated time, finished tasks, a search planned as it goes, a
spinner."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: A request-engine run expected to offer more URLs than this shows a progress bar
#: (about a second of work per 100,000 URLs).
PROGRESS_ABOVE_URLS = 200_000


@contextmanager
def run_progress(enabled: bool, total_s: float) -> Iterator[Callable[[float], None] | None]:
    """A progress bar on stderr (terminals only) fed with the simulated time."""
    if not enabled:  # a short run: rich's progress bar is not even loaded
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    columns = (
        TextColumn("simulating"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} simulated s"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("run", total=total_s)
        yield lambda t: bar.update(task, completed=t)


@contextmanager
def count_progress(total: int, what: str) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on stderr (terminals only), advanced once per finished task."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal or total < 2:
        yield None
        return
    columns = (
        TextColumn(what),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("work", total=total)
        yield lambda n: bar.advance(task, n)


@contextmanager
def status(text: str) -> Iterator[Callable[[int], None]]:
    """A spinner with ``text`` on stderr while a step runs (terminals only); yields a
    callback that shows a count of runs done beside it (``(34 runs)``)."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        yield lambda _n: None
        return
    with console.status(text) as shown:
        yield lambda n: shown.update(f"{text} ({n:,} run{'s' if n != 1 else ''})")


#: A progress callback: called with a count (runs planned, or runs finished).
_Counter = Callable[[int], None]


@contextmanager
def search_progress() -> Iterator[tuple[_Counter | None, _Counter | None]]:
    """A progress bar on stderr (terminals only) for a search whose work is planned as it
    goes: ``plan`` changes the total, ``advance`` counts finished runs. The total starts
    at every design's first run up to the cost limit, so the time left is at most that
    and shrinks when the search stops early."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None, None
        return
    columns = (
        TextColumn("searching"),
        BarColumn(),
        TextColumn("{task.completed:,.0f}/{task.total:,.0f} runs"),
        TimeElapsedColumn(),
        TextColumn("elapsed, at most"),
        TimeRemainingColumn(),
        TextColumn("left"),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("search", total=0)
        planned = [0]

        def plan(n: int) -> None:
            planned[0] += n
            bar.update(task, total=planned[0])

        yield (lambda n: bar.advance(task, n)), plan
